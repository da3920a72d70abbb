//! `glrs-sessions grep`: search the text of every session's entries.

use std::io::Write;

use anyhow::Result;
use regex::RegexBuilder;
use serde::Serialize;
use serde_json::Value;

use super::{GrepArgs, PROGRAM};
use crate::exit::ExitCode;
use crate::output::{field, shown, stdout_is_terminal};
use crate::store::listing;
use crate::store::{Entry, Located, Parsed, Store};

/// One matching line.
#[derive(Debug, Serialize)]
struct Hit {
    id: String,
    entry: u64,
    #[serde(rename = "type")]
    kind: String,
    line: String,
}

/// Longest line shown, in characters: a minified file can be one huge line.
const MAX_LINE: usize = 300;

pub fn run(store: &Store, args: &GrepArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.ignore_case)
        .build()
        // Exit 2, as grep(1) does: 1 means only "nothing matched".
        .map_err(|e| crate::cli::UsageError(format!("invalid pattern {:?}: {e}", args.pattern)))?;
    // On a terminal, matched text shows its control sequences rather than obeying them.
    let terminal = stdout_is_terminal();
    let listing = listing::list(store)?;
    for problem in listing.all_problems() {
        crate::cli::warn(PROGRAM, problem);
    }
    let mut hits = Vec::new();
    for summary in &listing.sessions {
        let Ok(id) = crate::id::SessionId::parse(&summary.id) else {
            continue;
        };
        let at = Located { id, path: summary.path.clone(), legacy: summary.legacy };
        let loaded = match store.read(&at) {
            Ok(loaded) => loaded,
            Err(err) => {
                crate::cli::warn(PROGRAM, &err.report().to_string());
                continue;
            }
        };
        for (i, raw) in loaded.file.events.iter().enumerate() {
            let entry = Parsed::from_raw(raw);
            for text in searchable(&entry) {
                for line in text.lines().filter(|l| regex.is_match(l)) {
                    let hit = Hit {
                        id: summary.id.clone(),
                        entry: i as u64 + 1,
                        kind: entry.kind().to_string(),
                        line: clip(line.trim()),
                    };
                    if !args.json && !terminal {
                        let (kind, line) = (field(&hit.kind), field(&hit.line));
                        writeln!(out, "{}\t{}\t{kind}\t{line}", hit.id, hit.entry)?;
                    }
                    hits.push(hit);
                }
            }
        }
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &hits)?;
        writeln!(out)?;
    } else if terminal {
        // For people, the columns line up (all hits are known first).
        let table: Vec<Vec<String>> = hits
            .iter()
            .map(|h| {
                let (kind, line) = (field(&h.kind), field(&h.line));
                vec![
                    h.id.clone(),
                    h.entry.to_string(),
                    shown(&kind, true).into_owned(),
                    shown(&line, true).into_owned(),
                ]
            })
            .collect();
        crate::output::write_table(out, &["ID", "ENTRY", "TYPE", "LINE"], &table)?;
    }
    // Like grep(1): 1 when nothing matched, so scripts can test for it.
    Ok(if hits.is_empty() { ExitCode::NothingMatched } else { ExitCode::Success })
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// The texts of an entry a person would search. `turn` entries repeat the
/// turn's other entries, and `usage`/`cleared` hold no text, so they are
/// skipped; an unknown entry is searched as its JSON.
fn searchable(entry: &Parsed) -> Vec<String> {
    let json = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    match entry {
        Parsed::Known(e) => match e {
            Entry::User { text, .. }
            | Entry::Reasoning { text, .. }
            | Entry::Notice { text, .. }
            | Entry::Error { text, .. } => {
                vec![text.clone()]
            }
            Entry::Assistant { text, tool_calls, .. } => {
                let mut texts = vec![text.to_string()];
                texts.extend(tool_calls.iter().map(|c| format!("{} {}", c.name, json(&c.input))));
                texts
            }
            Entry::Tool { name, input, result, .. } => vec![format!("{name} {}", json(input)), result.clone()],
            Entry::Compacted { brief, instruction, .. } => {
                let mut texts = vec![brief.clone()];
                texts.extend(instruction.clone());
                texts
            }
            Entry::Custom { name, data, .. } => vec![format!("{name} {}", json(data))],
            Entry::Checkpoint { files, too_large, .. } => files.iter().chain(too_large).cloned().collect(),
            Entry::Usage { .. } | Entry::Turn { .. } | Entry::Cleared { .. } => Vec::new(),
        },
        Parsed::Other { value, .. } => vec![json(value)],
    }
}
