//! `glrs-sessions ls`.

use std::io::Write;

use anyhow::Result;

use super::{LsArgs, PROGRAM};
use crate::output::{field, stdout_is_terminal};
use crate::store::Store;
use crate::store::listing::{self, Summary};

pub fn run(store: &Store, args: &LsArgs, out: &mut dyn Write) -> Result<i32> {
    let listing = listing::list(store)?;
    for problem in &listing.problems {
        crate::cli::warn(PROGRAM, problem);
    }
    let cwd = if args.cwd { Some(std::env::current_dir()?.to_string_lossy().into_owned()) } else { None };
    let chosen: Vec<&Summary> = listing
        .sessions
        .iter()
        .filter(|s| !args.legacy || s.legacy)
        .filter(|s| cwd.as_ref().is_none_or(|c| &s.cwd == c))
        .filter(|s| args.key.as_ref().is_none_or(|k| s.key.as_ref() == Some(k)))
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();

    if args.json {
        serde_json::to_writer_pretty(&mut *out, &chosen)?;
        writeln!(out)?;
    } else if args.jsonl {
        for s in chosen {
            serde_json::to_writer(&mut *out, s)?;
            writeln!(out)?;
        }
    } else {
        let rows: Vec<(usize, &Summary)> =
            if args.tree { tree_order(&chosen) } else { chosen.iter().map(|s| (0, *s)).collect() };
        if stdout_is_terminal() && !rows.is_empty() && !args.tree {
            writeln!(out, "ID\tUPDATED\tENTRIES\tCONTEXT\tCWD\tTITLE")?;
        }
        for (depth, s) in rows {
            write_row(out, depth, s)?;
        }
    }
    Ok(0)
}

/// One plain line: `id, updatedAt, entries, contextTokens, cwd, title`; a
/// fork in a tree is indented under its parent, a legacy title marked.
fn write_row(out: &mut dyn Write, depth: usize, s: &Summary) -> std::io::Result<()> {
    let indent = if depth == 0 { String::new() } else { format!("{}└ ", "  ".repeat(depth - 1)) };
    let title = if s.legacy { format!("[legacy] {}", s.title).trim_end().to_string() } else { s.title.clone() };
    writeln!(
        out,
        "{indent}{}\t{}\t{}\t{}\t{}\t{}",
        s.id,
        field(&s.updated_at),
        s.entries,
        s.context_tokens,
        field(&s.cwd),
        field(&title)
    )
}

/// Sessions in lineage order: each root (newest first), then its forks
/// beneath it, depth first. A fork whose parent is not listed is a root.
fn tree_order<'a>(sessions: &[&'a Summary]) -> Vec<(usize, &'a Summary)> {
    let parent_of =
        |s: &Summary| s.parent.as_ref().and_then(|p| p.get("id")).and_then(|v| v.as_str()).map(str::to_string);
    let listed: std::collections::HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let mut out = Vec::new();
    fn visit<'a>(
        s: &'a Summary,
        depth: usize,
        sessions: &[&'a Summary],
        parent_of: &dyn Fn(&Summary) -> Option<String>,
        out: &mut Vec<(usize, &'a Summary)>,
    ) {
        if out.len() > sessions.len() {
            return; // a cycle in hand-edited files: stop
        }
        out.push((depth, s));
        for child in sessions.iter().filter(|c| parent_of(c).as_deref() == Some(s.id.as_str())) {
            visit(child, depth + 1, sessions, parent_of, out);
        }
    }
    for s in sessions {
        if parent_of(s).is_none_or(|p| !listed.contains(p.as_str())) {
            visit(s, 0, sessions, &parent_of, &mut out);
        }
    }
    out
}
