//! Running the config's hooks (SPEC 15) for this agent's session: the
//! scene (id, file, cwd) comes from the agent; problems go to the caller.

use std::path::Path;

use super::Agent;
use crate::hooks::{self, Event, Outcome, Payload, Scene};

impl Agent {
    /// True when a hook is configured for `event` (its fields, which may
    /// hold a whole reply, are built only then).
    pub fn hooked(&self, event: Event) -> bool {
        !self.config.hooks.of(event).is_empty()
    }

    /// Run the hooks of `payload`'s event, telling them the payload.
    pub async fn hook(&self, payload: Payload) -> Outcome {
        if self.config.hooks.of(payload.event()).is_empty() {
            return Outcome::default();
        }
        let file = self.log.store.session_path(&self.log.id);
        let scene = Scene {
            session_id: self.log.id.as_str(),
            session_file: &file,
            cwd: Path::new(&self.log.cwd),
            redactor: &self.redactor,
        };
        hooks::run(&self.config.hooks, payload, &scene, None).await
    }
}
