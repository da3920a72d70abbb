//! `glrs-sessions diff`, `blame` and `log` (SPEC 24): what a session
//! changed, which session wrote a line, which sessions changed a path.

use std::io::Write;

use anyhow::Result;

use super::{BlameArgs, DiffArgs, LogArgs, PROGRAM};
use crate::exit::ExitCode;
use crate::output::{field, shown, stdout_is_terminal};
use crate::provenance::{blame, diff, log};
use crate::store::Store;

/// `diff ID [N] [--stat] [--json]`.
pub fn diff(store: &Store, args: &DiffArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let turn = args.n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let found = crate::cli::block_on(async { Ok(diff::diff(store, &at, turn).await?) })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &found)?;
        writeln!(out)?;
        return Ok(ExitCode::Success);
    }
    if found.workspace.is_none() {
        crate::cli::warn(PROGRAM, &format!("{} has no checkpoints (they were off, or it changed no file)", at.id));
    }
    if args.stat {
        let terminal = stdout_is_terminal();
        for file in found.spans.iter().flat_map(|s| &s.files) {
            let path = shown(&field(&file.path), terminal).into_owned();
            writeln!(out, "{}\t{}\t{path}", file.added, file.removed)?;
        }
        return Ok(ExitCode::Success);
    }
    for span in &found.spans {
        out.write_all(span.patch.as_bytes())?;
    }
    Ok(ExitCode::Success)
}

/// `blame FILE [-L A,B] [--json]`: line, session, entry, time, prompt, text.
pub fn blame(store: &Store, args: &BlameArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let range = args.lines;
    let (lines, missing) = crate::cli::block_on(async { Ok(blame::blame(store, &args.file, range).await?) })?;
    let unknown = lines.iter().filter(|l| l.unknown).count();
    if missing > 0 || unknown > 0 {
        crate::cli::warn(
            PROGRAM,
            &format!(
                "{unknown} line(s) can no longer be attributed (shown as ?): the checkpoints of {missing} step(s) \
                 were removed by cleanup"
            ),
        );
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &lines)?;
        writeln!(out)?;
        return Ok(ExitCode::Success);
    }
    let terminal = stdout_is_terminal();
    let cell = |text: Option<String>, unknown: bool| match text {
        Some(t) => shown(&field(&t), terminal).into_owned(),
        None if unknown => "?".to_string(),
        None => "-".to_string(),
    };
    for l in lines {
        let cells = [
            l.line.to_string(),
            cell(l.session, l.unknown),
            cell(l.entry.map(|e| e.to_string()), l.unknown),
            cell(l.at, l.unknown),
            cell(l.prompt, l.unknown),
            shown(&field(&l.text), terminal).into_owned(),
        ];
        writeln!(out, "{}", cells.join("\t"))?;
    }
    Ok(ExitCode::Success)
}

/// `log PATH [--json]`: session, entry, time, added, removed, prompt.
pub fn log(store: &Store, args: &LogArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let rows = crate::cli::block_on(async { Ok(log::log(store, &args.path).await?) })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::Success);
    }
    let terminal = stdout_is_terminal();
    for r in rows {
        let prompt = shown(&field(&r.prompt), terminal).into_owned();
        writeln!(out, "{}\t{}\t{}\t+{}\t-{}\t{prompt}", r.session, r.entry, r.at, r.added, r.removed)?;
    }
    Ok(ExitCode::Success)
}

/// `-L A,B`: lines A to B, from 1.
pub fn parse_range(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = text.split_once(',').ok_or_else(|| format!("-L {text}: expected A,B (lines A to B, from 1)"))?;
    let number = |s: &str| s.trim().parse::<usize>().ok().filter(|n| *n >= 1);
    match (number(a), number(b)) {
        (Some(a), Some(b)) if a <= b => Ok((a, b)),
        _ => Err(format!("-L {text}: expected A,B with 1 <= A <= B")),
    }
}
