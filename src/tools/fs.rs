//! The file tools of SPEC 14: `read`, `write`, `edit` and `ls`. Paths are
//! relative to the session's cwd, `~` is expanded, absolute paths are
//! allowed. Every failure is an error result naming the path.

use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input, resolve_path, shown_path};
use crate::limits::{MAX_BYTES, MAX_LINES, floor_boundary};
use crate::provider::ToolSpec;

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), parameters }
}

fn io_error(action: &str, shown: &str, e: &std::io::Error) -> ToolOutput {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    ToolOutput::error(format!("cannot {action} {shown}: {why}"))
}

fn path_of(input: &Value) -> Option<&str> {
    input.get("path").and_then(Value::as_str)
}

/// The kind of a binary file from its first bytes, for the error `read`
/// gives; `None` when it looks like text.
pub fn binary_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"PK\x03\x04", "a ZIP archive"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"\x7fELF", "an ELF executable"),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
        (b"SQLite format 3", "an SQLite database"),
        (b"\x00asm", "a WebAssembly module"),
        (b"BZh", "a bzip2 archive"),
        (b"\xfd7zXZ", "an xz archive"),
        (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    ];
    if let Some((_, kind)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
        return Some(kind);
    }
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    head.contains(&0).then_some("binary data (it contains NUL bytes)")
}

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
        path_of(input).map(|p| shown_path(cwd, &resolve_path(cwd, p)))
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
            read_file(ctx.cwd, &input.path, input.offset.unwrap_or(1), input.limit)
        })
    }
}

/// The body of `read`: streams the file and stops once the limits are met,
/// so a large file costs only the part shown.
pub fn read_file(cwd: &Path, path: &str, offset: usize, limit: Option<usize>) -> ToolOutput {
    let full = resolve_path(cwd, path);
    let shown = path;
    if full.is_dir() {
        return ToolOutput::error(format!("{shown} is a folder: use ls to list it"));
    }
    let file = match std::fs::File::open(&full) {
        Ok(f) => f,
        Err(e) => return io_error("read", shown, &e),
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
    let want = limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut shown_lines = 0usize;
    let mut next: Option<usize> = None;
    let mut cut_line = false;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return io_error("read", shown, &e),
        }
        number += 1;
        if number < offset {
            continue;
        }
        if shown_lines == want {
            next = Some(number);
            break;
        }
        if line.contains(&0) {
            return ToolOutput::error(format!(
                "{shown} is a binary file (binary data at line {number}): read shows text files only"
            ));
        }
        let text = String::from_utf8_lossy(&line);
        if out.len() + text.len() > MAX_BYTES {
            if shown_lines == 0 {
                // One line longer than the limit: show its start.
                let end = floor_boundary(&text, MAX_BYTES);
                out.push_str(&text[..end]);
                out.push('\n');
                cut_line = true;
                next = Some(number + 1);
            } else {
                next = Some(number);
            }
            break;
        }
        out.push_str(&text);
        shown_lines += 1;
    }
    if number < offset && offset > 1 {
        return ToolOutput::error(format!("offset {offset} is past the end of {shown} ({number} lines)"));
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if let Some(n) = next {
        // Is there anything after what was shown?
        let more = !cut_line || reader.fill_buf().map(|b| !b.is_empty()).unwrap_or(false);
        if more {
            let why =
                if cut_line { format!("line {} is longer than 50 KB and was cut; ", n - 1) } else { String::new() };
            out.push_str(&format!("[{why}more follows: read {shown} with offset={n} to read on]\n"));
        }
    }
    if out.is_empty() {
        out = format!("({shown} is empty)\n");
    }
    ToolOutput::ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteInput {
    path: String,
    content: String,
}

/// A short unified diff for the REPL's prompt and `edit`'s result.
pub fn short_diff(shown: &str, old: &str, new: &str, max_lines: usize) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff.unified_diff().context_radius(2).header(shown, shown).to_string();
    let total = text.lines().count();
    if total <= max_lines {
        return text;
    }
    let mut kept: String = text.lines().take(max_lines).map(|l| format!("{l}\n")).collect();
    kept.push_str(&format!("… {} more diff lines\n", total - max_lines));
    kept
}

/// `write`: create or replace a file.
pub struct Write;

impl Tool for Write {
    fn name(&self) -> &str {
        "write"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn spec(&self) -> ToolSpec {
        spec(
            "write",
            "Create or replace a file with the given content (parent folders are created). Prefer edit for changing part of a file.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "the file, relative to the working directory, ~ or absolute"},
                "content": {"type": "string", "description": "the whole new content"}
            }, "required": ["path", "content"]}),
        )
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        path_of(input).map(|p| shown_path(cwd, &resolve_path(cwd, p)))
    }
    fn summary(&self, input: &Value) -> String {
        let bytes = input.get("content").and_then(Value::as_str).map_or(0, str::len);
        format!("{} ({bytes} bytes)", path_of(input).unwrap_or("?"))
    }
    fn preview(&self, input: &Value, cwd: &Path) -> Option<String> {
        let path = path_of(input)?;
        let new = input.get("content").and_then(Value::as_str)?;
        let old = std::fs::read_to_string(resolve_path(cwd, path)).unwrap_or_default();
        Some(short_diff(path, &old, new, 20))
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: WriteInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let full = resolve_path(ctx.cwd, &input.path);
            if full.is_dir() {
                return ToolOutput::error(format!("{} is a folder: write needs a file path", input.path));
            }
            let existed = full.exists();
            if let Some(parent) = full.parent()
                && let Err(e) = std::fs::create_dir_all(parent)
            {
                return io_error("create the folder for", &input.path, &e);
            }
            match std::fs::write(&full, input.content.as_bytes()) {
                Ok(()) => ToolOutput::ok(format!(
                    "{} {} bytes to {}",
                    if existed { "wrote" } else { "created the file with" },
                    input.content.len(),
                    input.path
                )),
                Err(e) => io_error("write", &input.path, &e),
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EditInput {
    path: String,
    old_text: String,
    new_text: String,
    replace_all: Option<bool>,
}

/// The text of a file after an edit, or the error the model reads.
fn apply_edit(shown: &str, text: &str, input: &EditInput) -> Result<String, ToolOutput> {
    if input.old_text.is_empty() {
        return Err(ToolOutput::error("oldText is empty: give the exact text to replace"));
    }
    let count = text.matches(input.old_text.as_str()).count();
    match count {
        0 => Err(ToolOutput::error(format!(
            "oldText not found in {shown}: it must match the file exactly, whitespace and line breaks included (read the file again)"
        ))),
        1 => Ok(text.replacen(input.old_text.as_str(), &input.new_text, 1)),
        _ if input.replace_all == Some(true) => Ok(text.replace(input.old_text.as_str(), &input.new_text)),
        n => Err(ToolOutput::error(format!(
            "oldText has {n} matches in {shown}: include more surrounding text so it occurs once, or set replaceAll"
        ))),
    }
}

/// `edit`: replace an exact piece of text in a file.
pub struct Edit;

impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn spec(&self) -> ToolSpec {
        spec(
            "edit",
            "Replace oldText with newText in a file. oldText must occur exactly once (or set replaceAll). Returns a short unified diff.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "the file, relative to the working directory, ~ or absolute"},
                "oldText": {"type": "string", "description": "the exact text to replace, whitespace included"},
                "newText": {"type": "string", "description": "the replacement"},
                "replaceAll": {"type": "boolean", "description": "replace every occurrence"}
            }, "required": ["path", "oldText", "newText"]}),
        )
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        path_of(input).map(|p| shown_path(cwd, &resolve_path(cwd, p)))
    }
    fn summary(&self, input: &Value) -> String {
        path_of(input).unwrap_or("?").to_string()
    }
    fn preview(&self, input: &Value, cwd: &Path) -> Option<String> {
        let input: EditInput = parse_input(input).ok()?;
        let old = std::fs::read_to_string(resolve_path(cwd, &input.path)).ok()?;
        let new = apply_edit(&input.path, &old, &input).ok()?;
        Some(short_diff(&input.path, &old, &new, 20))
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: EditInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let full = resolve_path(ctx.cwd, &input.path);
            let mut bytes = Vec::new();
            if let Err(e) = std::fs::File::open(&full).and_then(|mut f| f.read_to_end(&mut bytes)) {
                return io_error("edit", &input.path, &e);
            }
            if let Some(kind) = binary_kind(&bytes[..bytes.len().min(8 * 1024)]) {
                return ToolOutput::error(format!(
                    "{} is a binary file ({kind}): edit changes text files only",
                    input.path
                ));
            }
            let Ok(old) = String::from_utf8(bytes) else {
                return ToolOutput::error(format!("{} is not UTF-8 text: edit changes UTF-8 files only", input.path));
            };
            let new = match apply_edit(&input.path, &old, &input) {
                Ok(n) => n,
                Err(e) => return e,
            };
            if let Err(e) = std::fs::write(&full, new.as_bytes()) {
                return io_error("write", &input.path, &e);
            }
            ToolOutput::ok(short_diff(&input.path, &old, &new, 60))
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LsInput {
    path: Option<String>,
    limit: Option<usize>,
}

/// `ls`: a folder's entries, sorted, folders ending in `/`.
pub struct Ls;

impl Tool for Ls {
    fn name(&self) -> &str {
        "ls"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn needs_permission(&self) -> bool {
        false
    }
    fn spec(&self) -> ToolSpec {
        spec(
            "ls",
            "List a folder (default: the working directory): one entry a line, sorted, folders ending in /, hidden entries included.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "the folder"},
                "limit": {"type": "integer", "minimum": 1, "description": "at most this many entries (default 500)"}
            }}),
        )
    }
    fn subject(&self, input: &Value, cwd: &Path) -> Option<String> {
        Some(shown_path(cwd, &resolve_path(cwd, path_of(input).unwrap_or("."))))
    }
    fn summary(&self, input: &Value) -> String {
        path_of(input).unwrap_or(".").to_string()
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: LsInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let shown = input.path.as_deref().unwrap_or(".");
            let dir = resolve_path(ctx.cwd, shown);
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory || dir.is_file() => {
                    return ToolOutput::error(format!("{shown} is a file, not a folder: use read"));
                }
                Err(e) => return io_error("list", shown, &e),
            };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| {
                    let mut name = e.file_name().to_string_lossy().into_owned();
                    // `is_dir` follows links: a link to a folder lists as one.
                    if e.path().is_dir() {
                        name.push('/');
                    }
                    name
                })
                .collect();
            names.sort();
            if names.is_empty() {
                return ToolOutput::ok(format!("({shown} is empty)"));
            }
            let limit = input.limit.unwrap_or(500).max(1);
            let total = names.len();
            names.truncate(limit);
            let mut out = names.join("\n");
            if total > limit {
                out.push_str(&format!("\n[… {} more entries: raise limit to see them]", total - limit));
            }
            ToolOutput::ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Cancel;

    fn run(tool: &dyn Tool, dir: &Path, input: Value) -> ToolOutput {
        let cancel = Cancel::default();
        let ctx = ToolContext { cwd: dir, cancel: &cancel, session_id: "x", session_file: dir, output_dir: dir };
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(tool.run(&input, &ctx))
    }

    #[test]
    fn read_pages_and_refuses_binary() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lines: String = (1..=2_100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(d.join("long.txt"), &lines).unwrap();
        let out = run(&Read, d, json!({"path": "long.txt"}));
        assert!(!out.is_error && out.content.starts_with("line 1\n"));
        assert!(
            out.content.contains("line 2000\n[more follows: read long.txt with offset=2001"),
            "{}",
            &out.content[out.content.len() - 80..]
        );
        let out = run(&Read, d, json!({"path": "long.txt", "offset": 2099}));
        assert_eq!(out.content, "line 2099\nline 2100\n");
        let out = run(&Read, d, json!({"path": "long.txt", "offset": 10, "limit": 2}));
        assert_eq!(out.content, "line 10\nline 11\n[more follows: read long.txt with offset=12 to read on]\n");
        assert!(run(&Read, d, json!({"path": "long.txt", "offset": 3000})).content.contains("past the end"));
        let wide: String = (0..100).map(|i| format!("{i:03}{}\n", "y".repeat(1_000))).collect();
        std::fs::write(d.join("wide.txt"), &wide).unwrap();
        let out = run(&Read, d, json!({"path": "wide.txt"}));
        assert!(out.content.len() <= MAX_BYTES + 100 && out.content.contains("offset=51 "), "{}", out.content.len());
        std::fs::write(d.join("img.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        let out = run(&Read, d, json!({"path": "img.png"}));
        assert!(out.is_error && out.content.contains("a PNG image"), "{out:?}");
        let out = run(&Read, d, json!({"path": "missing.rs"}));
        assert!(out.is_error && out.content.contains("missing.rs: no such file"), "{out:?}");
        assert!(run(&Read, d, json!({"path": "."})).content.contains("is a folder"));
        assert!(run(&Read, d, json!({"file": "x"})).content.contains("bad input"));
    }

    #[test]
    fn write_edit_and_ls() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let out = run(&Write, d, json!({"path": "src/new/a.txt", "content": "one\ntwo\ntwo\n"}));
        assert_eq!(out, ToolOutput::ok("created the file with 12 bytes to src/new/a.txt"));
        let edit = |old: &str, new: &str, all: bool| {
            run(&Edit, d, json!({"path": "src/new/a.txt", "oldText": old, "newText": new, "replaceAll": all}))
        };
        let out = edit("three", "3", false);
        assert!(out.is_error && out.content.contains("not found"), "{out:?}");
        let out = edit("two", "2", false);
        assert!(out.is_error && out.content.contains("2 matches"), "{out:?}");
        let out = edit("one", "1", false);
        assert!(!out.is_error && out.content.contains("-one\n+1\n"), "{}", out.content);
        assert!(!edit("two", "2", true).is_error);
        assert_eq!(std::fs::read_to_string(d.join("src/new/a.txt")).unwrap(), "1\n2\n2\n");
        let out = run(&Edit, d, json!({"path": "nope.txt", "oldText": "a", "newText": "b"}));
        assert!(out.is_error && out.content.contains("nope.txt"));
        std::fs::write(d.join(".hidden"), "").unwrap();
        assert_eq!(run(&Ls, d, json!({})).content, ".hidden\nsrc/");
        assert_eq!(run(&Ls, d, json!({"path": "src", "limit": 1})).content, "new/");
        let out = run(&Ls, d, json!({"path": ".", "limit": 1}));
        assert!(out.content.contains("1 more entries"), "{out:?}");
        assert!(run(&Ls, d, json!({"path": "missing"})).is_error);
        let preview = Write.preview(&json!({"path": "src/new/a.txt", "content": "1\n2\n3\n"}), d).unwrap();
        assert!(preview.contains("+3"), "{preview}");
    }
}
