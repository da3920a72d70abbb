//! A session's checkpoints over its life: a fork takes its parent's
//! (`adopt`), `rm` and cleanup remove them (`remove`: the session's ref and
//! index removed, the shadow removed when no session is left in it, else
//! the objects only it reached removed at once and the rest pruned), and their size counts against the
//! store's budget (`shadows`). Refs are loose files (the shadow is never
//! packed), so all of this but pruning needs no git.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::git::{Git, find_git};
use super::{index_path, is_hash, ref_name, root, shadow_of};
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

/// A shadow a session was forgotten in that other sessions still use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    /// The shadow repository.
    pub shadow: PathBuf,
    /// The newest checkpoint the session's ref held: its own commits are
    /// those no other ref reaches.
    pub commit: Option<String>,
}

/// The file in a shadow noting the sessions removed from it: a line each,
/// `ID\tFIRST\tLAST`, the times of its first and last checkpoint.
pub const REMOVED: &str = "glrs-removed";

/// Note in `workspace`'s shadow that session `id`, whose checkpoints
/// there span `first` to `last`, is being removed: what changed in that
/// time can no longer be attributed (SPEC 24), and provenance says so
/// rather than calling it nobody's. Best effort: a failure loses only that.
pub fn remember_removed(data: &Path, workspace: &Path, id: &SessionId, first: &str, last: &str) {
    use std::io::Write;
    let shadow = shadow_of(data, workspace);
    if !shadow.join(ref_name(id)).is_file() {
        return;
    }
    let line = format!("{id}\t{first}\t{last}\n");
    let file = std::fs::OpenOptions::new().create(true).append(true).open(shadow.join(REMOVED));
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// Forget session `id`'s checkpoints in every shadow. A shadow no session
/// is left in is removed whole; the others are returned, to be swept.
pub fn forget(data: &Path, id: &SessionId) -> Vec<Forgotten> {
    let mut shared = Vec::new();
    for shadow in shadows(data) {
        let had = shadow.sessions.iter().any(|s| s == id.as_str());
        let index = index_path(&shadow.dir, id);
        if !had && !index.exists() {
            continue;
        }
        let ref_file = shadow.dir.join(ref_name(id));
        let commit = std::fs::read_to_string(&ref_file).ok().map(|c| c.trim().to_string()).filter(|c| is_hash(c));
        let _ = std::fs::remove_file(&ref_file);
        let _ = std::fs::remove_file(&index);
        if shadow.sessions.iter().all(|s| s == id.as_str()) {
            let _ = std::fs::remove_dir_all(&shadow.dir);
        } else {
            shared.push(Forgotten { shadow: shadow.dir, commit });
        }
    }
    shared
}

/// Forget session `id`'s checkpoints and sweep the shadows it shared:
/// what `rm` and cleanup do with a removed session (SPEC 19).
pub async fn remove(data: &Path, id: &SessionId) -> Result<(), String> {
    let mut failed = Vec::new();
    for forgotten in forget(data, id) {
        if let Err(e) = sweep(&forgotten).await {
            failed.push(format!("{}: {e}", forgotten.shadow.display()));
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(failed.join("; ")) }
}

/// Remove at once what only the forgotten session reached (a person
/// removes a session to be rid of what it saw): its commits, and the trees
/// and files only they hold, but what another session's index holds (its
/// next checkpoint is made from it). Then the usual prune.
pub async fn sweep(forgotten: &Forgotten) -> Result<(), String> {
    let Some(program) = find_git() else { return Ok(()) };
    let shadow = &forgotten.shadow;
    let git = Git { program, dir: shadow.clone(), work_tree: shadow.clone(), index: shadow.join("index") };
    if let Some(commit) = &forgotten.commit {
        // Listed whole and subtracted: `rev-list A --not --all` does not
        // leave out a tree an unrelated commit shares.
        let objects = |out: super::git::Output| -> HashSet<String> {
            out.text().lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
        };
        let mut only = objects(git.run(&["rev-list", "--objects", commit], None).await?);
        for object in objects(git.run(&["rev-list", "--objects", "--all"], None).await?) {
            only.remove(&object);
        }
        for index in indexes(shadow) {
            let staged = git.with_index(index).run(&["ls-files", "--stage"], None).await?;
            for line in staged.text().lines() {
                // `MODE OBJECT STAGE\tPATH`
                if let Some(object) = line.split_whitespace().nth(1) {
                    only.remove(object);
                }
            }
        }
        for object in only.iter().filter(|o| is_hash(o)) {
            let file = shadow.join("objects").join(&object[..2]).join(&object[2..]);
            if let Err(e) = std::fs::remove_file(&file)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(format!("cannot remove {}: {e}", file.display()));
            }
        }
    }
    prune(shadow).await
}

/// The sessions' indexes in a shadow.
fn indexes(shadow: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(shadow.join("glrs-index")) else { return Vec::new() };
    entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect()
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
