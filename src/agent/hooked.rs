//! Running the config's hooks (SPEC 15) for this agent's session: the
//! scene (id, file, cwd) comes from the agent; problems go to the caller.

use std::path::Path;

use serde_json::{Map, Value};

use super::Agent;
use crate::hooks::{self, Event, Outcome, Scene};

impl Agent {
    /// True when a hook is configured for `event` (its fields, which may
    /// hold a whole reply, are built only then).
    pub fn hooked(&self, event: Event) -> bool {
        !self.config.hooks.of(event).is_empty()
    }

    /// Run the hooks of `event` with its `fields`; `tool` is the tool name
    /// and rule subject matchers are tested against.
    pub async fn hook(&self, event: Event, fields: Map<String, Value>, tool: Option<(&str, Option<&str>)>) -> Outcome {
        if self.config.hooks.of(event).is_empty() {
            return Outcome::default();
        }
        let file = self.log.store.session_path(&self.log.id);
        let scene = Scene {
            session_id: self.log.id.as_str(),
            session_file: &file,
            cwd: Path::new(&self.log.cwd),
            redactor: &self.redactor,
        };
        hooks::run(&self.config.hooks, event, &scene, fields, tool).await
    }
}

/// The fields of an event, as a JSON object.
pub fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
