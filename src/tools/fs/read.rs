//! `read`: a text file's lines, at most 2,000 lines or 50 KB at a time. The
//! file is streamed and no line is held past what can be shown: lines
//! before `offset` are skipped without being kept, and a line longer than
//! what is left of the 50 KB is read only that far (a 400 MB file of one
//! line costs 50 KB, issue 20). A line that was cut is always said to be.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Judged, Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use super::{binary_kind, checked_target, io_error, open, open_error, path_of, real, spec};
use crate::limits::{MAX_BYTES, MAX_LINES};
use crate::provider::ToolSpec;
use crate::runtime::off_thread;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// `read`: a text file's lines, at most 2,000 lines or 50 KB at a time.
pub struct Read;

impl Tool for Read {
    fn name(&self) -> &str {
        "read"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn mutates(&self) -> bool {
        false
    }
    fn needs_permission(&self) -> bool {
        false
    }
    fn spec(&self) -> ToolSpec {
        spec(
            "read",
            "Read a text file. Returns at most 2,000 lines or 50 KB; a longer file ends with a line saying which offset reads on. Binary files are refused.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "the file, relative to the working directory, ~ or absolute"},
                "offset": {"type": "integer", "minimum": 1, "description": "the first line to read (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "how many lines to read"}
            }, "required": ["path"]}),
        )
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        path_of(input).map(|p| real::subject(cwd, p))
    }
    fn summary(&self, input: &Value) -> String {
        let mut s = path_of(input).unwrap_or("?").to_string();
        if let Some(o) = input.get("offset").and_then(Value::as_u64) {
            s.push_str(&format!(" (from line {o})"));
        }
        s
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: ReadInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |_| read_file(&cwd, &input.path, input.offset.unwrap_or(1), input.limit, &judged))
                .await
                .unwrap_or_else(ToolOutput::from)
        })
    }
}

/// Skip one line without keeping it; false at the end of the file.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        if let Some(nl) = memchr::memchr(b'\n', buf) {
            reader.consume(nl + 1);
            return Ok(true);
        }
        let n = buf.len();
        reader.consume(n);
    }
}

/// How reading one line ended.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// The end of the file: no line.
    End,
    /// The whole line (with its newline, if it had one) is in the buffer.
    Whole,
    /// Only the first `keep` bytes are: the rest is still to be read.
    Cut,
}

/// Read one line into `line`, keeping at most `keep` bytes of it.
fn read_line_capped(reader: &mut impl BufRead, keep: usize, line: &mut Vec<u8>) -> std::io::Result<Line> {
    line.clear();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(if line.is_empty() { Line::End } else { Line::Whole });
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(nl) => (nl + 1, true),
            None => (buf.len(), false),
        };
        let room = keep - line.len();
        if take > room {
            line.extend_from_slice(&buf[..room]);
            reader.consume(room);
            return Ok(Line::Cut);
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            return Ok(Line::Whole);
        }
    }
}

/// `bytes` up to their last whole UTF-8 character (a cut may split one).
fn whole_chars(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// The body of `read`: streams the file and stops once the limits are met,
/// so a large file costs only the part shown.
pub fn read_file(cwd: &Path, path: &str, offset: usize, limit: Option<usize>, judged: &Judged) -> ToolOutput {
    let shown = path;
    let target = match checked_target(cwd, judged, "read", path, true) {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    let file = match open::open_regular(&target.real) {
        Ok((file, _)) => file,
        Err(e) => return open_error("read", shown, &e, "use ls to list it"),
    };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let head = match reader.fill_buf() {
        Ok(h) => h,
        Err(e) => return io_error("read", shown, &e),
    };
    if let Some(kind) = binary_kind(&head[..head.len().min(8 * 1024)]) {
        return ToolOutput::error(format!("{shown} is a binary file ({kind}): read shows text files only"));
    }
    let offset = offset.max(1);
    let mut number = 0usize;
    while number + 1 < offset {
        match skip_line(&mut reader) {
            Ok(true) => number += 1,
            Ok(false) => {
                return ToolOutput::error(format!("offset {offset} is past the end of {shown} ({number} lines)"));
            }
            Err(e) => return io_error("read", shown, &e),
        }
    }
    let want = limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
    match lines_from(&mut reader, number, want) {
        Ok(page) => page.render(shown, offset),
        Err(PageError::Binary(n)) => {
            ToolOutput::error(format!("{shown} is a binary file (binary data at line {n}): read shows text files only"))
        }
        Err(PageError::Io(e)) => io_error("read", shown, &e),
    }
}

/// Why a page could not be read.
enum PageError {
    /// Line N holds a NUL byte.
    Binary(usize),
    Io(std::io::Error),
}

impl From<std::io::Error> for PageError {
    fn from(e: std::io::Error) -> PageError {
        PageError::Io(e)
    }
}

/// What one `read` shows.
struct Page {
    text: String,
    /// The line to read on from, when more follows.
    next: Option<usize>,
    /// The line cut at the 50 KB limit, if one was.
    cut: Option<usize>,
    /// Whether anything was read at `offset` at all.
    any: bool,
}

/// Up to `want` lines after line `number`, within 50 KB.
fn lines_from(reader: &mut impl BufRead, mut number: usize, want: usize) -> Result<Page, PageError> {
    let mut page = Page { text: String::new(), next: None, cut: None, any: false };
    let mut line = Vec::new();
    let mut shown_lines = 0usize;
    while shown_lines < want {
        let room = MAX_BYTES.saturating_sub(page.text.len());
        let how = read_line_capped(reader, room, &mut line)?;
        if how == Line::End {
            return Ok(page);
        }
        number += 1;
        page.any = true;
        if line.contains(&0) {
            return Err(PageError::Binary(number));
        }
        if how == Line::Cut && shown_lines > 0 {
            // It does not fit after what is shown: the next read starts with it.
            page.next = Some(number);
            return Ok(page);
        }
        page.text.push_str(&String::from_utf8_lossy(whole_chars(&line)));
        shown_lines += 1;
        if how == Line::Cut {
            // One line longer than the limit: its start is shown, the rest skipped.
            page.text.push('\n');
            page.cut = Some(number);
            skip_line(reader)?;
            break;
        }
    }
    if !reader.fill_buf()?.is_empty() {
        page.next = Some(number + 1);
    }
    Ok(page)
}

impl Page {
    /// The result text: the lines, then what was cut and how to read on.
    fn render(mut self, shown: &str, offset: usize) -> ToolOutput {
        if !self.any && offset > 1 {
            return ToolOutput::error(format!("offset {offset} is past the end of {shown} ({} lines)", offset - 1));
        }
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        let cut = self.cut.map(|n| format!("line {n} is longer than 50 KB and was cut"));
        match (cut, self.next) {
            (Some(cut), Some(n)) => {
                self.text.push_str(&format!("[{cut}; more follows: read {shown} with offset={n} to read on]\n"));
            }
            (Some(cut), None) => self.text.push_str(&format!("[{cut}: the rest of it is not shown]\n")),
            (None, Some(n)) => {
                self.text.push_str(&format!("[more follows: read {shown} with offset={n} to read on]\n"))
            }
            (None, None) => {}
        }
        if self.text.is_empty() {
            self.text = format!("({shown} is empty)\n");
        }
        ToolOutput::ok(self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_single_line_costs_only_what_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("one-line.txt");
        std::fs::write(&big, "x".repeat(20 * 1024 * 1024)).unwrap();
        let judged = Judged::default();
        let (out, peak) = crate::alloc_probe::peak_during(|| read_file(dir.path(), "one-line.txt", 1, None, &judged));
        assert!(!out.is_error, "{}", &out.content[..100]);
        assert!(out.content.ends_with("[line 1 is longer than 50 KB and was cut: the rest of it is not shown]\n"));
        assert!(out.content.len() < MAX_BYTES + 200, "{}", out.content.len());
        assert!(peak < 512 * 1024, "a 20 MB line held {peak} bytes at once");
        // A cut line with more after it says both.
        std::fs::write(&big, format!("{}\nsecond\n", "y".repeat(60 * 1024))).unwrap();
        let out = read_file(dir.path(), "one-line.txt", 1, None, &judged);
        assert!(
            out.content.ends_with(
                "[line 1 is longer than 50 KB and was cut; more follows: read one-line.txt with offset=2 to read on]\n"
            ),
            "{}",
            &out.content[out.content.len() - 120..]
        );
        assert_eq!(read_file(dir.path(), "one-line.txt", 2, None, &judged).content, "second\n");
        // Lines skipped before the offset are not kept either.
        let (out, peak) = crate::alloc_probe::peak_during(|| read_file(dir.path(), "one-line.txt", 3, None, &judged));
        assert!(out.is_error && out.content.contains("past the end of one-line.txt (2 lines)"), "{out:?}");
        assert!(peak < 512 * 1024, "{peak}");
        // A multi-byte character is not split by the cut.
        std::fs::write(&big, "é".repeat(40 * 1024)).unwrap();
        let out = read_file(dir.path(), "one-line.txt", 1, None, &judged);
        assert!(!out.content.contains('\u{fffd}'), "no broken character");
    }
}
