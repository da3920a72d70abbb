//! Sessions from other agents (SPEC section 18): readers that turn a
//! Claude Code, Codex or pi transcript into glrs entries, and the import
//! that hands them to the store. The readers know only their source's
//! lines and the entry types; the store knows none of them (it is handed
//! finished session files and appends, like any writer).

mod build;
mod claude;
mod codex;
mod pi;
mod run;

use serde_json::Value;

use crate::store::Entry;
pub use run::{Existing, FileError, Imported, Job, Outcome, Status, default_root, import_file, sources_under};

/// The agent a transcript comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Tool {
    /// Claude Code: ~/.claude/projects/<cwd>/<uuid>.jsonl
    Claude,
    /// Codex: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl
    Codex,
    /// pi (and OpenClaw): ~/.pi/agent/sessions/…/*.jsonl
    Pi,
}

impl Tool {
    /// The name `--from` takes and `importedFrom.tool` records.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Claude => "claude",
            Tool::Codex => "codex",
            Tool::Pi => "pi",
        }
    }

    /// The tool whose transcript `line` (a source's first JSON line) looks
    /// like, if any: what tells a wrong `--from` from a damaged file.
    pub fn sniff(line: &Value) -> Option<Tool> {
        let kind = line.get("type").and_then(Value::as_str);
        let has = |name: &str| line.get(name).is_some();
        match kind {
            Some("session") if has("cwd") || has("version") => Some(Tool::Pi),
            Some("session_meta" | "response_item" | "turn_context" | "event_msg" | "compacted") if has("payload") => {
                Some(Tool::Codex)
            }
            _ if has("sessionId") || has("uuid") || has("leafUuid") => Some(Tool::Claude),
            Some("summary" | "file-history-snapshot" | "queue-operation") => Some(Tool::Claude),
            // Codex's older layout: a header line without `type`.
            None if has("id") && has("timestamp") && (has("instructions") || has("git")) => Some(Tool::Codex),
            _ => None,
        }
    }
}

/// Where a unit's parent is.
#[derive(Debug, Clone, PartialEq)]
pub enum Parent {
    /// A branch of the same file's tree (pi's, Claude Code's `uuid` tree):
    /// a fork, holding that unit's entries 1..`entry` before its own, as
    /// `glrs-fork` writes one (SPEC 8), so that its context is the whole
    /// conversation.
    Fork {
        /// The unit's key (`None`: the file's main session).
        key: Option<String>,
        /// The branch point: how many of that unit's entries it holds.
        entry: usize,
    },
    /// A subagent of another unit of the same file (an older Claude Code
    /// sidechain), started after its entry `entry`: a child with a context
    /// of its own.
    Unit {
        /// The unit's key (`None`: the file's main session).
        key: Option<String>,
        /// The branch point.
        entry: usize,
    },
    /// The session imported from another source of the same tool (a Claude
    /// Code subagent's session, a Codex thread's spawner), at the time the
    /// child began.
    Source {
        /// The other source's id.
        id: String,
        /// The id of the tool call that started the child, when the source
        /// says: the child then forks where that call is, in whichever
        /// session of the other source holds it (a branch, maybe).
        call: Option<String>,
        /// A subagent (a child with a context of its own, SPEC 20), not a
        /// fork that copied the other's history into its source.
        subagent: bool,
    },
}

/// One glrs session made from (part of) a source file.
#[derive(Debug, Clone)]
pub struct Unit {
    /// `None` for the file's main session, else what tells this one apart
    /// within the file (a pi branch's leaf id, a sidechain's agent id).
    pub key: Option<String>,
    /// The source's own id (a session or thread id).
    pub source_id: String,
    /// The entries, in order.
    pub entries: Vec<Entry>,
    /// The working folder the source ran in.
    pub cwd: String,
    /// The first time in the source.
    pub created_at: String,
    /// The last time in the source.
    pub updated_at: String,
    /// The first real user prompt's line, or the source's own title.
    pub title: Option<String>,
    /// `provider/model-id`, the last the source used.
    pub model: Option<String>,
    /// The unit it continues, if any.
    pub parent: Option<Parent>,
}

/// A line that could not be imported.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// Its line number, from 1.
    pub line: usize,
    /// Why.
    pub why: String,
}

/// What a reader made of one file.
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// The source's format version, when it says one.
    pub version: Option<String>,
    /// The sessions, the file's main one first.
    pub units: Vec<Unit>,
    /// Lines skipped.
    pub skipped: Vec<Skipped>,
}

/// A source's lines, each parsed, with its number: what every reader walks.
/// Blank lines are left out; a line that is not JSON is recorded as skipped.
fn json_lines(bytes: &[u8], skipped: &mut Vec<Skipped>) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(value) if value.is_object() => out.push((i + 1, value)),
            Ok(_) => skipped.push(Skipped { line: i + 1, why: "not a JSON object".into() }),
            Err(e) => skipped.push(Skipped { line: i + 1, why: format!("not JSON: {e}") }),
        }
    }
    out
}

/// Read a source of `tool` from its bytes.
pub fn read(tool: Tool, path: &std::path::Path, bytes: &[u8]) -> Read {
    let mut skipped = Vec::new();
    let lines = json_lines(bytes, &mut skipped);
    let mut read = match tool {
        Tool::Claude => claude::read(path, lines),
        Tool::Codex => codex::read(path, lines),
        Tool::Pi => pi::read(path, lines),
    };
    read.skipped.extend(skipped);
    read.skipped.sort_by_key(|s| s.line);
    read
}

/// A source time as the store writes it; `None` when it is not a time.
fn time_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(text) => text.parse::<jiff::Timestamp>().ok().map(crate::time::format_ts),
        Value::Number(n) => {
            n.as_i64().and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok()).map(crate::time::format_ts)
        }
        _ => None,
    }
}

/// The text of a content value: a string, or the `text` of its blocks
/// (images and other media as a `[image]` mark), joined by blank lines.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts: Vec<String> = Vec::new();
            for block in blocks {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                let text = block.get("text").and_then(Value::as_str);
                match (kind, text) {
                    (_, Some(text)) => parts.push(text.to_string()),
                    ("image" | "input_image" | "document", _) => parts.push(format!("[{kind}]")),
                    (_, None) => {
                        if let Some(inner) = block.get("content") {
                            parts.push(content_text(Some(inner)));
                        }
                    }
                }
            }
            parts.join("\n\n")
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The file's name, for a source without an id of its own.
fn file_stem(path: &std::path::Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The text of a string field.
fn text_of(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tool_is_told_from_its_lines() {
        let cases = [
            (json!({"type": "session", "version": 3, "id": "x", "cwd": "/w"}), Some(Tool::Pi)),
            (json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}), Some(Tool::Codex)),
            (json!({"id": "x", "timestamp": "t", "instructions": null}), Some(Tool::Codex)),
            (json!({"type": "user", "uuid": "u", "sessionId": "s"}), Some(Tool::Claude)),
            (json!({"type": "summary", "summary": "s", "leafUuid": "u"}), Some(Tool::Claude)),
            (json!({"type": "message", "id": "a", "parentId": null}), None),
        ];
        for (line, tool) in cases {
            assert_eq!(Tool::sniff(&line), tool, "{line}");
        }
    }

    #[test]
    fn a_line_that_is_not_json_is_skipped_with_its_number() {
        let mut skipped = Vec::new();
        let lines = json_lines(b"{\"a\":1}\n\nnot json\n[1]\n{\"b\":2}\r\n", &mut skipped);
        assert_eq!(lines.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 5]);
        assert_eq!(skipped.iter().map(|s| s.line).collect::<Vec<_>>(), [3, 4]);
    }
}
