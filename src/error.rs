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

/// What can go wrong with a session, by kind. Its text is the error's own;
/// an I/O failure's cause is its `source`, shown after it by whoever prints
/// the chain (`cli::finish`, [`Report`]), never twice.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Text given as an id is not one (not hex, too short, `/`, `..`).
    #[error("invalid session id {input:?}: {reason}")]
    InvalidId {
        /// The text given.
        input: String,
        /// Why it is not an id.
        reason: &'static str,
    },
    /// No session has this id or prefix.
    #[error("no session {id}")]
    NotFound {
        /// The id or prefix given.
        id: String,
    },
    /// The prefix matches more than one session.
    #[error("session id prefix {prefix} is ambiguous: it matches {}", .candidates.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The ids it matches.
        candidates: Vec<String>,
    },
    /// Another program holds the session open.
    #[error("{}", busy(.id, *.pid, *.by))]
    Busy {
        /// The session.
        id: String,
        /// The holder's pid, when known.
        pid: Option<u32>,
        /// Who holds it: a chat, or a compaction's memory flush.
        by: Holder,
    },
    /// The file is not a valid session file.
    #[error("{}: not a valid session file: {detail}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The file's schema is newer than this version understands.
    #[error(
        "{}: schema {schema} is newer than this glrs understands (2); upgrade glrs to use it (the file was not changed)",
        .path.display()
    )]
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// Its `schema` value.
        schema: String,
    },
    /// The file changed under a writer in a way it cannot merge (replaced
    /// or shortened while a compaction was being written).
    #[error("{}: {detail}", .path.display())]
    Conflict {
        /// The file.
        path: PathBuf,
        /// What changed.
        detail: String,
    },
    /// The store will not remove or change this file: it is not what the
    /// caller took it for (a leftover that is not one, artifacts of a
    /// session that exists).
    #[error("{}: {detail}", .path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why it is refused.
        detail: String,
    },
    /// A lock stayed held by another process for longer than a writer
    /// waits (a process that took `<id>.lock` and keeps it): the write
    /// was not made, rather than waiting for ever.
    #[error(
        "{}: another process has held this lock for over {secs} s, so nothing was written \
         (the lock of {what}; see who holds it with: fuser {})",
        .path.display(),
        .path.display()
    )]
    LockHeld {
        /// The lock file.
        path: PathBuf,
        /// What it locks (`session 3f9a1c2b`).
        what: String,
        /// How long it was waited for.
        secs: u64,
    },
    /// A legacy session cannot be changed in place.
    #[error("session {id} is in the legacy glorious folder, which glrs never changes; cannot {what} it")]
    Legacy {
        /// The session.
        id: String,
        /// What was refused (`remove`, …).
        what: &'static str,
    },
    /// A read or write failed.
    #[error("cannot {action} {}", .path.display())]
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
    /// This error with its causes, for showing it on its own.
    pub fn report(&self) -> Report<'_> {
        Report(self)
    }

    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Self {
        StoreError::Io { path: path.into(), action, source }
    }
}

/// A busy session's text: who holds it, and what to do.
fn busy(id: &str, pid: Option<u32>, by: Holder) -> String {
    let pid = pid.map_or(String::new(), |p| format!(" (pid {p})"));
    match by {
        Holder::Compaction => format!(
            "session {id} is being compacted{pid}: the memory flush before the compaction holds it; try again when it is done"
        ),
        Holder::Chat => format!("session {id} is open in another program{pid}"),
    }
}

/// An error and its causes, `: `-joined: what a person reads when an error
/// is shown on its own rather than through `cli::finish` (a warning, a
/// notice, an `error` entry). Each error says only its own part.
pub struct Report<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}
