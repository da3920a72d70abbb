//! Recovery files: what a chat could not save, kept where the user can
//! find it and put back with `glrs-sessions import FILE`.
//!
//! When a session's write fails and the last attempt before leaving it
//! fails too (a full disk, an I/O error), the unsaved entries are written to
//! `<data>/recovery/`, else the temporary folder, else the current folder:
//! the data folder's disk may be the one that is full. A recovery file is a
//! session file (schema 2) holding only the unsaved entries, with
//! `"recoveryOf"` naming the session, so it parses with the same code.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Append, SessionFile, Store, format};
use crate::error::StoreError;
use crate::id::SessionId;
use crate::paths::ensure_private_dir;

/// The header field that marks a recovery file and names its session.
pub const MARK: &str = "recoveryOf";

/// No recovery file could be written: every folder tried, with why.
#[derive(Debug, thiserror::Error)]
#[error("{}", folders_tried(.tried))]
pub struct NoRecoveryFile {
    /// The folders tried, in order, and how writing in each failed.
    pub tried: Vec<(PathBuf, std::io::Error)>,
}

/// `FOLDER: why; FOLDER: why`, in the order tried.
fn folders_tried(tried: &[(PathBuf, std::io::Error)]) -> String {
    let each: Vec<String> = tried.iter().map(|(dir, e)| format!("{}: {e}", dir.display())).collect();
    each.join("; ")
}

/// The header fields a recovery file carries over to its session.
const CARRIED: [&str; 3] = ["model", "key", "contextTokens"];

impl Store {
    /// Write `entries` of session `id` to a new recovery file; returns its
    /// path, or every place tried with why it failed.
    pub fn write_recovery(
        &self,
        id: &SessionId,
        cwd: &str,
        header: &[(&str, Value)],
        entries: &[Box<RawValue>],
    ) -> Result<PathBuf, NoRecoveryFile> {
        let now = crate::time::now();
        let mut file = SessionFile::new(id.as_str(), cwd, &now);
        for (name, value) in header {
            file.set(name, value.clone());
        }
        file.set(MARK, Value::from(id.as_str()));
        file.events = entries.to_vec();
        let bytes = file.to_bytes();
        let name = format!("glrs-recovery-{id}-{}.json", now.replace([':', '.'], "-"));
        let places = [self.paths.data.join("recovery"), std::env::temp_dir(), PathBuf::from(".")];
        let mut tried = Vec::new();
        for dir in places {
            match write_new(&dir, &name, &bytes) {
                Ok(path) => return Ok(std::path::absolute(&path).unwrap_or(path)),
                Err(e) => tried.push((dir, e)),
            }
        }
        Err(NoRecoveryFile { tried })
    }

    /// Append a recovery file's entries to its session (created when it was
    /// never saved). Refused when they are there already. Returns the
    /// session and how many entries were added.
    pub fn import_recovery(&self, path: &Path) -> Result<(SessionId, usize), StoreError> {
        let bytes = std::fs::read(path).map_err(|e| StoreError::io(path, "read", e))?;
        let file: SessionFile = format::parse(&bytes, path, None)?;
        let not_recovery =
            || StoreError::Corrupt { path: path.to_path_buf(), detail: format!("not a recovery file (no {MARK:?})") };
        let id = SessionId::parse(file.get_str(MARK).ok_or_else(not_recovery)?)?;
        let count = file.events.len();
        let Some(first) = file.events.first() else { return Ok((id, 0)) };
        if self.locate(&id).is_none() {
            self.create_as(&id, file.get_str("cwd").unwrap_or(""))?;
        }
        let mut change = Append::new();
        for name in CARRIED {
            if let Some(value) = file.get(name) {
                change = change.set(name, value.clone());
            }
        }
        for raw in &file.events {
            change = change.raw_entry(raw.clone());
        }
        let first = first.get().to_string();
        self.update(&id, |session| {
            // Entries carry their time to the millisecond: one already in
            // the session means this file was imported before.
            if session.events.iter().any(|e| e.get() == first) {
                return Err(StoreError::Conflict {
                    path: path.to_path_buf(),
                    detail: format!("its entries are in session {id} already (imported before?)"),
                });
            }
            change.apply(session)
        })?;
        Ok((id, count))
    }
}

/// Create `dir/name` (0600, never replacing a file) with `bytes`, synced.
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    ensure_private_dir(dir)?;
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    // fsync, where the session's own writes sync their data with fdatasync:
    // a recovery then still works when the fault that broke the session's
    // write is in that call (and tests can inject one without the other).
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Entry;

    #[test]
    fn a_recovery_file_imports_once_into_its_session_or_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Store::new(crate::Paths::from_vars(Some(dir.path().into()), None, None, Some(dir.path().into())).unwrap());
        let id = SessionId::parse("3f9a1c2b").unwrap();
        let entry = Entry::User { at: crate::time::now(), text: "remember 4217".into(), steer: false, internal: None };
        let path =
            store.write_recovery(&id, "/w", &[("model", Value::from("openai/m"))], &[entry.to_raw().unwrap()]).unwrap();
        assert!(path.starts_with(dir.path().join("glrs/recovery")), "{}", path.display());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // The session was never saved: importing creates it.
        assert_eq!(store.import_recovery(&path).unwrap(), (id.clone(), 1));
        let file = store.read(&store.locate(&id).unwrap()).unwrap().file;
        assert_eq!(file.get_str("model"), Some("openai/m"));
        assert_eq!(file.get_str("cwd"), Some("/w"));
        assert!(file.events[0].get().contains("remember 4217"));
        assert!(file.get(MARK).is_none());
        // A second import changes nothing.
        let again = store.import_recovery(&path).unwrap_err();
        assert!(again.to_string().contains("already"), "{again}");
        assert_eq!(store.read(&store.locate(&id).unwrap()).unwrap().file.events.len(), 1);
        // A session file is not a recovery file.
        let err = store.import_recovery(&store.session_path(&id)).unwrap_err();
        assert!(err.to_string().contains("not a recovery file"), "{err}");
    }
}
