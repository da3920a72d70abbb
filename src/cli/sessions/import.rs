//! `glrs-sessions import`: `--from claude|codex|pi [PATH…]` brings other
//! agents' sessions into the store (SPEC 18); without `--from`, `import
//! FILE` puts back a chat's recovery file (SPEC 2, "Writing").
//!
//! stdout: one line per session made or grown, `id, source, entries,
//! title` (`--json`: an object a line); skipped lines, refused files and
//! notes on stderr, with a progress bar there on a terminal.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{ImportArgs, PROGRAM};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::import::{Existing, FileError, Imported, Job, Outcome, Status, Tool};
use crate::output::{field, shown, to_stderr};
use crate::store::Store;

/// Run `import`.
pub fn run(store: &Store, args: &ImportArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let Some(tool) = args.from else { return recovery(store, &args.paths, out) };
    let roots = if args.paths.is_empty() { vec![crate::import::default_root(tool)?] } else { args.paths.clone() };
    let mut code = ExitCode::Success;
    let mut files = Vec::new();
    for root in &roots {
        match crate::import::sources_under(root) {
            Ok(found) if found.is_empty() => {
                to_stderr(format_args!(
                    "{PROGRAM}: {}: nothing to import (no {} transcripts, *.jsonl, in it)",
                    root.display(),
                    tool.name()
                ));
            }
            Ok(found) => files.extend(found),
            Err(e) => {
                to_stderr(format_args!("{PROGRAM}: error: cannot read {}: {e}", root.display()));
                code = ExitCode::Failure;
            }
        }
    }
    let redactor = Config::load_env(&store.paths)?.redactor()?;
    let mut existing = Existing::load(store)?;
    let terminal = crate::output::stdout_is_terminal();
    let mut run = Run { out, json: args.json, terminal, progress: Progress::new(&files), code, unchanged: 0 };
    let mut job = Job { store, redactor: &redactor, dry_run: args.dry_run, orphans_too: false };
    // Children wait until their parents are in: a second pass takes them,
    // and then those whose parent was never imported, without `parent`.
    let mut waiting = Vec::new();
    for file in &files {
        run.progress.step(file);
        if run.one(&job, &mut existing, tool, file)?.is_some() {
            waiting.push(file.clone());
        }
    }
    job.orphans_too = true;
    for file in waiting {
        if let Some(missing) = run.one(&job, &mut existing, tool, &file)? {
            eprint!("{}", run.progress.clear());
            to_stderr(format_args!(
                "{PROGRAM}: note: {}: its parent ({} session {missing}) is not imported: imported without a parent",
                file.display(),
                tool.name()
            ));
        }
    }
    eprint!("{}", run.progress.clear());
    if run.unchanged > 0 {
        let sources = crate::output::count(run.unchanged as u64, "source", "sources");
        eprintln!("{PROGRAM}: {sources} unchanged since imported");
    }
    Ok(run.code)
}

/// The state of one run: where rows go, the exit code so far.
struct Run<'a> {
    out: &'a mut dyn Write,
    json: bool,
    /// stdout is a terminal: rows are made [`crate::output::terminal_safe`].
    terminal: bool,
    progress: Progress,
    code: ExitCode,
    unchanged: usize,
}

impl Run<'_> {
    /// Import one file and report it; `Some(parent id)` when its parent's
    /// session is not in the store (it waits for it, on the first pass).
    fn one(&mut self, job: &Job, existing: &mut Existing, tool: Tool, file: &Path) -> Result<Option<String>> {
        let outcome = match crate::import::import_file(job, existing, tool, file) {
            Ok(outcome) => outcome,
            Err(e @ (FileError::WrongTool { .. } | FileError::NotATranscript { .. } | FileError::Failed(_))) => {
                eprint!("{}", self.progress.clear());
                to_stderr(format_args!("{PROGRAM}: error: {e}"));
                self.code = ExitCode::Failure;
                return Ok(None);
            }
        };
        let Outcome { sessions, skipped, unchanged, orphan } = outcome;
        if orphan.is_some() && !job.orphans_too {
            return Ok(orphan);
        }
        for line in &skipped {
            eprint!("{}", self.progress.clear());
            to_stderr(format_args!("{PROGRAM}: {}:{}: skipped: {}", file.display(), line.line, line.why));
            self.code = ExitCode::Failure;
        }
        if unchanged {
            self.unchanged += 1;
        }
        for session in &sessions {
            if let Status::Rewritten { was } = &session.status {
                eprint!("{}", self.progress.clear());
                to_stderr(format_args!(
                    "{PROGRAM}: note: {} changed since it was imported as {was}: imported as a new session",
                    session.source
                ));
            }
            self.row(session)?;
        }
        Ok(orphan)
    }

    fn row(&mut self, s: &Imported) -> Result<()> {
        let clear = self.progress.clear();
        eprint!("{clear}");
        if self.json {
            let status = match &s.status {
                Status::New => "new".to_string(),
                Status::Grown(n) => format!("grown by {n}"),
                Status::Rewritten { .. } => "rewritten".to_string(),
            };
            let record = serde_json::json!({
                "id": s.id, "source": s.source, "entries": s.entries, "title": s.title,
                "status": status, "parent": s.parent,
            });
            writeln!(self.out, "{record}")?;
        } else {
            // Titles and paths come from another agent's files: shown, never
            // obeyed, on a terminal.
            let cell = |text: &str| shown(&field(text), self.terminal).into_owned();
            writeln!(self.out, "{}\t{}\t{}\t{}", s.id, cell(&s.source), s.entries, cell(&s.title))?;
        }
        // Rows reach a pipe as they are made, not at the end of the run.
        self.out.flush()?;
        Ok(())
    }
}

/// A bar on stderr when it is a terminal, by bytes of source read.
struct Progress {
    on: bool,
    total: u64,
    done: u64,
    shown: bool,
}

impl Progress {
    fn new(files: &[PathBuf]) -> Progress {
        let total = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
        Progress { on: std::io::stderr().is_terminal(), total, done: 0, shown: false }
    }

    fn step(&mut self, file: &Path) {
        if !self.on {
            return;
        }
        let width = 20u64;
        let filled = (self.done * width).checked_div(self.total.max(1)).unwrap_or(0).min(width) as usize;
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mb = |n: u64| n as f64 / 1e6;
        eprint!(
            "\r\x1b[2K[{}{}] {:.1}/{:.1} MB {}",
            "#".repeat(filled),
            " ".repeat(width as usize - filled),
            mb(self.done),
            mb(self.total),
            crate::output::terminal_safe(&name)
        );
        let _ = std::io::stderr().flush();
        self.shown = true;
        self.done += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    }

    /// What clears the bar's line before a message (nothing off a terminal).
    fn clear(&mut self) -> &'static str {
        if std::mem::take(&mut self.shown) { "\r\x1b[2K" } else { "" }
    }
}

/// `import FILE`: a chat's recovery file back into its session.
fn recovery(store: &Store, paths: &[PathBuf], out: &mut dyn Write) -> Result<ExitCode> {
    let [file] = paths else {
        let hint = "give one recovery FILE, or --from claude|codex|pi [PATH...] to import another agent's sessions";
        return Err(crate::cli::UsageError(hint.into()).into());
    };
    let (id, count) = store.import_recovery(file)?;
    let entries = crate::output::count(count as u64, "entry", "entries");
    let file = file.display().to_string();
    writeln!(out, "{id}: {entries} imported from {}", shown(&file, crate::output::stdout_is_terminal()))?;
    Ok(ExitCode::Success)
}
