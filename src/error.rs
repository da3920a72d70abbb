//! The store's typed errors: the cases a caller must tell apart (busy, not
//! found, corrupt, unsupported) each carry the id or file involved, so a
//! message never leaves the user guessing which session is meant.

use std::fmt;
use std::path::PathBuf;

/// Who holds a session open: a chat, or `glrs-compact` running the memory
/// flush before it compacts. Written after the pid in the open lock file,
/// so a refusal can say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A chat (the REPL or one-shot mode).
    Chat,
    /// `glrs-compact`, running the memory flush before it compacts.
    Compaction,
}

/// What can go wrong with a session, by kind.
#[derive(Debug)]
pub enum StoreError {
    /// Text given as an id is not one (not hex, too short, `/`, `..`).
    InvalidId {
        /// The text given.
        input: String,
        /// Why it is not an id.
        reason: &'static str,
    },
    /// No session has this id or prefix.
    NotFound {
        /// The id or prefix given.
        id: String,
    },
    /// The prefix matches more than one session.
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The ids it matches.
        candidates: Vec<String>,
    },
    /// Another program holds the session open.
    Busy {
        /// The session.
        id: String,
        /// The holder's pid, when known.
        pid: Option<u32>,
        /// Who holds it: a chat, or a compaction's memory flush.
        by: Holder,
    },
    /// The file is not a valid session file.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The file's schema is newer than this version understands.
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// Its `schema` value.
        schema: String,
    },
    /// The file changed under a writer in a way it cannot merge (replaced
    /// or shortened while a compaction was being written).
    Conflict {
        /// The file.
        path: PathBuf,
        /// What changed.
        detail: String,
    },
    /// The store will not remove or change this file: it is not what the
    /// caller took it for (a leftover that is not one, artifacts of a
    /// session that exists).
    Refused {
        /// The file.
        path: PathBuf,
        /// Why it is refused.
        detail: String,
    },
    /// A legacy session cannot be changed in place.
    Legacy {
        /// The session.
        id: String,
        /// What was refused (`remove`, …).
        what: &'static str,
    },
    /// A read or write failed.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done (`read`, `write`, …).
        action: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Self {
        StoreError::Io { path: path.into(), action, source }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::InvalidId { input, reason } => {
                write!(f, "invalid session id {input:?}: {reason}")
            }
            StoreError::NotFound { id } => write!(f, "no session {id}"),
            StoreError::Conflict { path, detail } | StoreError::Refused { path, detail } => {
                write!(f, "{}: {detail}", path.display())
            }
            StoreError::Ambiguous { prefix, candidates } => {
                write!(f, "session id prefix {prefix} is ambiguous: it matches {}", candidates.join(", "))
            }
            StoreError::Busy { id, pid, by: Holder::Compaction } => {
                let pid = pid.map_or(String::new(), |p| format!(" (pid {p})"));
                write!(
                    f,
                    "session {id} is being compacted{pid}: the memory flush before the compaction holds it; \
                     try again when it is done"
                )
            }
            StoreError::Busy { id, pid, .. } => match pid {
                Some(pid) => write!(f, "session {id} is open in another program (pid {pid})"),
                None => write!(f, "session {id} is open in another program"),
            },
            StoreError::Corrupt { path, detail } => {
                write!(f, "{}: not a valid session file: {detail}", path.display())
            }
            StoreError::UnsupportedSchema { path, schema } => write!(
                f,
                "{}: schema {schema} is newer than this glrs understands (2); \
                 upgrade glrs to use it (the file was not changed)",
                path.display()
            ),
            StoreError::Legacy { id, what } => {
                write!(f, "session {id} is in the legacy glorious folder, which glrs never changes; cannot {what} it")
            }
            StoreError::Io { path, action, source } => {
                write!(f, "cannot {action} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
