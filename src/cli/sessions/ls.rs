//! `glrs-sessions ls`: plain tab-separated rows when piped, aligned columns
//! under a header on a terminal, `--format` to choose the columns.

use std::borrow::Cow;
use std::io::Write;

use anyhow::{Context, Result};

use super::{LsArgs, PROGRAM};
use crate::exit::ExitCode;
use crate::output::{field, stdout_is_terminal, terminal_safe, write_table};
use crate::store::Store;
use crate::store::listing::{self, Summary};

/// A column `ls --format` can show, named as in `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The session id.
    Id,
    /// When it was last written.
    UpdatedAt,
    /// When it was created.
    CreatedAt,
    /// How many entries it has.
    Entries,
    /// Its `contextTokens`.
    ContextTokens,
    /// Its working folder.
    Cwd,
    /// Its title.
    Title,
    /// The session key that owns it.
    Key,
    /// The model it last used.
    Model,
    /// The session it was forked from.
    Parent,
    /// Whether it is pinned.
    Pinned,
    /// Whether it is in the legacy folder.
    Legacy,
    /// Its file.
    Path,
}

impl Column {
    const ALL: [(&'static str, Column, &'static str); 13] = [
        ("id", Column::Id, "ID"),
        ("updatedAt", Column::UpdatedAt, "UPDATED"),
        ("createdAt", Column::CreatedAt, "CREATED"),
        ("entries", Column::Entries, "ENTRIES"),
        ("contextTokens", Column::ContextTokens, "CONTEXT"),
        ("cwd", Column::Cwd, "CWD"),
        ("title", Column::Title, "TITLE"),
        ("key", Column::Key, "KEY"),
        ("model", Column::Model, "MODEL"),
        ("parent", Column::Parent, "PARENT"),
        ("pinned", Column::Pinned, "PINNED"),
        ("legacy", Column::Legacy, "LEGACY"),
        ("path", Column::Path, "PATH"),
    ];

    /// The default columns (SPEC section 11).
    pub const DEFAULT: [Column; 6] =
        [Column::Id, Column::UpdatedAt, Column::Entries, Column::ContextTokens, Column::Cwd, Column::Title];

    fn header(self) -> &'static str {
        Column::ALL.iter().find(|(_, c, _)| *c == self).map_or("", |(_, _, h)| h)
    }

    /// Write this column's value for one session, fit for one
    /// tab-separated field (see [`field`]); `title` is the title as listed
    /// (indented and marked by the caller).
    fn write(self, out: &mut Vec<u8>, s: &Summary, title: &str) {
        match self {
            Column::Id => put_field(out, &s.id),
            Column::UpdatedAt => put_field(out, &s.updated_at),
            Column::CreatedAt => put_field(out, &s.created_at),
            Column::Entries => put_number(out, s.entries),
            Column::ContextTokens => put_number(out, s.context_tokens),
            Column::Cwd => put_field(out, &s.cwd),
            Column::Title => put_field(out, title),
            Column::Key => put_field(out, s.key.as_deref().unwrap_or("")),
            Column::Model => put_field(out, s.model.as_deref().unwrap_or("")),
            Column::Parent => {
                put_field(out, s.parent.as_ref().and_then(|p| p.get("id")).and_then(|v| v.as_str()).unwrap_or(""))
            }
            Column::Pinned => out.extend_from_slice(if s.pinned { b"true" } else { b"false" }),
            Column::Legacy => out.extend_from_slice(if s.legacy { b"true" } else { b"false" }),
            Column::Path => put_field(out, &s.path.to_string_lossy()),
        }
    }
}

/// Append `text` as one tab-separated field: tabs and line breaks become
/// spaces, as [`field`] does, without a copy when there are none.
fn put_field(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if memchr::memchr3(b'\t', b'\n', b'\r', bytes).is_none() {
        out.extend_from_slice(bytes);
    } else {
        out.extend_from_slice(field(text).as_bytes());
    }
}

/// Append a number in decimal.
fn put_number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The columns `--format` chose, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns(pub Vec<Column>);

/// Parse `--format`: column names separated by commas.
pub fn parse_format(text: &str) -> Result<Columns, String> {
    let names = || Column::ALL.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ");
    let columns = text
        .split(',')
        .map(str::trim)
        .map(|name| {
            Column::ALL
                .iter()
                .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, c, _)| *c)
                .ok_or_else(|| format!("no column {name:?}; columns: {}", names()))
        })
        .collect::<Result<Vec<Column>, String>>()?;
    if columns.is_empty() {
        return Err(format!("name at least one column: {}", names()));
    }
    Ok(Columns(columns))
}

/// `glrs-sessions ls`.
pub fn run(store: &Store, args: &LsArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let listing = listing::list(store)?;
    for problem in listing.all_problems() {
        crate::cli::warn(PROGRAM, problem);
    }
    let cwd = if args.cwd {
        let dir = std::env::current_dir().context("--cwd: cannot read the current directory (removed?)")?;
        Some(dir.to_string_lossy().into_owned())
    } else {
        None
    };
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
        let columns = args.format.clone().map_or_else(|| Column::DEFAULT.to_vec(), |c| c.0);
        let rows: Vec<(usize, &Summary)> =
            if args.tree { tree_order(&chosen) } else { chosen.iter().map(|s| (0, *s)).collect() };
        let mut line = Vec::with_capacity(256);
        if stdout_is_terminal() {
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|(depth, s)| {
                    let title = title(*depth, s);
                    columns
                        .iter()
                        .map(|c| {
                            line.clear();
                            c.write(&mut line, s, &title);
                            // Titles and folders are text from sessions: on a
                            // terminal their control sequences are shown, not obeyed.
                            terminal_safe(&String::from_utf8_lossy(&line)).into_owned()
                        })
                        .collect()
                })
                .collect();
            write_aligned(out, &columns, &table)?;
            if table.is_empty() {
                // For people only: a pipe still reads an empty listing.
                let none = if listing.sessions.is_empty() { "no sessions yet" } else { "no sessions match" };
                writeln!(out, "{none}")?;
            }
        } else {
            // One buffer for every row: no allocation per session.
            for (depth, s) in rows {
                line.clear();
                let title = title(depth, s);
                for (i, c) in columns.iter().enumerate() {
                    if i > 0 {
                        line.push(b'\t');
                    }
                    c.write(&mut line, s, &title);
                }
                line.push(b'\n');
                out.write_all(&line)?;
            }
        }
    }
    // The program exits right after: freeing every summary one by one
    // would cost a listing of 10,000 sessions several percent of its time.
    std::mem::forget(listing);
    Ok(ExitCode::Success)
}

/// The title as listed: a fork in a tree indented under its parent (the
/// id field stays clean for `cut -f1`), a legacy session marked.
fn title(depth: usize, s: &Summary) -> Cow<'_, str> {
    if depth == 0 && !s.legacy {
        return Cow::Borrowed(&s.title);
    }
    let indent = if depth == 0 { String::new() } else { format!("{}└ ", "  ".repeat(depth - 1)) };
    let title = if s.legacy { format!("[legacy] {}", s.title).trim_end().to_string() } else { s.title.clone() };
    Cow::Owned(format!("{indent}{title}"))
}

/// On a terminal: a header and columns that line up ([`write_table`]).
fn write_aligned(out: &mut dyn Write, columns: &[Column], table: &[Vec<String>]) -> std::io::Result<()> {
    let headers: Vec<&str> = columns.iter().map(|c| c.header()).collect();
    write_table(out, &headers, table)
}

/// Sessions in lineage order: each root (newest first), then its forks
/// beneath it, depth first. A fork whose parent is not listed is a root.
/// Hand-edited files can make parents a cycle (or a session its own
/// parent): what no root reaches is listed after, as roots, so no session
/// is ever left out. Children are found through one map: linear in the
/// number of sessions.
fn tree_order<'a>(sessions: &[&'a Summary]) -> Vec<(usize, &'a Summary)> {
    use std::collections::{HashMap, HashSet};
    let parent_of = |s: &'a Summary| s.parent.as_ref().and_then(|p| p.get("id")).and_then(|v| v.as_str());
    let listed: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let mut children: HashMap<&str, Vec<&'a Summary>> = HashMap::new();
    for s in sessions {
        if let Some(parent) = parent_of(s) {
            children.entry(parent).or_default().push(s);
        }
    }
    let mut out = Vec::with_capacity(sessions.len());
    let mut seen: HashSet<&str> = HashSet::with_capacity(sessions.len());
    // Depth first without recursion: a deep chain of forks cannot
    // overflow the stack.
    let mut visit = |root: &'a Summary, out: &mut Vec<(usize, &'a Summary)>| {
        let mut stack = vec![(0usize, root)];
        while let Some((depth, s)) = stack.pop() {
            if !seen.insert(s.id.as_str()) {
                continue;
            }
            out.push((depth, s));
            if let Some(kids) = children.get(s.id.as_str()) {
                stack.extend(kids.iter().rev().map(|c| (depth + 1, *c)));
            }
        }
    };
    for s in sessions {
        if parent_of(s).is_none_or(|p| !listed.contains(p)) {
            visit(s, &mut out);
        }
    }
    for s in sessions {
        visit(s, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_name_json_fields() {
        assert_eq!(parse_format("id,title").unwrap().0, vec![Column::Id, Column::Title]);
        assert_eq!(parse_format("updatedAt, contextTokens").unwrap().0, vec![Column::UpdatedAt, Column::ContextTokens]);
        let err = parse_format("id,nope").unwrap_err();
        assert!(err.contains("\"nope\"") && err.contains("title"), "{err}");
    }

    #[test]
    fn aligned_columns_line_up_by_display_width() {
        let table = vec![
            vec!["aaaa0001".to_string(), "3".to_string(), "日本語".to_string()],
            vec!["bbbb0002".to_string(), "12345".to_string(), "x".to_string()],
        ];
        let mut out = Vec::new();
        write_aligned(&mut out, &[Column::Id, Column::Entries, Column::Title], &table).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "ID        ENTRIES  TITLE\n\
             aaaa0001  3        日本語\n\
             bbbb0002  12345    x\n"
        );
    }
}
