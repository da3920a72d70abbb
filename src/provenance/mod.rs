//! Provenance (SPEC 24): what a session changed, which session wrote a
//! line, and which sessions changed a path, answered from the checkpoints
//! every mutating step leaves (SPEC 19) with git's own diff, blame and log
//! over them: no hand-written diff, and no repository of the user's needed.
//!
//! `steps` reads a session's steps from its entries; `history` lays every
//! session's steps of a workspace out as one line of commits in a scratch
//! repository borrowing the shadow's objects; `blame`, `log` and `diff`
//! ask git about them.

pub mod blame;
pub mod diff;
pub mod history;
pub mod log;
pub mod steps;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::SessionId;
use crate::store::{Located, Store};
use steps::Step;

/// Why a question about provenance cannot be answered.
#[derive(Debug, Error)]
pub enum ProvenanceError {
    /// The path is in no workspace any session checkpointed.
    #[error(
        "{0}: no session recorded checkpoints of a folder holding it (glrs-sessions checkpoints ID lists a session's)"
    )]
    NoWorkspace(PathBuf),
    /// The file is not there.
    #[error("{path}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file holds a NUL: lines mean nothing in it.
    #[error("{0}: a binary file (it holds a NUL byte): blame attributes lines of text")]
    Binary(PathBuf),
    /// No git to ask.
    #[error("git is not on PATH: provenance is read from checkpoints with git")]
    NoGit,
    /// git failed.
    #[error("{0}")]
    Git(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::error::StoreError),
}

/// A workspace with checkpoints: its folder and its shadow repository.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The folder recorded.
    pub root: PathBuf,
    /// Its shadow repository.
    pub shadow: PathBuf,
}

/// The workspace with checkpoints nearest above `path` (resolved).
pub fn workspace_of(data: &Path, path: &Path) -> Result<Workspace, ProvenanceError> {
    let real = resolved(path);
    real.ancestors()
        .map(|dir| (dir, crate::checkpoint::shadow_of(data, dir)))
        .find(|(_, shadow)| shadow.join("refs/glrs").is_dir())
        .map(|(root, shadow)| Workspace { root: root.to_path_buf(), shadow })
        .ok_or_else(|| ProvenanceError::NoWorkspace(path.to_path_buf()))
}

/// `path` made absolute against the current folder, its links resolved
/// (as the checkpoints name the workspace).
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
    };
    crate::sandbox::real::real_path(&absolute).unwrap_or(absolute)
}

/// Every session's steps in a workspace, in time order.
#[derive(Debug, Default)]
pub struct Gathered {
    /// The steps, oldest first.
    pub steps: Vec<Step>,
    /// The (before, after) of steps a files rewind undid.
    pub undone: HashSet<(String, String)>,
    /// The spans of time (milliseconds, first and last checkpoint) of
    /// sessions removed from the workspace with their checkpoints.
    pub removed: Vec<(i64, i64)>,
}

/// The steps of every session with checkpoints in `workspace` (those
/// with a ref in its shadow), oldest first.
pub fn gather(store: &Store, workspace: &Workspace) -> Result<Gathered, ProvenanceError> {
    let mut all = Gathered::default();
    let Ok(refs) = std::fs::read_dir(workspace.shadow.join("refs/glrs")) else { return Ok(all) };
    for entry in refs.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|n| SessionId::parse(n).ok()) else { continue };
        let Some(at) = store.locate(&id) else { continue };
        let read = read_session(store, &at)?;
        all.steps.extend(read.steps);
        all.undone.extend(read.undone);
    }
    all.removed = removed_spans(workspace);
    all.steps.sort_by_cached_key(|s| (s.at.parse::<jiff::Timestamp>().ok(), s.session.as_str().to_string(), s.turn));
    Ok(all)
}

/// The spans noted by `checkpoint::lifecycle::remember_removed` of
/// sessions whose checkpoints are gone (one whose ref is still there was
/// not removed after all).
fn removed_spans(workspace: &Workspace) -> Vec<(i64, i64)> {
    let path = workspace.shadow.join(crate::checkpoint::lifecycle::REMOVED);
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let millis = |t: &str| t.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond());
    text.lines()
        .filter_map(|line| {
            let mut cells = line.split('\t');
            let (id, first, last) = (cells.next()?, cells.next()?, cells.next()?);
            let still_there =
                SessionId::parse(id).is_ok_and(|id| workspace.shadow.join(crate::checkpoint::ref_name(&id)).is_file());
            if still_there { None } else { Some((millis(first)?, millis(last)?)) }
        })
        .collect()
}

/// One session's steps and what its rewinds undid.
pub fn read_session(store: &Store, at: &Located) -> Result<steps::Read, ProvenanceError> {
    let file = store.read(at)?.file;
    let own_from = file
        .get("parent")
        .and_then(|p| p.get("entry"))
        .and_then(serde_json::Value::as_u64)
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(steps::read(&at.id, &file.events, own_from))
}

/// The `git` program, or why there is none.
pub fn git_program() -> Result<PathBuf, ProvenanceError> {
    crate::checkpoint::find_git().ok_or(ProvenanceError::NoGit)
}
