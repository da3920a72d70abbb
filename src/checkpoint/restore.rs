//! Putting the workspace back as a checkpoint recorded it (SPEC 19): the
//! changes from the present (a checkpoint just taken) to the target, as
//! `M`/`A`/`D` per path, and applying them with a two-tree `git read-tree
//! -m -u` on the session's index: files changed since are put back
//! (contents and modes), files created since removed, files deleted since
//! restored. Paths git does not track (ignored, excluded, too large,
//! outside the workspace) are never touched, and a file git did not record
//! is never overwritten: git refuses instead, and nothing changes.

use serde::Serialize;

use super::git::Git;

/// What a rewind does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ChangeKind {
    /// Its contents or mode are put back.
    #[serde(rename = "M")]
    Modified,
    /// It was deleted since, and comes back.
    #[serde(rename = "A")]
    Added,
    /// It was created since, and is removed.
    #[serde(rename = "D")]
    Deleted,
}

impl ChangeKind {
    /// `M`, `A` or `D`.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Modified => 'M',
            ChangeKind::Added => 'A',
            ChangeKind::Deleted => 'D',
        }
    }
}

/// One path a rewind changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `M`, `A` or `D`.
    pub status: ChangeKind,
    /// The path, relative to the workspace.
    pub path: String,
}

/// What changes going from tree-ish `from` to `to`.
pub async fn changes(git: &Git, from: &str, to: &str) -> Result<Vec<Change>, String> {
    let out = git.run(&["diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to], None).await?;
    let records = out.records();
    let mut found = Vec::new();
    for pair in records.chunks(2) {
        let [status, path] = pair else { continue };
        let status = match status.chars().next() {
            Some('A') => ChangeKind::Added,
            Some('D') => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        found.push(Change { status, path: path.clone() });
    }
    Ok(found)
}

/// Make the workspace go from `present` (a commit whose tree the session's
/// index holds, as a checkpoint just left it) to `target`. The index then
/// holds `target`'s tree: only the tracker calls this, and forgets the tree
/// it knew its index by.
pub(super) async fn apply(git: &Git, present: &str, target: &str) -> Result<(), String> {
    git.run(&["read-tree", "-m", "-u", present, target], None).await.map(drop)
}
