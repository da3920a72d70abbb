//! Removing what cleanup found that is not a session: an orphan artifacts
//! folder and a leftover file (the temporary file of an interrupted write,
//! the lock file of a session that is gone). Only the store removes files
//! of the store, and it checks each is what it is said to be.

use std::path::Path;

use super::{OpenLock, Store};
use crate::SessionId;
use crate::error::StoreError;

impl Store {
    /// Remove the artifacts folder of a session that no longer exists.
    pub fn remove_orphan_artifacts(&self, id: &SessionId) -> Result<(), StoreError> {
        let dir = self.paths.artifacts_of(id);
        if self.session_path(id).is_file() {
            return Err(StoreError::Refused {
                path: dir,
                detail: format!("session {id} exists; its artifacts are not orphans"),
            });
        }
        std::fs::remove_dir_all(&dir).map_err(|e| StoreError::io(&dir, "remove", e))
    }

    /// Remove a leftover file: a temporary file (`.NAME.tmp`) in the
    /// sessions folder or an artifacts folder, or the lock file of a session
    /// that no longer exists and that nobody holds.
    pub fn remove_leftover(&self, path: &Path) -> Result<(), StoreError> {
        let refused = |detail: &str| StoreError::Refused { path: path.to_path_buf(), detail: detail.to_string() };
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| refused("not a file name"))?;
        let dir = path.parent().ok_or_else(|| refused("not in the store"))?;
        let in_sessions = dir == self.paths.sessions;
        let in_artifacts = dir.parent() == Some(self.paths.artifacts.as_path());
        let temp = name.starts_with('.') && name.ends_with(".tmp");
        let lock_of = name
            .strip_suffix(".lock")
            .or_else(|| name.strip_suffix(".open"))
            .or_else(|| name.strip_suffix(".journal"))
            .or_else(|| name.strip_suffix(".compact"))
            .or_else(|| name.strip_suffix(".scan"));
        let gone_lock = in_sessions
            && lock_of.and_then(|stem| SessionId::parse(stem).ok()).is_some_and(|id| self.locate(&id).is_none())
            && OpenLock::holder(path).ok().flatten().is_none();
        if !((temp && (in_sessions || in_artifacts)) || gone_lock) {
            return Err(refused("not a leftover of the store; left alone"));
        }
        if temp {
            return std::fs::remove_file(path).map_err(|e| StoreError::io(path, "remove", e));
        }
        // Removed while holding its lock, so nobody who takes it meanwhile
        // is left holding a file that no longer has a name.
        if !super::lock::remove_unheld(path)? {
            return Err(refused("held by another program, or gone; left alone"));
        }
        Ok(())
    }
}
