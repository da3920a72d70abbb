//! The limits of what a tool gives the model (SPEC 14): at most 2,000 lines
//! or 50 KB. `read` keeps the first part and says how to read on; `bash`
//! (and extension tools) keep the last part, where errors and summaries
//! are, and name a file holding all of it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::redact::Redactor;

/// The most lines of output the model gets from one call.
pub const MAX_LINES: usize = 2_000;
/// The most bytes of output the model gets from one call.
pub const MAX_BYTES: usize = 50 * 1024;

/// The first line of `text`, at most `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let more = text.trim().lines().count() > 1;
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if more {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// The largest index `<= at` on a character boundary.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest index `>= at` on a character boundary.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The last part of `text` within the limits, and how many lines were
/// left out before it (`None` when all of it fits).
pub fn tail(text: &str) -> (&str, Option<usize>) {
    let lines = text.lines().count();
    if lines <= MAX_LINES && text.len() <= MAX_BYTES {
        return (text, None);
    }
    // The start of the last MAX_LINES lines...
    let mut start = 0;
    if lines > MAX_LINES {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut seen = 0;
        for (i, b) in body.bytes().enumerate().rev() {
            if b == b'\n' {
                seen += 1;
                if seen == MAX_LINES {
                    start = i + 1;
                    break;
                }
            }
        }
    }
    // ...then no more than MAX_BYTES, starting at a line when one fits.
    if text.len() - start > MAX_BYTES {
        let at = ceil_boundary(text, text.len() - MAX_BYTES);
        start = match text[at..].find('\n') {
            Some(nl) if at + nl + 1 < text.len() => at + nl + 1,
            _ => at,
        };
    }
    let kept = &text[start..];
    (kept, Some(lines - kept.lines().count()))
}

/// The note put before a cut output: what was cut and where the whole is.
pub fn cut_note(what: &str, path: &Path, kept: &str) -> String {
    format!("[… {what} cut: the whole output is in {}]\n{kept}", path.display())
}

/// `text` as the model sees it: whole when it fits, else its end after a
/// note naming a new file under `dir` that keeps all of it.
pub fn within_limits(text: String, dir: &Path, tool: &str, redactor: &Redactor) -> String {
    let (kept, cut) = tail(&text);
    let Some(lines) = cut else { return text };
    match save_full_output(dir, tool, redactor.text(&text).as_bytes()) {
        Ok(path) => cut_note(&format!("{lines} earlier lines"), &path, kept),
        Err(e) => format!("[… {lines} earlier lines cut (the whole could not be kept: {e})]\n{kept}"),
    }
}

/// Keep `bytes` whole in a new 0600 file under `dir` (made 0700).
pub fn save_full_output(dir: &Path, tool: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let kept = OutputFile::create(dir, tool)?;
    (&kept.file).write_all(bytes)?;
    Ok(kept.path)
}

/// A file glrs made for a run's whole output, read back, redacted and
/// removed through the descriptor it was made with, never by its name
/// alone: a file swapped for a link to a secret (`/proc/PID/environ`)
/// after it was written is never read, and cleanup removes only the file
/// glrs made (issue 31 item 3).
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    file: std::fs::File,
}

impl OutputFile {
    /// A new, empty 0600 file under `dir` (made 0700 if missing): `dir`
    /// itself and a parent named `output` must be folders, not links.
    pub fn create(dir: &Path, tool: &str) -> std::io::Result<OutputFile> {
        use rustix::fs::{Mode, OFlags};
        crate::paths::ensure_private_dir(dir)?;
        if let Some(parent) = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == "output"))
            && std::fs::symlink_metadata(parent)?.file_type().is_symlink()
        {
            return Err(linked(parent));
        }
        let folder = rustix::fs::open(dir, OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| {
                if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR { linked(dir) } else { e.into() }
            })?;
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S");
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for n in 0..100u128 {
            let tag = (seed.wrapping_add(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as u64 % 0x100_0000;
            let name = format!("{tool}-{stamp}-{tag:06x}.log");
            match rustix::fs::openat(&folder, name.as_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => return Ok(OutputFile { path: dir.join(name), file: std::fs::File::from(fd) }),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(std::io::Error::other(format!("no free name for an output file in {}", dir.display())))
    }

    /// Where the file is (what the model is told).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Another handle on the file, for the writer.
    pub fn writer(&self) -> std::io::Result<std::fs::File> {
        self.file.try_clone()
    }

    /// Its size now.
    pub fn size(&self) -> std::io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// Its bytes from `start`, at most `max`.
    pub fn read_from(&self, start: u64, max: u64) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut bytes = Vec::new();
        let mut at = start;
        let mut buf = vec![0u8; 64 * 1024];
        while (bytes.len() as u64) < max {
            let want = usize::try_from((max - bytes.len() as u64).min(buf.len() as u64)).unwrap_or(buf.len());
            let n = self.file.read_at(&mut buf[..want], at)?;
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
            at += n as u64;
        }
        Ok(bytes)
    }

    /// True when its path still names the file glrs made.
    fn still_named(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self.file.metadata(), std::fs::symlink_metadata(&self.path)) {
            (Ok(mine), Ok(now)) => mine.dev() == now.dev() && mine.ino() == now.ino(),
            _ => false,
        }
    }

    /// Remove the file, when its path still names the one glrs made.
    pub fn remove(&self) {
        if self.still_named() {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Rewrite the file with its secrets redacted (a new file in its
    /// folder, renamed over it when its path still names the one glrs
    /// made, so a crash leaves the old or the new file, never half of
    /// one). The file is at most a capped output (crate::process::capture),
    /// so it is read whole.
    pub fn redact(&self, redactor: &Redactor) -> std::io::Result<()> {
        let bytes = self.read_from(0, u64::MAX)?;
        let text = String::from_utf8_lossy(&bytes);
        let std::borrow::Cow::Owned(clean) = redactor.text(&text) else { return Ok(()) };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut file = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(dir)?;
        file.write_all(clean.as_bytes())?;
        if !self.still_named() {
            return Err(std::io::Error::other(format!("{} was replaced meanwhile", self.path.display())));
        }
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn linked(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{} is not a folder of glrs's own (a symbolic link?): refused", path.display()),
    )
}

/// Where long outputs of hooks and glrs's own runs are kept whole:
/// `<data>/output/` (a session's tool calls use `<data>/output/<id>/`,
/// [`crate::Paths::output_of`]). In the data folder, which the sandbox
/// hides from commands: a command can neither swap a kept file for a link
/// nor read another session's (issue 31 item 3).
pub fn output_dir() -> PathBuf {
    match crate::Paths::from_env() {
        Ok(paths) => paths.output(),
        // No home and no XDG_DATA_HOME: no store either; a private folder.
        Err(_) => std::env::temp_dir().join(format!("glrs-output-{}", rustix::process::getuid().as_raw())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_its_end_and_names_the_file_with_all_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let shown = within_limits(text.clone(), &out, "mcp__t__big", &Redactor::off());
        assert!(shown.starts_with("[… 3000 earlier lines cut: the whole output is in "), "{}", &shown[..100]);
        assert!(shown.ends_with("line 4999\n"));
        let file = shown.lines().next().unwrap().split(" is in ").nth(1).unwrap().trim_end_matches(']');
        assert_eq!(std::fs::read_to_string(file).unwrap(), text);
        assert_eq!(within_limits("short".into(), &out, "mcp__t__big", &Redactor::off()), "short");
    }

    #[test]
    fn tail_keeps_the_last_lines_or_bytes() {
        assert_eq!(tail("a\nb\n"), ("a\nb\n", None));
        let many: String = (1..=2_500).map(|i| format!("line {i}\n")).collect();
        let (kept, cut) = tail(&many);
        assert!(kept.starts_with("line 501\n") && kept.ends_with("line 2500\n"), "{}", &kept[..20]);
        assert_eq!(cut, Some(500));
        let wide: String = (1..=100).map(|i| format!("{i:04}{}\n", "x".repeat(1_000))).collect();
        let (kept, cut) = tail(&wide);
        assert!(kept.len() <= MAX_BYTES && kept.ends_with("x\n"));
        assert!(kept.starts_with("0051"), "starts at a line: {}", &kept[..8]);
        assert_eq!(cut, Some(50));
        let one = "é".repeat(40_000);
        let (kept, _) = tail(&one);
        assert!(kept.len() <= MAX_BYTES);
        assert_eq!(one_line("  cargo test\n--all", 50), "cargo test …");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }

    #[test]
    fn full_output_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("glrs/output");
        let path = save_full_output(&out, "bash", b"all of it").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"all of it");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_linked_output_folder_is_refused_and_cleanup_removes_only_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("theirs.log"), "theirs").unwrap();
        std::fs::create_dir_all(dir.path().join("data/output")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("data/output/s1")).unwrap();
        let err = OutputFile::create(&dir.path().join("data/output/s1"), "bash").unwrap_err();
        assert!(err.to_string().contains("not a folder of glrs's own"), "{err}");
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("linked-output")).unwrap();
        std::fs::create_dir_all(dir.path().join("data2")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join("data2/output")).unwrap();
        assert!(OutputFile::create(&dir.path().join("data2/output/s1"), "bash").is_err(), "a linked output/");
        // A kept file swapped for another: not read, not removed.
        let kept = OutputFile::create(&dir.path().join("data/output/s2"), "bash").unwrap();
        kept.writer().unwrap().write_all(b"mine").unwrap();
        std::fs::remove_file(kept.path()).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("theirs.log"), kept.path()).unwrap();
        assert_eq!(kept.read_from(0, 100).unwrap(), b"mine");
        kept.remove();
        assert!(elsewhere.join("theirs.log").exists() && std::fs::symlink_metadata(kept.path()).is_ok());
        assert_eq!(std::fs::read_to_string(elsewhere.join("theirs.log")).unwrap(), "theirs");
    }
}
