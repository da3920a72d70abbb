//! What stays read-only inside the writable roots (SPEC 17): every `.git`
//! (and the `gitdir:` a `.git` file names), `.glrs` and `AGENTS.md`. An
//! embedded repository's `.git/config` can take a `core.fsmonitor` that
//! runs at the user's next `git status`, a nested `AGENTS.md` instructs the
//! next agent there (issue 31 item 10): so the whole workspace is walked,
//! not only the folders from its root down to the cwd.
//!
//! The walk is made once, when a session's policy is made (a chat's start,
//! `/sandbox`), not at each command: a call costs only the mounts of what
//! was found. It enters no protected folder (read-only whole), follows no
//! link, and stops after [`MAX_ENTRIES`] entries, keeping what it found.
//! What a command creates later is its own (as the README says).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Names that stay read-only inside a writable root.
pub(super) const PROTECTED_NAMES: &[&str] = &[".git", ".glrs", "AGENTS.md"];

/// The most entries one walk looks at (a huge tree is walked this far).
const MAX_ENTRIES: usize = 300_000;

/// The protected paths that exist in `root` and in each folder from it
/// down to `cwd` (every writable root: the temporary folder and the
/// configured roots are not walked).
pub(super) fn on_the_way(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in rel.components() {
            dir.push(part);
            dirs.push(dir.clone());
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        for name in PROTECTED_NAMES {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok() {
                out.extend(with_gitdir(path));
            }
        }
    }
    out
}

/// Every protected path anywhere under `workspace`.
pub(super) fn in_tree(workspace: &Path) -> Vec<PathBuf> {
    let found: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let seen = Arc::new(AtomicUsize::new(0));
    let (keep, count) = (found.clone(), seen.clone());
    let walk = ignore::WalkBuilder::new(workspace)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            if count.fetch_add(1, Ordering::Relaxed) >= MAX_ENTRIES {
                return false;
            }
            let protected = entry.depth() > 0 && PROTECTED_NAMES.iter().any(|n| entry.file_name() == *n);
            if protected && let Ok(mut kept) = keep.lock() {
                kept.push(entry.path().to_path_buf());
            }
            // Nothing inside a protected folder needs finding.
            !protected
        })
        .build_parallel();
    walk.run(|| Box::new(|_| ignore::WalkState::Continue));
    let found = found.lock().map(|f| f.clone()).unwrap_or_default();
    found.into_iter().flat_map(with_gitdir).collect()
}

/// `path`, and the `gitdir:` target when it is a `.git` file.
fn with_gitdir(path: PathBuf) -> Vec<PathBuf> {
    let target = (path.file_name().is_some_and(|n| n == ".git")).then(|| gitdir_target(&path)).flatten();
    target.into_iter().chain(std::iter::once(path)).collect()
}

/// The `gitdir:` a `.git` file points to, resolved.
fn gitdir_target(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dot_git).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let target = Path::new(target);
    let base = dot_git.parent()?;
    Some(super::resolve(&if target.is_absolute() { target.to_path_buf() } else { base.join(target) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_repositories_and_agents_files_are_found_anywhere_in_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = super::super::resolve(dir.path());
        for d in [".git/hooks", "vendor/lib/.git", "docs/deep/.glrs", "target/x/.git/objects"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/AGENTS.md"), "x").unwrap();
        std::fs::create_dir_all(ws.join("modules/m")).unwrap();
        std::fs::write(ws.join("modules/m/.git"), "gitdir: ../../.git/modules/m\n").unwrap();
        let found = in_tree(&ws);
        for want in [
            ".git",
            "vendor/lib/.git",
            "docs/deep/.glrs",
            "target/x/.git",
            "sub/AGENTS.md",
            "modules/m/.git",
            ".git/modules/m",
        ] {
            assert!(found.contains(&ws.join(want)), "{want}: {found:?}");
        }
        assert!(!found.iter().any(|p| p.starts_with(ws.join(".git/hooks"))), "not inside a protected folder");
        assert_eq!(on_the_way(&ws, &ws.join("sub")), vec![ws.join(".git"), ws.join("sub/AGENTS.md")]);
    }
}
