//! The paths of a git index file (`gitformat-index(5)`, versions 2 to 4),
//! read in process for [`super::watch`]: only the paths and their modes;
//! the stat data and hashes stay git's business. An index holding what a
//! stat cannot judge (a nested repository's commit, a conflict, a sparse
//! or split index) gives `None`, and git is asked instead.

/// The fixed part of an entry: ctime, mtime, dev, ino, mode, uid, gid,
/// size (4 bytes each), a SHA-1 (20), flags (2).
const FIXED: usize = 62;
const MODE_AT: usize = 24;
const TYPE_MASK: u32 = 0o170000;
const GITLINK: u32 = 0o160000;
const FOLDER: u32 = 0o040000;
const EXTENDED: u16 = 0x4000;
const STAGE: u16 = 0x3000;
const NAME_LENGTH: u16 = 0x0fff;
/// Extended flags: a sparse checkout's path not in the work tree.
const SKIP_WORKTREE: u16 = 0x4000;

/// Every path the index `data` holds, in its order; `None` for an index
/// this reader does not take (see the module) or cannot read.
pub fn paths(data: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut r = Reader { data, at: 0 };
    if r.take(4)? != b"DIRC" {
        return None;
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = r.u32()? as usize;
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(count.min(data.len() / FIXED));
    for _ in 0..count {
        let start = r.at;
        let fixed = r.take(FIXED)?;
        let mode = u32::from_be_bytes(fixed[MODE_AT..MODE_AT + 4].try_into().ok()?);
        let flags = u16::from_be_bytes([fixed[FIXED - 2], fixed[FIXED - 1]]);
        let kind = mode & TYPE_MASK;
        if kind == GITLINK || kind == FOLDER || flags & STAGE != 0 {
            return None;
        }
        if flags & EXTENDED != 0 {
            let extended = r.take(2)?;
            if version < 3 || u16::from_be_bytes([extended[0], extended[1]]) & SKIP_WORKTREE != 0 {
                return None;
            }
        }
        let path = if version == 4 {
            let strip = r.varint()?;
            let previous = out.last().map_or(&[][..], Vec::as_slice);
            let kept = previous.len().checked_sub(strip)?;
            let mut path = previous[..kept].to_vec();
            path.extend_from_slice(r.until_nul()?);
            path
        } else {
            let name = r.until_nul()?;
            if usize::from(flags & NAME_LENGTH) != name.len().min(usize::from(NAME_LENGTH)) {
                return None;
            }
            // 1 to 8 NULs pad the entry to a multiple of 8 bytes.
            let end = start + ((r.at - 1 - start) + 8) / 8 * 8;
            r.at = end;
            name.to_vec()
        };
        out.push(path);
    }
    extensions_taken(&mut r)?;
    Some(out)
}

/// The extensions after the entries: a split index (`link`) or sparse
/// folders (`sdir`) are not taken.
fn extensions_taken(r: &mut Reader) -> Option<()> {
    let end = r.data.len().checked_sub(20)?;
    while r.at < end {
        let signature = r.take(4)?;
        if signature == b"link" || signature == b"sdir" {
            return None;
        }
        let size = r.u32()? as usize;
        r.take(size)?;
    }
    Some(())
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    /// Bytes up to a NUL, which is passed over.
    fn until_nul(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.at..)?;
        let len = memchr::memchr(0, rest)?;
        self.at += len + 1;
        Some(&rest[..len])
    }

    /// Git's offset varint (index version 4): big-endian groups of 7 bits,
    /// each continuation adding one.
    fn varint(&mut self) -> Option<usize> {
        let mut byte = *self.take(1)?.first()?;
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = *self.take(1)?.first()?;
            value = value.checked_add(1)?.checked_mul(128)?.checked_add(usize::from(byte & 0x7f))?;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let out = Command::new("git").current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The index of a repository of `files`, as git writes it at `version`.
    fn index_of(files: &[&str], version: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        for f in files {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, f.as_bytes()).unwrap();
        }
        git(dir.path(), &["-c", &format!("index.version={version}"), "add", "-A"]);
        git(dir.path(), &["update-index", "--index-version", version]);
        std::fs::read(dir.path().join(".git/index")).unwrap()
    }

    #[test]
    fn reads_the_paths_of_every_version_git_writes() {
        // Long (the file system allows no path as long as the 12 bits of
        // an entry's name length).
        let long = format!("{}name.txt", format!("{}/", "x".repeat(200)).repeat(12));
        let files = ["a.txt", "b/c.txt", "b/cd/e", "b/cde", "ünïcode name", long.as_str(), "z"];
        let mut want: Vec<Vec<u8>> = files.iter().map(|f| f.as_bytes().to_vec()).collect();
        want.sort();
        for version in ["2", "3", "4"] {
            assert_eq!(paths(&index_of(&files, version)).as_deref(), Some(&want[..]), "version {version}");
        }
    }

    #[test]
    fn what_a_stat_cannot_judge_is_refused() {
        let mut data = index_of(&["a", "b"], "2");
        assert!(paths(&data).is_some());
        // A conflict stage in the first entry's flags.
        data[12 + FIXED - 2] |= 0x10;
        assert_eq!(paths(&data), None, "a conflict");
        let data = index_of(&["a"], "2");
        let mut gitlink = data.clone();
        gitlink[12 + MODE_AT..12 + MODE_AT + 4].copy_from_slice(&GITLINK.to_be_bytes());
        assert_eq!(paths(&gitlink), None, "a nested repository");
        assert_eq!(paths(&data[..data.len() - 30]), None, "cut short");
        assert_eq!(paths(b"DIRC\0\0\0\x05\0\0\0\0"), None, "an unknown version");
        assert_eq!(paths(b"not an index"), None);
    }
}
