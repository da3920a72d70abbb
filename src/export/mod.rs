//! A session's transcript for reading elsewhere (SPEC section 11,
//! `glrs-sessions export`): Markdown with a heading per message, one
//! self-contained HTML page, or the entries as JSON Lines for `jq`.
//!
//! Export only reads a session file; it knows no provider, chat or CLI.

mod html;
mod markdown;

use serde_json::Value;

use crate::store::format::{self, SessionFile};
use crate::store::{Entry, Parsed};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown: a heading per message, tool calls and results fenced
    Md,
    /// One HTML page with its styles inline and nothing to fetch
    Html,
    /// One entry a line, as stored
    Jsonl,
}

impl Format {
    /// The format a file name implies by its extension, if any.
    pub fn from_path(path: &std::path::Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(Format::Md),
            "html" | "htm" => Some(Format::Html),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            _ => None,
        }
    }

    /// The usual extension for this format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Html => "html",
            Format::Jsonl => "jsonl",
        }
    }
}

/// The whole export of one session file.
pub fn export(file: &SessionFile, format: Format) -> String {
    match format {
        Format::Md => markdown::render(&Transcript::of(file)),
        Format::Html => html::render(&Transcript::of(file)),
        Format::Jsonl => jsonl(file),
    }
}

/// Each entry on one line, compact, fields in their stored order.
fn jsonl(file: &SessionFile) -> String {
    let mut out = String::new();
    for raw in &file.events {
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => out.push_str(&value.to_string()),
            // Unreachable for a file that parsed; kept whole rather than lost.
            Err(_) => out.push_str(&raw.get().replace('\n', " ")),
        }
        out.push('\n');
    }
    out
}

/// The header facts every readable form starts with.
struct Transcript {
    id: String,
    title: String,
    facts: Vec<(&'static str, String)>,
    /// Entries by number (from 1), the ones a reader wants: `usage` and
    /// `turn` entries repeat the others and are left out.
    entries: Vec<(u64, Parsed)>,
}

impl Transcript {
    fn of(file: &SessionFile) -> Transcript {
        let text = |name: &str| file.get_str(name).unwrap_or("").to_string();
        let entries: Vec<(u64, Parsed)> = file
            .events
            .iter()
            .enumerate()
            .map(|(i, raw)| (i as u64 + 1, Parsed::from_raw(raw)))
            .filter(|(_, e)| !matches!(e, Parsed::Known(Entry::Usage { .. } | Entry::Turn { .. })))
            .collect();
        let title = Some(text("title")).filter(|t| !t.is_empty()).unwrap_or_else(|| {
            entries
                .iter()
                .find_map(|(_, e)| match e {
                    Parsed::Known(Entry::User { text, .. }) => Some(format::title_from(text)),
                    _ => None,
                })
                .unwrap_or_default()
        });
        let mut facts = Vec::new();
        for (label, name) in
            [("created", "createdAt"), ("updated", "updatedAt"), ("cwd", "cwd"), ("model", "model"), ("key", "key")]
        {
            let value = text(name);
            if !value.is_empty() {
                facts.push((label, value));
            }
        }
        if let Some(parent) = file.get("parent") {
            let id = parent.get("id").and_then(Value::as_str).unwrap_or("?");
            let at = parent.get("entry").and_then(Value::as_u64).map(|n| format!(" at entry {n}")).unwrap_or_default();
            facts.push(("forked from", format!("{id}{at}")));
        }
        facts.push(("entries", file.events.len().to_string()));
        Transcript { id: text("id"), title, facts, entries }
    }

    /// The page's heading: the title, else the session id.
    fn heading(&self) -> String {
        if self.title.is_empty() { format!("Session {}", self.id) } else { self.title.clone() }
    }
}

/// `2026-11-29T15:24:19.412Z` as `2026-11-29 15:24:19 UTC`; anything else
/// as it is.
fn readable_time(at: &str) -> String {
    match (at.get(..10), at.get(11..19)) {
        (Some(day), Some(time)) if at.ends_with('Z') && at.as_bytes().get(10) == Some(&b'T') => {
            format!("{day} {time} UTC")
        }
        _ => at.to_string(),
    }
}

/// JSON for a person: pretty, fields in order.
fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests;
