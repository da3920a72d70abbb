//! Recording the workspace into a session's index in the shadow and writing
//! its tree, at the cost of a `git status` (SPEC 19: "unchanged workspaces
//! cost a stat per file, not a copy").
//!
//! One look finds what changed since the index was last written, with two
//! read-only git commands run side by side: `diff-files` (tracked files
//! whose stat differs: a stat per file, no file read) and `ls-files
//! --others` (new files, `.gitignore` and `checkpoints.exclude` honoured).
//! When neither names anything the tree is the one the index was written
//! to, and nothing more runs. Otherwise only the paths named are handed to
//! `update-index` (hashed, or removed when gone), never the whole
//! workspace a second time as `git add -A` would. A file whose stat changed
//! but not its contents is named once, hashed, and its stat refreshed, so
//! it is not read again.
//!
//! Before git runs, the workspace is compared in process with what was
//! captured after the last look (`super::watch`): when nothing changed, no
//! git runs at all.
//!
//! Files over `checkpoints.maxFileBytes` are never hashed: left out of the
//! index (removed from it, when they grew past the limit) and named.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::Settings;
use super::git::Git;
use super::watch::Watch;

/// The workspace as a tree in the shadow, not yet committed.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The tree's hash.
    pub tree: String,
    /// Files left out for their size, relative to the workspace.
    pub too_large: Vec<String>,
    /// Git repositories inside the workspace left out because they have no
    /// commit yet (git records a nested repository as a link to its commit).
    pub no_commit: Vec<String>,
    /// How many files the index holds.
    pub files: u64,
    /// How long it took.
    pub took: Duration,
}

/// What the look found, sorted into what to do with each path.
#[derive(Debug, Default, PartialEq)]
struct Found {
    /// Present: hashed into the index (`update-index --add`).
    update: Vec<u8>,
    /// Gone, beyond a symbolic link, or grown too large while tracked:
    /// removed from the index (`update-index --force-remove`).
    remove: Vec<u8>,
    /// New nested git repositories (recorded by their commit, if they
    /// have one).
    repos: Vec<Vec<u8>>,
    /// Left out for their size.
    too_large: Vec<String>,
}

impl Found {
    fn is_empty(&self) -> bool {
        self.update.is_empty() && self.remove.is_empty() && self.repos.is_empty()
    }
}

/// Record the workspace into `git`'s index and give its tree. `known`: the
/// tree this index was last written to, when the caller knows it (then an
/// unchanged workspace runs no third git command).
///
/// `watch`: the workspace as captured after the last snapshot into this
/// index (see [`Watch`]). When every stat is as captured, the tree is
/// `known` and no git runs; otherwise git looks, and a new capture replaces
/// it (`None` when there can be none).
pub async fn snapshot(
    git: &Git,
    settings: &Settings,
    known: Option<&str>,
    watch: &mut Option<Watch>,
) -> Result<Snapshot, String> {
    let started = Instant::now();
    if let (Some(tree), Some(seen)) = (known, watch.as_ref())
        && crate::runtime::blocking(|| seen.unchanged())
    {
        let (too_large, files) = (seen.too_large.clone(), seen.entries);
        return Ok(Snapshot {
            tree: tree.to_string(),
            too_large,
            no_commit: Vec::new(),
            files,
            took: started.elapsed(),
        });
    }
    *watch = None;
    ensure_shadow(git).await?;
    write_excludes(&git.dir, &settings.exclude)?;
    if let Some(dir) = git.index.parent() {
        crate::paths::ensure_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // Before git looks: what changes from here on is newer than any stat
    // the capture trusts.
    let taken = SystemTime::now();
    let (changed, new, others) = tokio::try_join!(
        git.run(&["diff-files", "-z", "--name-only", "--no-renames", "--ignore-submodules=dirty"], None),
        git.run(&["ls-files", "-z", "--others", "--exclude-standard"], None),
        git.run(&["ls-files", "-z", "--others", "--exclude-standard", "--directory"], None),
    )?;
    let found = sort(&git.work_tree, &changed.paths(), &new.paths(), settings.max_file_bytes);
    let mut no_commit = Vec::new();
    let tree = match known {
        Some(tree) if found.is_empty() => tree.to_string(),
        _ => {
            if !found.remove.is_empty() {
                git.run(&["update-index", "--force-remove", "-z", "--stdin"], Some(&found.remove)).await?;
            }
            if !found.update.is_empty() {
                git.run(&UPDATE, Some(&found.update)).await?;
            }
            no_commit = add_repos(git, &found.repos).await;
            git.run(&["write-tree"], None).await?.text()
        }
    };
    let files = index_entries(&git.index);
    if found.repos.is_empty() {
        let others = others.paths();
        *watch =
            crate::runtime::blocking(|| Watch::capture(&git.work_tree, &git.index, taken, &others, &found.too_large));
    }
    Ok(Snapshot { tree, too_large: found.too_large, no_commit, files, took: started.elapsed() })
}

/// Hash the paths read on stdin into the index, or remove those gone.
const UPDATE: [&str; 6] = ["update-index", "--add", "--remove", "--replace", "-z", "--stdin"];

/// Add new nested repositories by their commits; those git refuses (no
/// commit yet) are left out, one by one, and returned.
async fn add_repos(git: &Git, repos: &[Vec<u8>]) -> Vec<String> {
    let listed = |paths: &[Vec<u8>]| paths.iter().flat_map(|p| p.iter().copied().chain([0])).collect::<Vec<u8>>();
    if repos.is_empty() || git.run(&UPDATE, Some(&listed(repos))).await.is_ok() {
        return Vec::new();
    }
    let mut refused = Vec::new();
    for repo in repos {
        if git.run(&UPDATE, Some(&listed(std::slice::from_ref(repo)))).await.is_err() {
            refused.push(String::from_utf8_lossy(repo).into_owned());
        }
    }
    refused
}

/// Sort the paths `diff-files` (`changed`, tracked) and `ls-files --others`
/// (`new`) named: to hash, to remove, too large.
fn sort(work_tree: &Path, changed: &[&[u8]], new: &[&[u8]], max_file_bytes: u64) -> Found {
    let mut found = Found::default();
    let tracked = changed.iter().map(|p| (*p, true));
    let untracked = new.iter().map(|p| (*p, false));
    for (path, was_tracked) in tracked.chain(untracked) {
        // A new nested repository is listed as `dir/`; git records it by
        // its name (a link to its commit).
        if let Some(repo) = path.strip_suffix(b"/") {
            found.repos.push(repo.to_vec());
            continue;
        }
        let list = match present(work_tree, path) {
            None => &mut found.remove,
            Some(meta) if meta.is_file() && meta.len() > max_file_bytes => {
                found.too_large.push(String::from_utf8_lossy(path).into_owned());
                if !was_tracked {
                    continue;
                }
                &mut found.remove
            }
            Some(_) => &mut found.update,
        };
        list.extend_from_slice(path);
        list.push(0);
    }
    found
}

/// The path's own metadata when it is there as git sees it: no folder on
/// the way is a symbolic link (git records nothing beyond one).
fn present(work_tree: &Path, path: &[u8]) -> Option<std::fs::Metadata> {
    let relative = Path::new(OsStr::from_bytes(path));
    let mut at = work_tree.to_path_buf();
    let mut parts = relative.components().peekable();
    while let Some(part) = parts.next() {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        if parts.peek().is_none() {
            return Some(meta);
        }
        if !meta.is_dir() {
            return None;
        }
    }
    None
}

/// Give a session's first index a start: a copy of the newest index of
/// another session with checkpoints in the same shadow (its stat of every
/// file holds for this workspace too), so a new chat's first checkpoint is
/// a stat per file and the files changed since, not every file hashed.
/// Whether a copy was made (if it then fails, remove it and go without).
pub fn seed(shadow: &Path, index: &Path) -> bool {
    let (Some(dir), Some(own)) = (index.parent(), index.file_name()) else { return false };
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let newest = entries
        .flatten()
        .filter(|e| e.file_name() != own)
        // Only a live session's index: its objects are reachable from its ref.
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| crate::SessionId::parse(n).is_ok() && shadow.join("refs/glrs").join(n).is_file())
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max();
    let Some((_, from)) = newest else { return false };
    // git replaces an index by renaming a whole one into place, so what is
    // read is a whole index; it lands under its name whole as well.
    let copied = tempfile::NamedTempFile::new_in(dir).and_then(|tmp| {
        std::fs::copy(&from, tmp.path())?;
        tmp.persist_noclobber(index).map_err(|e| e.error)
    });
    copied.is_ok()
}

/// Make the shadow repository if it is not there yet.
async fn ensure_shadow(git: &Git) -> Result<(), String> {
    if git.dir.join("HEAD").is_file() {
        return Ok(());
    }
    let parent = git.dir.parent().unwrap_or(&git.dir);
    crate::paths::ensure_private_dir(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    git.init().await
}

/// `checkpoints.exclude` as the shadow's `info/exclude` (rewritten only
/// when it changed).
fn write_excludes(shadow: &Path, patterns: &[String]) -> Result<(), String> {
    let mut text = String::from("# checkpoints.exclude from the glrs config\n");
    for p in patterns {
        text.push_str(p);
        text.push('\n');
    }
    let file = shadow.join("info").join("exclude");
    if std::fs::read_to_string(&file).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let dir = shadow.join("info");
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", file.display());
    crate::paths::ensure_private_dir(&dir).map_err(fail)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(fail)?;
    tmp.persist(&file).map_err(|e| fail(e.error))?;
    Ok(())
}

/// The number of entries an index file holds (its header: `DIRC`, version,
/// count), without running git.
fn index_entries(index: &Path) -> u64 {
    let mut head = [0u8; 12];
    let read = std::fs::File::open(index).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    match read {
        Ok(()) if &head[..4] == b"DIRC" => u64::from(u32::from_be_bytes([head[8], head[9], head[10], head[11]])),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_sorted_by_what_git_must_do_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::fs::write(ws.join("real/f"), "x").unwrap();
        std::fs::write(ws.join("big"), vec![0u8; 11]).unwrap();
        std::fs::write(ws.join("grown"), vec![0u8; 11]).unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
        let changed: [&[u8]; 4] = [b"real/f", b"gone", b"link/f", b"grown"];
        let new: [&[u8]; 2] = [b"big", b"real/"];
        let found = sort(ws, &changed, &new, 10);
        assert_eq!(found.update, b"real/f\0");
        assert_eq!(found.repos, [b"real".to_vec()]);
        assert_eq!(found.remove, b"gone\0link/f\0grown\0", "gone, beyond a link, grown too large while tracked");
        assert_eq!(found.too_large, ["grown", "big"]);
        assert!(sort(ws, &[], &[b"big"], 10).is_empty(), "a new file too large changes nothing");
    }
}
