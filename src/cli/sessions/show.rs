//! `glrs-sessions show`: a session's transcript with entry numbers, readable
//! in a terminal or an fzf preview, or the raw file with `--json`.

use std::io::Write;

use anyhow::Result;
use serde_json::Value;

use super::ShowArgs;
use std::ops::Range;

use crate::exit::ExitCode;
use crate::output::{Style, count};
use crate::store::format::Doc;
use crate::store::{Entry, Parsed, Store};

pub fn run(store: &Store, args: &ShowArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    if args.json && args.from.is_none() && args.tail.is_none() {
        // The raw file, byte for byte as it is on disk now.
        out.write_all(&std::fs::read(&at.path)?)?;
        return Ok(ExitCode::Success);
    }
    // Entries found as lines, and only those shown are read (with --tail
    // or --from, found from the end backwards) and parsed.
    let from = args.from.unwrap_or(1).max(1);
    let (file, read_from, total) = if args.tail.is_none() && from == 1 {
        let file = store.read_lines(&at)?;
        let total = file.len();
        (file, 0, total as u64)
    } else {
        let first = |total: usize| {
            let total = total as u64;
            let mut first = from - 1;
            if let Some(tail) = args.tail {
                first = first.max(total.saturating_sub(tail));
            }
            usize::try_from(first.min(total)).unwrap_or(usize::MAX)
        };
        let recent = store.read_from(&at, first)?;
        (recent.lines, recent.first as u64, recent.total as u64)
    };
    let mut first = from;
    if let Some(tail) = args.tail {
        first = first.max(total.saturating_sub(tail) + 1);
    }
    // Entry n (from 1) is `file`'s entry n - 1 - read_from: every shown
    // one was read (`first` > `read_from`).
    let chosen = (first.max(read_from + 1)..=total).map(|n| (n, file.entry((n - 1 - read_from) as usize)));

    if args.json {
        let rows: Vec<Value> = chosen
            .map(|(n, raw)| serde_json::json!({"entry": n, "value": serde_json::from_str::<Value>(raw).unwrap_or(Value::Null)}))
            .collect();
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::Success);
    }

    let style = Style::detect();
    write_header(out, &file.doc, total, at.legacy, style)?;
    for (n, raw) in chosen {
        writeln!(out)?;
        write_entry(out, n, &Parsed::from_text(raw), style)?;
    }
    Ok(ExitCode::Success)
}

fn write_header(
    out: &mut dyn Write,
    file: &Doc<Vec<Range<usize>>>,
    total: u64,
    legacy: bool,
    style: Style,
) -> Result<()> {
    let text = |name| file.get_str(name).unwrap_or("");
    let mut first = format!("session {}", text("id"));
    if !text("title").is_empty() {
        first.push_str(&format!(" · {}", text("title")));
    }
    writeln!(out, "{}", style.bold(&first))?;
    let line = format!("created {} · updated {} · cwd {}", text("createdAt"), text("updatedAt"), text("cwd"));
    writeln!(out, "{}", style.plain(&line))?;
    let mut facts = vec![count(total, "entry", "entries")];
    facts.push(format!("context {}", count(file.get_u64("contextTokens").unwrap_or(0), "token", "tokens")));
    if !text("model").is_empty() {
        facts.push(format!("model {}", text("model")));
    }
    if !text("key").is_empty() {
        facts.push(format!("key {}", text("key")));
    }
    if let Some(parent) = file.get("parent") {
        let id = parent.get("id").and_then(Value::as_str).unwrap_or("?");
        match parent.get("entry").and_then(Value::as_u64) {
            Some(n) => facts.push(format!("forked from {id} at entry {n}")),
            None => facts.push(format!("forked from {id}")),
        }
    }
    if file.get("pinned").and_then(Value::as_bool) == Some(true) {
        facts.push("pinned".into());
    }
    if legacy {
        facts.push("legacy (read-only)".into());
    }
    writeln!(out, "{}", style.plain(&facts.join(" · ")))?;
    Ok(())
}

/// One entry: a numbered heading line, then its text, if any.
fn write_entry(out: &mut dyn Write, n: u64, entry: &Parsed, style: Style) -> Result<()> {
    let (head, body): (String, String) = match entry {
        Parsed::Known(e) => describe(e),
        Parsed::Other { kind, value, .. } => (kind.clone(), serde_json::to_string(value).unwrap_or_default()),
    };
    writeln!(out, "{}", style.bold(&format!("[{n}] {head} · {}", entry.at())))?;
    let body = body.trim_end();
    if !body.is_empty() {
        // Model and tool text: on a terminal its control sequences are shown, not obeyed.
        let body = if matches!(entry, Parsed::Known(Entry::Reasoning { .. })) {
            style.dim(body)
        } else {
            style.plain(body).into_owned()
        };
        writeln!(out, "{body}")?;
    }
    Ok(())
}

fn compact_json(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn describe(entry: &Entry) -> (String, String) {
    match entry {
        Entry::User { text, steer, internal, .. } => {
            let head = match internal {
                // Sent by glrs (the memory flush), never typed by the person.
                Some(why) => format!("glrs prompt ({why}, not typed)"),
                None if *steer => "user (steer)".into(),
                None => "user".into(),
            };
            (head, text.clone())
        }
        Entry::Assistant { text, model, tool_calls, stop_reason, .. } => {
            let mut body = text.to_string();
            for call in tool_calls {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(&format!("→ {} ({})", crate::tools::describe_call(&call.name, &call.input), call.id));
            }
            (format!("assistant · {model} · {stop_reason}"), body)
        }
        Entry::Reasoning { text, .. } => ("reasoning".into(), text.clone()),
        Entry::Tool { id, name, input, result, is_error, .. } => {
            let status = if *is_error { " · error" } else { "" };
            (format!("tool {name} ({id}){status}"), format!("{}\n{result}", crate::tools::describe_call(name, input)))
        }
        Entry::Usage {
            model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, ..
        } => {
            let mut head = format!(
                "usage · {model} · in {input_tokens} · out {output_tokens} · cache read {cache_read_tokens} · cache write {cache_write_tokens}"
            );
            if let Some(cost) = cost_usd {
                head.push_str(&format!(" · ${cost:.4}"));
            }
            (head, String::new())
        }
        Entry::Turn { messages, .. } => {
            (format!("turn · {}", count(messages.len() as u64, "message", "messages")), String::new())
        }
        Entry::Notice { text, .. } => ("notice".into(), text.clone()),
        Entry::Error { text, kind, .. } => (format!("error ({kind})"), text.clone()),
        Entry::Cleared { .. } => ("cleared · the replay starts after here".into(), String::new()),
        Entry::Compacted { brief, first_kept, tokens_before, tokens_after, model, artifact, instruction, .. } => {
            let mut head = format!(
                "compacted · kept from entry {first_kept} · {tokens_before} → {tokens_after} tokens · {model} · artifact {artifact}"
            );
            if let Some(instruction) = instruction {
                head.push_str(&format!(" · instruction: {instruction}"));
            }
            (head, brief.clone())
        }
        Entry::Custom { name, data, .. } => match crate::store::damage::line_of(data) {
            // A line of the file that was no entry, kept as it was read.
            Some((line, text)) if name == crate::store::damage::NAME => {
                (format!("damaged · line {line} of the file, kept as read, never sent to a model"), text.to_string())
            }
            _ => (format!("custom {name}"), compact_json(data)),
        },
        Entry::Checkpoint { commit, files, more_files, too_large, .. } => {
            let changed = count(files.len() as u64 + more_files, "file", "files");
            let short = commit.get(..12).unwrap_or(commit);
            let mut body = files.join("\n");
            if *more_files > 0 {
                body.push_str(&format!("\n… and {more_files} more"));
            }
            for path in too_large {
                body.push_str(&format!("\nleft out (over checkpoints.maxFileBytes): {path}"));
            }
            (format!("checkpoint · {short} · {changed} changed since the previous one"), body.trim_start().to_string())
        }
    }
}
