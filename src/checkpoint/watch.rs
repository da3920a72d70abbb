//! Whether the workspace changed since the last checkpoint, answered in
//! process: a stat per file, no git (SPEC 19: "unchanged workspaces cost a
//! stat per file"; issue 32: the two git processes every step made a step
//! cost three times its floor).
//!
//! After git has looked (`super::snapshot`), the workspace is captured: the
//! stat of every path the session's index holds (read from git's index
//! file: paths and modes only), of each file left out for its size, and of
//! every folder git searches for new files: each folder above an indexed
//! path, and each folder `ls-files --others --directory` names (empty, or
//! holding only ignored files) with every folder below it. A change to a
//! file changes its stat; a new file, folder or rename changes its folder's
//! `mtime`. So when every stat is as captured, git would find nothing new,
//! and none runs.
//!
//! Timestamps are coarse (a clock tick; a second or two on some file
//! systems), so a change made in the same tick as the captured stat could
//! leave the stat as it was ("racy git"). The capture is therefore only
//! trusted when nothing it holds changed within [`RACY`] before git began
//! to look (`taken`): anything changed later has a later timestamp than
//! anything trusted. Otherwise there is no capture, and the next checkpoint
//! asks git again (and captures again). Workspaces git records specially
//! (nested repositories, a split or sparse index) always ask git.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long before git looked a change must be for its stat to be trusted:
/// more than the coarsest file system timestamp (2 s on FAT) and a clock
/// tick.
const RACY: Duration = Duration::from_secs(3);

/// Past this many folders to watch, git is asked every time.
const MAX_FOLDERS: usize = 50_000;

/// What a change to a file or folder changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    mode: u32,
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stat {
    /// The path's own stat (a link's, not its target's); `None` when it is
    /// not there (or cannot be looked at: then it differs from any capture).
    fn of(path: &Path) -> Option<Stat> {
        let m = std::fs::symlink_metadata(path).ok()?;
        Some(Stat {
            mode: m.mode(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Whether it changed at or after `since` (seconds, nanoseconds).
    fn changed_since(&self, since: (i64, i64)) -> bool {
        self.mtime >= since || self.ctime >= since
    }
}

/// The workspace as last captured.
#[derive(Debug)]
pub struct Watch {
    /// Indexed paths, files left out for their size and the user's git
    /// ignore file, each with its stat (`None`: it was not there).
    files: Vec<(PathBuf, Option<Stat>)>,
    /// The folders git searches for new files.
    folders: Vec<(PathBuf, Stat)>,
    /// Files left out for their size, as the last look named them.
    pub too_large: Vec<String>,
    /// How many entries the index holds.
    pub entries: u64,
}

impl Watch {
    /// Capture the workspace `work_tree` whose index is `index`, as git
    /// found it having begun to look at `taken`. `others`: what `ls-files
    /// --others --directory` named. `None` when it cannot be trusted or
    /// git records something here that a stat cannot tell (see the module).
    pub fn capture(
        work_tree: &Path,
        index: &Path,
        taken: SystemTime,
        others: &[&[u8]],
        too_large: &[String],
    ) -> Option<Watch> {
        let since = taken.checked_sub(RACY)?.duration_since(UNIX_EPOCH).ok()?;
        let since = (i64::try_from(since.as_secs()).ok()?, i64::from(since.subsec_nanos()));
        let data = std::fs::read(index).ok()?;
        let paths = super::index::paths(&data)?;
        let mut folders = std::collections::BTreeSet::new();
        folders.insert(work_tree.to_path_buf());
        let mut files = Vec::with_capacity(paths.len() + too_large.len() + 1);
        for path in &paths {
            let relative = Path::new(OsStr::from_bytes(path));
            for folder in relative.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()) {
                if !folders.insert(work_tree.join(folder)) {
                    break;
                }
            }
            files.push(work_tree.join(relative));
        }
        for other in others {
            let folder = other.strip_suffix(b"/")?;
            walk_folders(&work_tree.join(OsStr::from_bytes(folder)), &mut folders)?;
        }
        files.extend(too_large.iter().map(|p| work_tree.join(p)));
        files.extend(user_ignore_file());
        let files = files
            .into_iter()
            .map(|path| {
                let stat = Stat::of(&path);
                (path, stat)
            })
            .collect::<Vec<_>>();
        let folders = folders.into_iter().map(|f| Some((Stat::of(&f)?, f))).collect::<Option<Vec<_>>>()?;
        let recent = files.iter().filter_map(|(_, s)| s.as_ref()).chain(folders.iter().map(|(s, _)| s));
        if recent.clone().any(|s| s.changed_since(since)) {
            return None;
        }
        Some(Watch {
            files,
            folders: folders.into_iter().map(|(s, f)| (f, s)).collect(),
            too_large: too_large.to_vec(),
            entries: paths.len() as u64,
        })
    }

    /// Whether every file and folder is as captured: then git would find
    /// nothing to record.
    pub fn unchanged(&self) -> bool {
        self.folders.iter().all(|(path, stat)| Stat::of(path).as_ref() == Some(stat))
            && self.files.iter().all(|(path, stat)| Stat::of(path) == *stat)
    }
}

/// Add `top` and every folder below it (links not followed) to `folders`;
/// `None` past [`MAX_FOLDERS`] or when one cannot be read.
fn walk_folders(top: &Path, folders: &mut std::collections::BTreeSet<PathBuf>) -> Option<()> {
    let mut pending = vec![top.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).ok()? {
            let entry = entry.ok()?;
            if entry.file_type().ok()?.is_dir() {
                pending.push(entry.path());
            }
        }
        folders.insert(folder);
        if folders.len() > MAX_FOLDERS {
            return None;
        }
    }
    Some(())
}

/// The user's own ignore file, which git reads even with no user config
/// (`$XDG_CONFIG_HOME/git/ignore`, else `~/.config/git/ignore`): a change
/// to it can make a file no longer ignored.
fn user_ignore_file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))?;
    Some(config.join("git").join("ignore"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    fn git(ws: &Path, args: &[&str]) -> Vec<u8> {
        let out = Command::new("git").current_dir(ws).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    /// A work tree with tracked files, an empty folder, a folder of only
    /// ignored files (two deep) and a file left out for its size.
    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        for folder in ["src", "empty", "logs/deep"] {
            std::fs::create_dir_all(ws.join(folder)).unwrap();
        }
        for (file, text) in [(".gitignore", "*.log\nbig.bin\n"), ("a.txt", "one\n"), ("src/b.txt", "two\n")] {
            std::fs::write(ws.join(file), text).unwrap();
        }
        std::fs::write(ws.join("logs/x.log"), "x").unwrap();
        std::fs::write(ws.join("logs/deep/y.log"), "y").unwrap();
        std::fs::write(ws.join("big.bin"), [0u8; 64]).unwrap();
        git(ws, &["init", "-q"]);
        git(ws, &["add", "-A"]);
        dir
    }

    /// The capture `snapshot` makes, as if git had begun to look `after`
    /// from now.
    fn capture(ws: &Path, after: Duration) -> Option<Watch> {
        let listed = git(ws, &["ls-files", "-z", "--others", "--exclude-standard", "--directory"]);
        let others: Vec<&[u8]> = listed.split(|b| *b == 0).filter(|p| !p.is_empty()).collect();
        Watch::capture(ws, &ws.join(".git/index"), SystemTime::now() + after, &others, &["big.bin".into()])
    }

    #[test]
    fn what_changed_just_before_git_looked_is_not_trusted() {
        let dir = workspace();
        assert!(capture(dir.path(), Duration::ZERO).is_none(), "files written a moment ago");
        let watch = capture(dir.path(), RACY * 2).unwrap();
        assert!(watch.unchanged());
        assert_eq!(watch.entries, 3);
        assert_eq!(watch.too_large, ["big.bin"]);
    }

    /// A change made to a workspace.
    type Change = fn(&Path);

    #[test]
    fn every_kind_of_change_is_seen() {
        let changes: [(&str, Change); 10] = [
            ("a same-size rewrite with its mtime put back", |ws| {
                let path = ws.join("a.txt");
                let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
                // Past a clock tick, so the change's ctime is a later one.
                std::thread::sleep(Duration::from_millis(30));
                std::fs::write(&path, "uno\n").unwrap();
                std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
            }),
            ("a mode", |ws| std::fs::set_permissions(ws.join("a.txt"), PermissionsExt::from_mode(0o755)).unwrap()),
            ("a deletion", |ws| std::fs::remove_file(ws.join("src/b.txt")).unwrap()),
            ("a new file", |ws| std::fs::write(ws.join("new.txt"), "").unwrap()),
            ("a file in an empty folder", |ws| std::fs::write(ws.join("empty/new.txt"), "").unwrap()),
            ("a file beside only ignored ones", |ws| std::fs::write(ws.join("logs/deep/new.txt"), "").unwrap()),
            ("a new folder", |ws| std::fs::create_dir_all(ws.join("src/new/deeper")).unwrap()),
            ("a file left out for its size, shrunk", |ws| std::fs::write(ws.join("big.bin"), "").unwrap()),
            ("a file made a link", |ws| {
                std::fs::remove_file(ws.join("a.txt")).unwrap();
                std::os::unix::fs::symlink("src/b.txt", ws.join("a.txt")).unwrap();
            }),
            ("a rename", |ws| std::fs::rename(ws.join("src/b.txt"), ws.join("src/c.txt")).unwrap()),
        ];
        for (what, change) in changes {
            let dir = workspace();
            let watch = capture(dir.path(), RACY * 2).unwrap();
            change(dir.path());
            assert!(!watch.unchanged(), "{what} was missed");
        }
    }

    #[test]
    fn a_nested_repository_is_left_to_git() {
        let dir = workspace();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        git(&inner, &["init", "-q"]);
        std::fs::write(inner.join("f"), "f").unwrap();
        git(&inner, &["add", "-A"]);
        git(&inner, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "f"]);
        git(dir.path(), &["add", "inner"]);
        assert!(capture(dir.path(), RACY * 2).is_none(), "its commit is not a stat");
    }
}
