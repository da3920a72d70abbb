//! Checkpoints of the workspace (SPEC 19): before the first mutating tool
//! call of a model step, the workspace (the session's cwd, or the root of
//! the git work tree it is in) is recorded as a commit in a shadow
//! repository, `<data>/checkpoints/<workspace key>/`, made with the `git`
//! program. The user's own `.git` is never touched, and a workspace need
//! not be a repository at all.
//!
//! Each session keeps its own index in the shadow (`glrs-index/<id>`), so an
//! unchanged workspace costs what `git status` does (a stat per file), and
//! its own ref (`refs/glrs/<id>`, the newest checkpoint; older ones are its
//! ancestors), so several sessions can share one workspace's shadow and
//! removing one session's checkpoints leaves the others' reachable.
//! Refs are loose files, never packed, so forgetting a session needs no
//! git (`lifecycle`).

pub mod git;
mod index;
pub mod lifecycle;
pub mod record;
pub mod restore;
pub mod snapshot;
#[cfg(test)]
mod tests;
mod watch;

use std::path::{Path, PathBuf};

pub use git::find_git;
pub use record::{Recorded, Tracker};
pub use restore::{Change, ChangeKind, changes};

use crate::SessionId;

/// What decides what a checkpoint keeps (`checkpoints.*`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `checkpoints.enabled`.
    pub enabled: bool,
    /// `checkpoints.exclude`: gitignore-style patterns.
    pub exclude: Vec<String>,
    /// `checkpoints.maxFileBytes`.
    pub max_file_bytes: u64,
}

impl Settings {
    /// The settings of `config` (already checked when it was loaded).
    pub fn from_config(config: &crate::config::Config) -> Settings {
        let c = &config.checkpoints;
        Settings {
            enabled: c.enabled(),
            exclude: c.exclude.clone(),
            max_file_bytes: c.max_file_bytes().unwrap_or(crate::config::DEFAULT_MAX_FILE_BYTES),
        }
    }
}

/// The folder of every shadow repository: `<data>/checkpoints`.
pub fn root(data: &Path) -> PathBuf {
    data.join("checkpoints")
}

/// The folder a session in `cwd` records: the root of the git work tree
/// `cwd` is in (the nearest folder above with a `.git`), else `cwd`.
pub fn workspace_of(cwd: &Path) -> PathBuf {
    let start = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    start.ancestors().find(|dir| dir.join(".git").exists()).map_or(start.clone(), Path::to_path_buf)
}

/// The name of a workspace's shadow repository: its folder's name (for a
/// person reading the folder) and a hash of its whole path (FNV-1a: stable
/// across versions and machines, unlike std's hasher).
pub fn workspace_key(workspace: &Path) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in workspace.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let name: String = workspace
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
                .take(32)
                .collect()
        })
        .unwrap_or_else(|| "root".into());
    format!("{name}-{hash:016x}")
}

/// The shadow repository of `workspace`.
pub fn shadow_of(data: &Path, workspace: &Path) -> PathBuf {
    root(data).join(workspace_key(workspace))
}

/// The ref holding a session's newest checkpoint, relative to the shadow.
pub fn ref_name(id: &SessionId) -> String {
    format!("refs/glrs/{id}")
}

/// A session's index in a shadow.
pub fn index_path(shadow: &Path, id: &SessionId) -> PathBuf {
    shadow.join("glrs-index").join(id.as_str())
}

/// Whether `text` is a commit hash (SHA-1 or SHA-256, lowercase hex): what
/// a `checkpoint` entry read from a file must hold before git is handed it.
pub fn is_hash(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Why checkpoints cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `checkpoints.enabled: false`.
    Off,
    /// No `git` on PATH.
    NoGit,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::Off => f.write_str("checkpoints are off (checkpoints.enabled: false)"),
            Unavailable::NoGit => f.write_str(
                "git is not on PATH: no checkpoints are recorded, so rewinding files is off (the conversation can still be rewound)",
            ),
        }
    }
}
