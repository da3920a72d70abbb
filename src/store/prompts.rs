//! Prompt history (`<sessions>/prompts.json`, SPEC section 2): every prompt
//! typed in any session, oldest first, capped. The REPL's Up arrow reads
//! it; it is written with the same atomic, locked protocol as sessions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Store, lock};
use crate::error::StoreError;
use crate::paths::ensure_private_dir;

/// How many prompts are kept unless the caller says otherwise.
pub const DEFAULT_CAP: usize = 1000;

/// One remembered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    pub text: String,
    pub at: String,
    pub session: String,
    pub cwd: String,
    /// Fields a newer version added, kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Store {
    fn prompts_path(&self) -> std::path::PathBuf {
        self.paths.sessions.join("prompts.json")
    }

    /// All remembered prompts, oldest first; none when the file is missing.
    pub fn prompts(&self) -> Result<Vec<Prompt>, StoreError> {
        let path = self.prompts_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::Corrupt { path, detail: format!("not a prompt history: {e}") }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(StoreError::io(path, "read", e)),
        }
    }

    /// Remember a prompt, keeping the newest `cap`. A corrupt history is an
    /// error, not silently replaced: it may be someone's only copy.
    pub fn add_prompt(&self, prompt: Prompt, cap: usize) -> Result<(), StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        let _lock = lock::WriteLock::acquire(&self.paths.sessions.join("prompts.lock"))?;
        let mut prompts = self.prompts()?;
        prompts.push(prompt);
        let drop_count = prompts.len().saturating_sub(cap);
        prompts.drain(..drop_count);
        lock::write_atomic(&self.prompts_path(), true, |w| {
            serde_json::to_writer_pretty(&mut *w, &prompts).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })?;
        Ok(())
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
