//! The Markdown form: the title, a line of facts, then one `##` heading
//! per message. Message text is kept as written (it is Markdown already);
//! tool calls and results are fenced, reasoning and briefs quoted.

use std::fmt::Write;

use super::{Transcript, pretty};
use crate::store::{Entry, Parsed};

pub(super) fn render(t: &Transcript) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&t.heading()));
    let mut facts = vec![format!("session `{}`", t.id)];
    facts.extend(t.facts.iter().map(|(label, value)| format!("{label} {}", code_span(value))));
    let _ = writeln!(out, "{}\n", facts.join(" · "));
    for (n, entry) in &t.entries {
        entry_md(&mut out, *n, entry);
    }
    out
}

fn entry_md(out: &mut String, n: u64, entry: &Parsed) {
    let at = super::readable_time(entry.at());
    let Parsed::Known(entry) = entry else {
        let Parsed::Other { kind, value, .. } = entry else { return };
        let _ = writeln!(out, "## [{n}] {} · {at}\n", one_line(kind));
        fenced(out, "json", &pretty(value));
        return;
    };
    match entry {
        Entry::User { text, steer, internal, .. } => {
            let what = match internal {
                Some(_) => "glrs prompt (memory flush, not typed)",
                None if *steer => "User (joined the running turn)",
                None => "User",
            };
            let _ = writeln!(out, "## [{n}] {what} · {at}\n");
            body(out, text);
        }
        Entry::Assistant { text, model, tool_calls, stop_reason, .. } => {
            let _ = writeln!(out, "## [{n}] Assistant · {model} · {at}\n");
            body(out, text);
            for call in tool_calls {
                let _ = writeln!(out, "Tool call `{}` ({}):\n", one_line(&call.name), code_span(&call.id));
                fenced(out, "json", &pretty(&call.input));
            }
            if !stop_reason.ended_normally() {
                let _ = writeln!(out, "*(stopped: {stop_reason})*\n");
            }
        }
        Entry::Reasoning { text, .. } => {
            let _ = writeln!(out, "## [{n}] Reasoning · {at}\n");
            quoted(out, text);
        }
        Entry::Tool { id, name, input, result, is_error, .. } => {
            let error = if *is_error { " · error" } else { "" };
            let _ = writeln!(out, "## [{n}] Tool result · `{}` ({}){error} · {at}\n", one_line(name), code_span(id));
            let _ = writeln!(out, "Input:\n");
            fenced(out, "json", &pretty(input));
            let _ = writeln!(out, "Result:\n");
            fenced(out, "text", result);
        }
        Entry::Notice { text, .. } => {
            let _ = writeln!(out, "## [{n}] Notice · {at}\n");
            body(out, text);
        }
        Entry::Error { text, kind, .. } => {
            let _ = writeln!(out, "## [{n}] Error ({kind}) · {at}\n");
            fenced(out, "text", text);
        }
        Entry::Cleared { .. } => {
            let _ = writeln!(out, "## [{n}] Cleared · {at}\n\nThe model started from nothing after here.\n");
        }
        Entry::Compacted { brief, first_kept, tokens_before, tokens_after, artifact, .. } => {
            let _ = writeln!(
                out,
                "## [{n}] Compacted · {at}\n\nEntries before {first_kept} were replaced by this brief \
                 ({tokens_before} → {tokens_after} tokens; artifact {}):\n",
                code_span(artifact)
            );
            quoted(out, brief);
        }
        Entry::Custom { name, data, .. } => {
            let _ = writeln!(out, "## [{n}] Custom `{}` · {at}\n", one_line(name));
            fenced(out, "json", &pretty(data));
        }
        // Workspace checkpoints are glrs's own bookkeeping, not conversation.
        Entry::Usage { .. } | Entry::Turn { .. } | Entry::Checkpoint { .. } => {}
    }
}

fn body(out: &mut String, text: &str) {
    let text = text.trim_end();
    if !text.is_empty() {
        let _ = writeln!(out, "{text}\n");
    }
}

fn quoted(out: &mut String, text: &str) {
    for line in text.trim_end().lines() {
        let _ = writeln!(out, "{}", if line.is_empty() { ">".to_string() } else { format!("> {line}") });
    }
    out.push('\n');
}

/// A fenced block whose fence is longer than any run of backticks inside.
fn fenced(out: &mut String, lang: &str, text: &str) {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    let _ = writeln!(out, "{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'));
}

/// An inline code span that holds any text (backticks included).
fn code_span(text: &str) -> String {
    let text = one_line(text);
    let ticks = "`".repeat(longest_run(&text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
