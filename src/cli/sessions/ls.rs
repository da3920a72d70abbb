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
        if stdout_is_terminal() && !chosen.is_empty() {
            writeln!(out, "ID\tUPDATED\tENTRIES\tCONTEXT\tCWD\tTITLE")?;
        }
        for s in chosen {
            let title = if s.legacy { format!("[legacy] {}", s.title).trim_end().to_string() } else { s.title.clone() };
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}\t{}",
                s.id,
                field(&s.updated_at),
                s.entries,
                s.context_tokens,
                field(&s.cwd),
                field(&title)
            )?;
        }
    }
    Ok(0)
}
