//! `glrs-sessions checkpoints ID` and `glrs-sessions rewind ID N` (SPEC 19).

use std::io::Write;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{CheckpointsArgs, PROGRAM, RewindArgs};
use crate::checkpoint::Settings;
use crate::config::Config;
use crate::exit::ExitCode;
use crate::output::{field, shown, stdout_is_terminal};
use crate::rewind::{self, FilesRewound, short};
use crate::store::{Entry, Parsed, Store};

/// `checkpoints ID`: entry, at, commit, files changed since the previous, workspace.
pub fn list(store: &Store, args: &CheckpointsArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let file = store.read(&at)?.file;
    let (points, _) = rewind::scan(&file.events);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &points)?;
        writeln!(out)?;
        return Ok(ExitCode::Success);
    }
    let terminal = stdout_is_terminal();
    for p in points {
        let changed = p.files.len() as u64 + p.more_files;
        let cells = [
            p.entry.to_string(),
            p.at,
            short(&p.commit).to_string(),
            changed.to_string(),
            p.workspace.display().to_string(),
        ];
        let cells: Vec<String> = cells.iter().map(|c| shown(&field(c), terminal).into_owned()).collect();
        writeln!(out, "{}", cells.join("\t"))?;
    }
    Ok(ExitCode::Success)
}

/// What `rewind` did, for `--json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    session: String,
    entry: usize,
    /// The fork the conversation continues in (not with --files-only).
    fork: Option<String>,
    /// The files part; `None` when no tool changed files after the entry.
    files: Option<FilesRewound>,
    dry_run: bool,
    /// Whether the conversation part is left out: a dry run then says no fork either.
    files_only: bool,
}

/// `rewind ID N [--files-only] [--dry-run] [--json]`.
pub fn run(store: &Store, args: &RewindArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let file = store.read(&at)?.file;
    let total = file.events.len();
    let n = usize::try_from(args.n).unwrap_or(usize::MAX);
    if n == 0 || n > total {
        bail!(
            "entry {n} is out of range: session {} has {} (1-{total})",
            at.id,
            crate::output::count(total as u64, "entry", "entries")
        );
    }
    if !args.files_only && !matches!(Parsed::from_raw(&file.events[n - 1]), Parsed::Known(Entry::User { .. })) {
        bail!(
            "entry {n} of {} is not a user message: the conversation is rewound to before a user message \
             (glrs-sessions show {} lists them); --files-only rewinds the files to any entry",
            at.id,
            at.id
        );
    }
    let (points, _) = rewind::scan(&file.events);
    let settings = Settings::from_config(&Config::load_env(&store.paths)?);
    let files = match rewind::target(&points, n) {
        None => None,
        Some(target) => Some(crate::cli::block_on(rewind::rewind_files(store, &at, settings, target, args.dry_run))?),
    };
    let fork = if args.files_only || args.dry_run { None } else { Some(crate::fork::fork_before(store, &at, n)?.id) };
    let report = Report {
        session: at.id.to_string(),
        entry: n,
        fork: fork.map(|f| f.to_string()),
        files,
        dry_run: args.dry_run,
        files_only: args.files_only,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        print_plain(&report, out)?;
    }
    Ok(ExitCode::Success)
}

/// The changed paths on stdout (`M\tpath`), what was done on stderr.
fn print_plain(report: &Report, out: &mut dyn Write) -> Result<()> {
    let terminal = stdout_is_terminal();
    let id = &report.session;
    match &report.files {
        None => eprintln!(
            "{PROGRAM}: no checkpoint at or after entry {}: no tool changed files after it (or checkpoints were off); the files are left as they are",
            report.entry
        ),
        Some(f) => {
            for c in &f.files {
                writeln!(out, "{}\t{}", c.status.letter(), shown(&field(&c.path), terminal))?;
            }
            let count = crate::output::count(f.files.len() as u64, "file", "files");
            match f.undo_entry {
                None => eprintln!(
                    "{PROGRAM}: would rewind {count} to checkpoint {}; nothing changed (dry run)",
                    short(&f.checkpoint)
                ),
                Some(undo) => eprintln!(
                    "{PROGRAM}: rewound {count} to checkpoint {}; undo with: glrs-sessions rewind {id} {undo} --files-only",
                    short(&f.checkpoint)
                ),
            }
        }
    }
    if let Some(fork) = &report.fork {
        eprintln!(
            "{PROGRAM}: the conversation continues in {fork} (entries 1-{} of {id}): glrs-chat --resume {fork}",
            report.entry - 1
        );
    } else if report.dry_run && !report.files_only {
        eprintln!("{PROGRAM}: would fork entries 1-{} of {id} to continue the conversation", report.entry - 1);
    }
    Ok(())
}
