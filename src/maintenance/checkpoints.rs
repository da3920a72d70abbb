//! Checkpoints in cleanup (SPEC 10, 19): the shadow repositories count
//! against `maxDiskBytes`, a removed session's checkpoints go with it, and
//! a shadow no existing session has checkpoints in is an orphan.

use std::collections::HashSet;
use std::path::Path;
use std::time::SystemTime;

use super::{Action, LEFTOVER_AGE, Reason, Row, is_older, newest};
use crate::checkpoint::lifecycle::{Shadow, shadows};

/// The shadows under `data`, once per plan.
pub(super) fn all(data: &Path) -> Vec<Shadow> {
    shadows(data)
}

/// Their bytes.
pub(super) fn total(shadows: &[Shadow]) -> u64 {
    shadows.iter().map(|s| s.bytes).sum()
}

/// What removing session `id` frees of them: the shadows it alone has
/// checkpoints in (shared ones stay for the other sessions).
pub(super) fn freed_by(shadows: &[Shadow], id: &str) -> u64 {
    shadows.iter().filter(|s| !s.sessions.is_empty() && s.sessions.iter().all(|x| x == id)).map(|s| s.bytes).sum()
}

/// Shadows no existing session has checkpoints in, untouched for an hour
/// (a chat may be making its first).
pub(super) fn orphans(shadows: &[Shadow], existing: &HashSet<String>, now: SystemTime) -> Vec<Row> {
    shadows
        .iter()
        .filter(|s| s.sessions.iter().all(|id| !existing.contains(id)))
        .filter(|s| is_older(newest(&s.dir), now, Some(LEFTOVER_AGE)))
        .map(|s| Row {
            action: Action::Remove,
            reason: Reason::OrphanCheckpoints,
            kept_by: None,
            session: None,
            bytes: s.bytes,
            path: s.dir.clone(),
        })
        .collect()
}

/// Remove an orphan shadow: only a folder directly in `<data>/checkpoints`.
pub(super) fn remove_orphan(data: &Path, path: &Path) -> Result<(), String> {
    let root = crate::checkpoint::root(data);
    let direct = path.parent().is_some_and(|p| p == root);
    let plain_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !direct || !plain_dir {
        return Err(format!("{} is not a shadow repository of {}; left alone", path.display(), root.display()));
    }
    std::fs::remove_dir_all(path).map_err(|e| format!("cannot remove {}: {e}", path.display()))
}
