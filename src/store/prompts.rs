//! Prompt history (`<sessions>/prompts.json`, SPEC section 2): every prompt
//! typed in any session, oldest first, capped. The REPL's Up arrow reads
//! it; it is written with the same atomic, locked protocol as sessions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Store;
use crate::error::StoreError;

/// How many prompts are kept unless the caller says otherwise.
pub const DEFAULT_CAP: usize = 1000;

/// One remembered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// What was sent.
    pub text: String,
    /// When.
    pub at: String,
    /// The session it was sent in.
    pub session: String,
    /// The working folder it was sent from.
    pub cwd: String,
    /// Fields a newer version added, kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Store {
    /// All remembered prompts, oldest first; none when the file is missing.
    pub fn prompts(&self) -> Result<Vec<Prompt>, StoreError> {
        self.read_json_file("prompts.json", "a prompt history")
    }

    /// Remember a prompt, keeping the newest `cap`.
    pub fn add_prompt(&self, prompt: Prompt, cap: usize) -> Result<(), StoreError> {
        self.update_json_file("prompts.json", "a prompt history", |prompts: &mut Vec<Prompt>| {
            prompts.push(prompt);
            let drop_count = prompts.len().saturating_sub(cap);
            prompts.drain(..drop_count);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Paths;

    #[test]
    fn prompts_are_capped_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let paths =
            Paths::from_vars(Some(dir.path().to_path_buf()), None, None, Some(dir.path().to_path_buf())).unwrap();
        let store = Store::new(paths);
        assert!(store.prompts().unwrap().is_empty());
        for i in 0..5 {
            let p = Prompt {
                text: format!("p{i}"),
                at: "t".into(),
                session: "3f9a1c2b".into(),
                cwd: "/".into(),
                extra: Map::new(),
            };
            store.add_prompt(p, 3).unwrap();
        }
        let texts: Vec<String> = store.prompts().unwrap().into_iter().map(|p| p.text).collect();
        assert_eq!(texts, ["p2", "p3", "p4"]);
        std::fs::write(store.paths.sessions.join("prompts.json"), "[{").unwrap();
        let err = store.prompts().unwrap_err().to_string();
        assert!(err.contains("prompts.json"), "{err}");
    }
}
