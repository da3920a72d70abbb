//! `write` and `edit`. Both replace a file atomically (`open::replace`):
//! the old file stays whole until the new one is, on a full disk too. The
//! path is resolved before it is judged, so a symlink is followed: the
//! file it leads to is what rules and prompts name and what is replaced,
//! and the link stays a link. The preview shown at a permission prompt
//! reads at most 1 MB of a regular file, and only when someone is asked.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::open::{OpenError, Replaced};
use super::{Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use super::{binary_kind, checked_target, open, open_error, path_of, real, spec};
use crate::provider::ToolSpec;
use crate::runtime::off_thread;
use crate::tools::{Sandboxing, resolve_path};

/// The most of a file a permission prompt's diff reads.
const PREVIEW_BYTES: u64 = 1024 * 1024;
/// The largest file `edit` changes (it holds the file and the new text).
const EDIT_BYTES: u64 = 64 * 1024 * 1024;

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

/// The text of the file at `path` for a prompt's diff: `Ok(None)` when it
/// does not exist, `Err` with what to show instead of a diff.
fn preview_text(cwd: &Path, path: &str) -> Result<Option<String>, String> {
    let target = real::Target::resolve(cwd, path).map_err(|e| format!("({path}: {e})"))?;
    let (mut file, size) = match open::open_regular(&target.real) {
        Ok(opened) => opened,
        Err(OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(OpenError::NotRegular(kind)) => return Err(format!("({path} is {kind}: it will not be replaced)")),
        Err(OpenError::Io(e)) => return Err(format!("({path}: {e})")),
    };
    let (bytes, more) = open::read_capped(&mut file, PREVIEW_BYTES, size).map_err(|e| format!("({path}: {e})"))?;
    if more {
        return Err(format!("({path} is over 1 MB: no diff is shown)"));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| format!("({path} is not UTF-8 text: no diff is shown)"))
}

/// The result of a failed replacement.
fn replace_error(shown: &str, e: &OpenError, tool: &str) -> ToolOutput {
    open_error("write", shown, e, &format!("{tool} needs a file path"))
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
        path_of(input).map(|p| real::subject(cwd, p))
    }
    fn sandboxing(&self, input: &Value, cwd: &Path) -> Sandboxing {
        path_of(input).map_or(Sandboxing::None, |p| Sandboxing::Writes(resolve_path(cwd, p)))
    }
    fn summary(&self, input: &Value) -> String {
        let bytes = input.get("content").and_then(Value::as_str).map_or(0, str::len);
        format!("{} ({bytes} bytes)", path_of(input).unwrap_or("?"))
    }
    fn preview(&self, input: &Value, cwd: &Path) -> Option<String> {
        let path = path_of(input)?;
        let new = input.get("content").and_then(Value::as_str)?;
        match preview_text(cwd, path) {
            Ok(old) => Some(short_diff(path, old.as_deref().unwrap_or(""), new, 20)),
            Err(instead) => Some(instead),
        }
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: WriteInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |_| {
                let target = match checked_target(&cwd, &judged, "write", &input.path, false) {
                    Ok(t) => t,
                    Err(refused) => return refused,
                };
                let (path, bytes) = (&input.path, input.content.len());
                match open::replace(&target.real, input.content.as_bytes()) {
                    Ok(Replaced::Existing) => ToolOutput::ok(format!("wrote {bytes} bytes to {path}")),
                    Ok(Replaced::Created) => ToolOutput::ok(format!("created the file with {bytes} bytes to {path}")),
                    Err(e) => replace_error(path, &e, "write"),
                }
            })
            .await
            .unwrap_or_else(ToolOutput::from)
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

/// The body of `edit`, on a blocking thread.
fn edit_file(cwd: &Path, judged: &super::Judged, input: &EditInput) -> ToolOutput {
    let shown = input.path.as_str();
    // `edit` shows lines of the file back: what may not be read may not be edited.
    let target = match checked_target(cwd, judged, "edit", shown, true) {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    let read = open::open_regular(&target.real)
        .and_then(|(mut file, size)| Ok(open::read_capped(&mut file, EDIT_BYTES, size)?));
    let bytes = match read {
        Ok((_, true)) => {
            return ToolOutput::error(format!("{shown} is over 64 MB: edit changes smaller files (use bash)"));
        }
        Ok((bytes, false)) => bytes,
        Err(e) => return open_error("edit", shown, &e, "edit changes files"),
    };
    if let Some(kind) = binary_kind(&bytes[..bytes.len().min(8 * 1024)]) {
        return ToolOutput::error(format!("{shown} is a binary file ({kind}): edit changes text files only"));
    }
    let Ok(old) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!("{shown} is not UTF-8 text: edit changes UTF-8 files only"));
    };
    let new = match apply_edit(shown, &old, input) {
        Ok(n) => n,
        Err(e) => return e,
    };
    match open::replace(&target.real, new.as_bytes()) {
        Ok(_) => ToolOutput::ok(short_diff(shown, &old, &new, 60)),
        Err(e) => replace_error(shown, &e, "edit"),
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
        path_of(input).map(|p| real::subject(cwd, p))
    }
    fn sandboxing(&self, input: &Value, cwd: &Path) -> Sandboxing {
        path_of(input).map_or(Sandboxing::None, |p| Sandboxing::Writes(resolve_path(cwd, p)))
    }
    fn summary(&self, input: &Value) -> String {
        path_of(input).unwrap_or("?").to_string()
    }
    fn preview(&self, input: &Value, cwd: &Path) -> Option<String> {
        let input: EditInput = parse_input(input).ok()?;
        let old = match preview_text(cwd, &input.path) {
            Ok(old) => old?,
            Err(instead) => return Some(instead),
        };
        let new = apply_edit(&input.path, &old, &input).ok()?;
        Some(short_diff(&input.path, &old, &new, 20))
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: EditInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let (cwd, judged) = (ctx.cwd.to_path_buf(), ctx.judged.clone());
            off_thread(move |_| edit_file(&cwd, &judged, &input)).await.unwrap_or_else(ToolOutput::from)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_bounded_and_only_of_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A sparse 4 GB file: reading it whole would take 4 GB.
        let huge = std::fs::File::create(d.join("huge.txt")).unwrap();
        huge.set_len(4 << 30).unwrap();
        let (preview, peak) = crate::alloc_probe::peak_during(|| {
            Write.preview(&json!({"path": "huge.txt", "content": "small\n"}), d).unwrap()
        });
        assert_eq!(preview, "(huge.txt is over 1 MB: no diff is shown)");
        assert!(peak < 3 * PREVIEW_BYTES as usize, "the preview held {peak} bytes");
        let zero = Write.preview(&json!({"path": "/dev/zero", "content": "x"}), d).unwrap();
        assert_eq!(zero, "(/dev/zero is a character device: it will not be replaced)");
        let edit = json!({"path": "/dev/zero", "oldText": "a", "newText": "b"});
        assert!(Edit.preview(&edit, d).unwrap().contains("character device"));
        let new = Write.preview(&json!({"path": "new.txt", "content": "hello\n"}), d).unwrap();
        assert!(new.contains("+hello"), "{new}");
    }
}
