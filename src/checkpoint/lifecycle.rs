//! A session's checkpoints over its life: a fork takes its parent's
//! (`adopt`), `rm` and cleanup forget them (`forget`: the session's ref and
//! index removed, the shadow removed when no session is left in it, else
//! its unreachable objects pruned), and their size counts against the
//! store's budget (`shadows`). Refs are loose files (the shadow is never
//! packed), so all of this but pruning needs no git.

use std::path::{Path, PathBuf};

use super::git::{Git, find_git};
use super::{index_path, ref_name, root, shadow_of};
use crate::SessionId;

/// One shadow repository: where it is, its size, the sessions it holds.
#[derive(Debug, Clone)]
pub struct Shadow {
    /// Its folder.
    pub dir: PathBuf,
    /// Its size on disk, in bytes.
    pub bytes: u64,
    /// The sessions with checkpoints in it.
    pub sessions: Vec<String>,
}

/// Every shadow repository under `data`.
pub fn shadows(data: &Path) -> Vec<Shadow> {
    let Ok(dirs) = std::fs::read_dir(root(data)) else { return Vec::new() };
    let mut found = Vec::new();
    for entry in dirs.flatten() {
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let sessions = std::fs::read_dir(dir.join("refs/glrs"))
            .map(|refs| refs.flatten().filter_map(|r| r.file_name().to_str().map(str::to_string)).collect())
            .unwrap_or_default();
        found.push(Shadow { bytes: size_of(&dir), dir, sessions });
    }
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// The bytes of the files under `dir` (links not followed).
pub fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut total = 0;
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_dir() => total += size_of(&entry.path()),
            Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
            _ => {}
        }
    }
    total
}

/// Give session `to` the checkpoints of another up to `commit` (a fork):
/// its own ref on that commit in `workspace`'s shadow, and a copy of
/// `from`'s index, so its next checkpoint is a stat per file too.
pub fn adopt(data: &Path, workspace: &Path, from: &SessionId, to: &SessionId, commit: &str) -> std::io::Result<()> {
    if !super::is_hash(commit) {
        let what = format!("{commit:?} is not a commit hash");
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, what));
    }
    let shadow = shadow_of(data, workspace);
    let file = shadow.join(ref_name(to));
    if let Some(dir) = file.parent() {
        crate::paths::ensure_private_dir(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, format!("{commit}\n").as_bytes())?;
        tmp.persist(&file).map_err(|e| e.error)?;
    }
    let index = index_path(&shadow, from);
    if index.is_file() {
        let _ = std::fs::copy(&index, index_path(&shadow, to));
    }
    Ok(())
}

/// Forget session `id`'s checkpoints in every shadow. A shadow no session
/// is left in is removed whole; the others are returned, to be pruned.
pub fn forget(data: &Path, id: &SessionId) -> Vec<PathBuf> {
    let mut to_prune = Vec::new();
    for shadow in shadows(data) {
        let had = shadow.sessions.iter().any(|s| s == id.as_str());
        let index = index_path(&shadow.dir, id);
        if !had && !index.exists() {
            continue;
        }
        let _ = std::fs::remove_file(shadow.dir.join(ref_name(id)));
        let _ = std::fs::remove_file(&index);
        if shadow.sessions.iter().all(|s| s == id.as_str()) {
            let _ = std::fs::remove_dir_all(&shadow.dir);
        } else {
            to_prune.push(shadow.dir);
        }
    }
    to_prune
}

/// Remove the objects no session's ref reaches any more (`git prune`),
/// once an hour old: a chat working in the same workspace may be between
/// writing a file's object and committing it. Without git there is
/// nothing to do (and nothing was recorded).
pub async fn prune(shadow: &Path) -> Result<(), String> {
    let Some(program) = find_git() else { return Ok(()) };
    let git = Git { program, dir: shadow.to_path_buf(), work_tree: shadow.to_path_buf(), index: shadow.join("index") };
    git.run(&["prune", "--expire=1.hour.ago"], None).await.map(drop)
}
