//! Small JSON files of the sessions folder (`prompts.json`, `keys.json`):
//! read whole, and changed with the session protocol (their own lock file,
//! re-read, change, atomic replace).

use super::WriteLock;
use super::{Store, lock};
use crate::error::StoreError;
use crate::paths::ensure_private_dir;

/// A small JSON file of the sessions folder (`prompts.json`, `keys.json`):
/// read whole, and changed only by [`Store::update_json_file`].
impl Store {
    /// Read `<sessions>/<name>`; the default value when it does not exist. A
    /// file that does not parse is an error naming it (`what` says what it
    /// should be), never silently replaced: it may be someone's only copy.
    pub fn read_json_file<T: serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
        what: &str,
    ) -> Result<T, StoreError> {
        let path = self.paths.sessions.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::Corrupt { path, detail: format!("not {what}: {e}") }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(StoreError::io(path, "read", e)),
        }
    }

    /// Change `<sessions>/<name>` with the session protocol: its own lock
    /// file (`<stem>.lock`), re-read, `change`, atomic replace.
    pub fn update_json_file<T: serde::Serialize + serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
        what: &str,
        change: impl FnOnce(&mut T),
    ) -> Result<(), StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        let stem = name.strip_suffix(".json").unwrap_or(name);
        let _lock = WriteLock::acquire(&self.paths.sessions.join(format!("{stem}.lock")))?;
        let mut value: T = self.read_json_file(name, what)?;
        change(&mut value);
        // History and keys: a failed folder sync after the rename is not
        // worth a message (the change is in place for every reader).
        lock::write_atomic(&self.paths.sessions.join(name), true, |w| {
            serde_json::to_writer_pretty(&mut *w, &value).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })?;
        Ok(())
    }
}
