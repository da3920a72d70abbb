//! Prompt history (`<sessions>/prompts.json`, SPEC section 2): every prompt
//! typed in any session, oldest first, capped. The REPL's Up arrow reads
//! it; it is written with the same atomic, locked protocol as sessions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Store;
use crate::error::StoreError;

/// How many prompts are kept unless the caller says otherwise.
pub const DEFAULT_CAP: usize = 1000;

/// The most of one prompt's text kept in the history (100 KB): a pasted
/// 50 MB prompt would otherwise make every later write of the file slow.
/// The session keeps the whole prompt; the history keeps its start.
pub const MAX_PROMPT_BYTES: usize = 100 << 10;

/// One remembered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// What was sent.
    pub text: String,
    /// When.
    pub at: String,
    /// The session it was sent in.
    pub session: String,
    /// The working folder it was sent from.
    pub cwd: String,
    /// The whole prompt's size in bytes, when `text` is only its start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_from: Option<u64>,
    /// Fields a newer version added, kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Store {
    /// All remembered prompts, oldest first; none when the file is missing.
    pub fn prompts(&self) -> Result<Vec<Prompt>, StoreError> {
        self.read_json_file("prompts.json", "a prompt history")
    }

    /// Remember a prompt, keeping the newest `cap`, each at most
    /// [`MAX_PROMPT_BYTES`] (older oversized ones are cut on this rewrite).
    pub fn add_prompt(&self, prompt: Prompt, cap: usize) -> Result<(), StoreError> {
        self.update_json_file("prompts.json", "a prompt history", |prompts: &mut Vec<Prompt>| {
            prompts.push(prompt);
            let drop_count = prompts.len().saturating_sub(cap);
            prompts.drain(..drop_count);
            prompts.iter_mut().for_each(Prompt::cap);
        })
    }
}

impl Prompt {
    /// Cut `text` to [`MAX_PROMPT_BYTES`] at a character boundary, noting
    /// the whole size.
    fn cap(&mut self) {
        if self.text.len() <= MAX_PROMPT_BYTES {
            return;
        }
        let whole = self.text.len() as u64;
        let mut end = MAX_PROMPT_BYTES;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.text.truncate(end);
        self.truncated_from.get_or_insert(whole);
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
                truncated_from: None,
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

    #[test]
    fn a_huge_prompt_is_kept_only_in_part() {
        let dir = tempfile::tempdir().unwrap();
        let paths =
            Paths::from_vars(Some(dir.path().to_path_buf()), None, None, Some(dir.path().to_path_buf())).unwrap();
        let store = Store::new(paths);
        // An old history with a 5 MB prompt (from before the cap), then a 3 MB one of 'é's.
        let old = serde_json::json!([{"text": "x".repeat(5 << 20), "at": "t", "session": "s", "cwd": "/"}]);
        std::fs::create_dir_all(&store.paths.sessions).unwrap();
        std::fs::write(store.paths.sessions.join("prompts.json"), old.to_string()).unwrap();
        let big = Prompt {
            text: "é".repeat(3 << 19),
            at: "t".into(),
            session: "s".into(),
            cwd: "/".into(),
            truncated_from: None,
            extra: Map::new(),
        };
        store.add_prompt(big, 10).unwrap();
        let prompts = store.prompts().unwrap();
        assert_eq!(prompts[0].truncated_from, Some(5 << 20));
        assert_eq!(prompts[1].truncated_from, Some(3 << 20));
        assert!(prompts.iter().all(|p| p.text.len() <= MAX_PROMPT_BYTES && p.text.len() > MAX_PROMPT_BYTES - 4));
        let size = std::fs::metadata(store.paths.sessions.join("prompts.json")).unwrap().len();
        assert!(size < 3 * MAX_PROMPT_BYTES as u64, "{size} bytes");
    }
}
