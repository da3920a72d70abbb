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
    let mut file = new_output_file(dir, tool)?;
    file.1.write_all(bytes)?;
    Ok(file.0)
}

/// Rewrites a kept output file with its secrets redacted (in its folder,
/// then renamed over it, so a crash leaves the old or the new file, never
/// half of one). The file is at most a capped output (crate::process::
/// capture), so it is read whole.
pub fn redact_file(path: &Path, redactor: &Redactor) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let std::borrow::Cow::Owned(clean) = redactor.text(&text) else { return Ok(()) };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file =
        tempfile::Builder::new().permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600)).tempfile_in(dir)?;
    file.write_all(clean.as_bytes())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Where long outputs are kept whole: `$XDG_CACHE_HOME/glrs/output/`, else
/// `~/.cache/glrs/output/`.
pub fn output_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("glrs").join("output")
}

/// A new, empty 0600 file under `dir` for a tool's whole output.
pub fn new_output_file(dir: &Path, tool: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    crate::paths::ensure_private_dir(dir)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S");
    let file = tempfile::Builder::new()
        .prefix(&format!("{tool}-{stamp}-"))
        .suffix(".log")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)?;
    let (file, path) = file.keep().map_err(|e| e.error)?;
    Ok((path, file))
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
}
