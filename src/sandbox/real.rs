//! Where a path really leads, with every symlink followed as the kernel
//! would follow it (a dangling link too: `out -> /etc/cron.d/x` leads to
//! `/etc/cron.d/x`, which a write would create) and `..` applied after
//! each link. The sandbox's policy and the file tools judge paths by this
//! one function, so a path cannot be judged inside the roots by one and
//! written outside them by the other.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// How many links one path may pass through (the kernel's limit too).
const MAX_LINKS: usize = 40;

/// `path` (absolute) with every symlink followed and `.`/`..` applied.
/// Errors are those of reading a link or a folder on the way (a folder
/// that cannot be searched, a loop of links).
pub fn real_path(path: &Path) -> io::Result<PathBuf> {
    real_path_from(Path::new("/"), path)
}

/// [`real_path`] of `base` joined with `rest` (relative), where `base` is
/// already a real path: the walk starts at `base`, so paths under one
/// folder cost a `statx` a part below it, not one a part from `/`.
pub fn real_path_from(base: &Path, rest: &Path) -> io::Result<PathBuf> {
    let mut pending: VecDeque<OsString> = parts(rest).collect();
    let mut out = base.to_path_buf();
    let mut links = 0;
    // Once a part does not exist, nothing below it can be a link.
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        if missing {
            out = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for p in parts(&target).collect::<Vec<_>>().into_iter().rev() {
                    pending.push_front(p);
                }
            }
            Ok(_) => out = next,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                missing = true;
                out = next;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The named parts of a path, `..` kept, `.` and the root left out.
fn parts(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_dangling_link_leads_where_a_write_would_create_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = real_path(dir.path()).unwrap();
        std::fs::create_dir_all(d.join("repo")).unwrap();
        std::fs::create_dir_all(d.join("outside")).unwrap();
        symlink(d.join("outside/new.txt"), d.join("repo/out")).unwrap();
        symlink("../outside/deeper/x", d.join("repo/rel")).unwrap();
        assert_eq!(real_path(&d.join("repo/out")).unwrap(), d.join("outside/new.txt"));
        assert_eq!(real_path(&d.join("repo/rel")).unwrap(), d.join("outside/deeper/x"));
        assert_eq!(real_path(&d.join("repo/a/../b")).unwrap(), d.join("repo/b"));
    }
}
