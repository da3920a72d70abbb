//! `glrs-sessions`: list, show, search, inspect and remove sessions
//! (SPEC section 11).

mod append;
mod export;
mod grep;
mod import;
mod lifecycle;
pub mod ls;
mod provenance;
mod rewind;
mod show;
mod status;

use std::io::Write;

use anyhow::Result;
use clap::{Args as ClapArgs, Parser, Subcommand};
use serde_json::Value;

use crate::error::StoreError;
use crate::exit::ExitCode;
use crate::store::Store;

/// The program's name, for messages.
pub const PROGRAM_NAME: &str = "glrs-sessions";
pub(crate) const PROGRAM: &str = PROGRAM_NAME;

/// List, show, search and remove glrs sessions.
#[derive(Debug, Parser)]
#[command(
    name = "glrs-sessions",
    version,
    about = "List, show, search and remove glrs sessions",
    long_about = "List, show, search and remove glrs sessions.\n\n\
        Sessions live in $XDG_DATA_HOME/glrs/sessions (else ~/.local/share/glrs/sessions); \
        sessions in the legacy glorious folder are listed too and never changed. \
        An ID may be any unique prefix of 4 or more hex characters.\n\n\
        Listings are tab-separated, one record a line with no header, when piped (glrs-sessions ls | fzf), \
        and JSON with --json.",
    after_help = "Exit status: 0 success, 1 failure (grep: nothing matched), 2 usage error or invalid id, \
        4 session open in another program."
)]
pub struct Args {
    #[command(subcommand)]
    /// The subcommand.
    pub command: Command,
}

#[derive(Debug, Subcommand)]
/// The subcommands of glrs-sessions.
pub enum Command {
    /// List sessions, newest first: id, updatedAt, entries, contextTokens, cwd, title
    Ls(LsArgs),
    /// Print a session's transcript with entry numbers, or the raw file with --json
    Show(ShowArgs),
    /// Print what is known about a session: times, size, usage, artifacts, who has it open
    Status(StatusArgs),
    /// Search every session's entries: id, entry, type, line
    Grep(GrepArgs),
    /// Print the sessions folder, or the file of one session
    Path(PathArgs),
    /// Remove sessions with their artifacts (never one that is open)
    Rm(RmArgs),
    /// Pin a session, so that cleanup never removes it
    Pin(IdArg),
    /// Unpin a session
    Unpin(IdArg),
    /// The key map: key, session, updatedAt, the reset that applies next
    Keys(KeysArgs),
    /// Remove stale, excess and leftover files (session.maintenance in the config)
    Cleanup(CleanupArgs),
    /// Write a session's transcript as Markdown, one self-contained HTML page, or JSON Lines
    Export(ExportArgs),
    /// Import Claude Code, Codex or pi sessions (--from), or put back a chat's recovery file
    Import(ImportArgs),
    /// Add a program's own data (a custom entry, never sent to the model) or a notice
    Append(AppendArgs),
    /// List a session's checkpoints of the workspace: entry, at, commit, files changed, workspace
    Checkpoints(CheckpointsArgs),
    /// Go back to before a user message: the files as they were, and the conversation in a fork
    Rewind(RewindArgs),
    /// What a session's own steps changed in the workspace, as a diff git apply takes
    Diff(DiffArgs),
    /// Which session wrote each line of a file: line, session, entry, time, prompt, text
    Blame(BlameArgs),
    /// The sessions and turns that changed a file or folder, newest first, with lines added and removed
    Log(LogArgs),
    /// Rewrite a session whose file has damaged lines, each kept as a custom entry (the original saved as .bak)
    Repair(RepairArgs),
}

#[derive(Debug, ClapArgs)]
#[command(long_about = "What the session's own steps changed in the workspace, read from its checkpoints: a \
        unified diff in git's format (git apply takes it), whole or for the turn of user message N. Changes \
        anyone else made between the session's steps (a person between turns, another program) are not the \
        session's and are left out: where they fall, the diff starts a new part against the state the session's \
        next step found.")]
/// Arguments of `diff`.
pub struct DiffArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Only the turn of this user message (its entry number, as show prints it)
    #[arg(value_parser = clap::value_parser!(u64).range(1..))]
    pub n: Option<u64>,
    /// Lines added and removed per file (added, removed, path), as git diff --numstat
    #[arg(long)]
    pub stat: bool,
    /// Print a JSON object: the spans with their files and patches
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
#[command(long_about = "For each line of FILE as it is now: the session, the turn (entry of its user message), \
        the time and the first line of the prompt of the step that last wrote it, over every session with \
        checkpoints of the workspace, in time order (git blame over the checkpoints). A line no session wrote \
        (a person's, or one changed since the newest checkpoint) shows - ; a turn undone by a rewind owns \
        nothing; a line written where cleanup removed the checkpoints shows ? and is counted on stderr.")]
/// Arguments of `blame`.
pub struct BlameArgs {
    /// The file
    pub file: std::path::PathBuf,
    /// Only lines A to B (from 1)
    #[arg(short = 'L', value_name = "A,B", value_parser = provenance::parse_range)]
    pub lines: Option<(usize, usize)>,
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `log`.
pub struct LogArgs {
    /// The file or folder
    pub path: std::path::PathBuf,
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
#[command(long_about = "Rewrite a session whose file has damaged lines (a line that is no entry: a hand edit, a \
        disk error). Every program reads past such a line already (show prints it as damaged, no model is sent \
        it); repair makes the file whole again: each damaged line becomes a custom entry named damaged, in its \
        place, holding its line number and text, so nothing is dropped and entry numbers stay as they were. \
        The original file is kept beside the session as <id>.json.bak (.bak.2, … when one exists). A sound \
        file is left alone.")]
/// Arguments of `repair`.
pub struct RepairArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Print a JSON object: id, lines (the damaged lines' numbers), backup
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `checkpoints`.
pub struct CheckpointsArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
#[command(long_about = "Go back to before entry N (a user message; glrs-sessions show prints the numbers): the files \
        of the workspace as the checkpoint after it recorded them (files changed since put back, created since \
        removed, deleted since restored; ignored, excluded and too-large files and everything outside the \
        workspace untouched), and the conversation forked up to just before it (the original stays whole). The \
        present is checkpointed first, so the rewind can itself be undone: the command prints how. A session \
        open in a chat is refused (exit 4).")]
/// Arguments of `rewind`.
pub struct RewindArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// The entry to go back to before (a user message; any entry with --files-only)
    #[arg(value_parser = clap::value_parser!(u64).range(1..))]
    pub n: u64,
    /// Only the files: no fork of the conversation
    #[arg(long)]
    pub files_only: bool,
    /// List each file that would change (M, A, D) and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print a JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["custom", "notice"]))]
/// Arguments of `append`.
pub struct AppendArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Append a custom entry with this name; its data is the JSON argument (- reads it from stdin), else null
    #[arg(long, value_name = "NAME")]
    pub custom: Option<String>,
    /// Append a notice with this text
    #[arg(long, value_name = "TEXT")]
    pub notice: Option<String>,
    /// The custom entry's data: JSON text, or - to read it from stdin
    #[arg(value_name = "JSON|-", conflicts_with = "notice")]
    pub data: Option<String>,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `export`.
pub struct ExportArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// md: a heading per message; html: one page, nothing to fetch; jsonl: one entry a line
    /// [default: from the -o file's extension, else md]
    #[arg(long, value_enum)]
    pub format: Option<crate::export::Format>,
    /// Write to FILE (created 0600) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `import`.
pub struct ImportArgs {
    /// Import the sessions of this agent (pi also reads OpenClaw's); without it, FILE is a
    /// recovery file the chat named (glrs-recovery-ID-TIME.json)
    #[arg(long, value_enum, value_name = "TOOL")]
    pub from: Option<crate::import::Tool>,
    /// Transcript files, or folders searched for *.jsonl below them [default: the agent's own
    /// store: ~/.claude/projects, $CODEX_HOME/sessions else ~/.codex/sessions, ~/.pi/agent/sessions]
    #[arg(value_name = "PATH")]
    pub paths: Vec<std::path::PathBuf>,
    /// Say what would be imported; write nothing
    #[arg(long, requires = "from")]
    pub dry_run: bool,
    /// Print one JSON object a line: id, source, entries, title, status, parent
    #[arg(long, requires = "from")]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `keys`.
pub struct KeysArgs {
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `cleanup`.
pub struct CleanupArgs {
    /// Only say what would be removed (the default in "warn" mode)
    #[arg(long, conflicts_with = "enforce")]
    pub dry_run: bool,
    /// Remove, whatever the configured mode
    #[arg(long)]
    pub enforce: bool,
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `ls`.
pub struct LsArgs {
    /// Print a JSON array
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,
    /// Print one JSON object a line
    #[arg(long)]
    pub jsonl: bool,
    /// Only sessions started in the current directory
    #[arg(long)]
    pub cwd: bool,
    /// Only sessions of this key
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// At most this many sessions
    #[arg(short = 'n', value_name = "N")]
    pub limit: Option<usize>,
    /// Only sessions from the legacy glorious folder
    #[arg(long)]
    pub legacy: bool,
    /// Show lineage: each fork's title indented under its parent's
    #[arg(long)]
    pub tree: bool,
    /// Columns to print, comma-separated, from: id, updatedAt, createdAt, entries, contextTokens,
    /// cwd, title, key, model, parent, pinned, legacy, path
    #[arg(long, value_name = "COLUMNS", value_parser = ls::parse_format)]
    pub format: Option<ls::Columns>,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `show`.
pub struct ShowArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Print the raw session file (with --from/--tail: the chosen entries as a JSON array)
    #[arg(long)]
    pub json: bool,
    /// Start at entry N
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub from: Option<u64>,
    /// Only the last N entries
    #[arg(long, value_name = "N")]
    pub tail: Option<u64>,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `status`.
pub struct StatusArgs {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
    /// Print a JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `grep`.
pub struct GrepArgs {
    /// A regular expression (Rust regex syntax)
    pub pattern: String,
    /// Ignore case
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Print a JSON array
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `path`.
pub struct PathArgs {
    /// Session id or unique prefix (none: the sessions folder)
    #[arg(add = crate::cli::complete::ids())]
    pub id: Option<String>,
}

#[derive(Debug, ClapArgs)]
/// Arguments of `rm`.
pub struct RmArgs {
    /// Session ids or unique prefixes
    #[arg(required = true)]
    #[arg(add = crate::cli::complete::ids())]
    pub ids: Vec<String>,
}

#[derive(Debug, ClapArgs)]
/// One session id argument.
pub struct IdArg {
    /// Session id or unique prefix
    #[arg(add = crate::cli::complete::ids())]
    pub id: String,
}

/// Run `glrs-sessions` and return its exit code.
pub fn run(args: Args) -> Result<ExitCode> {
    let store = Store::from_env()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let code = match args.command {
        Command::Ls(a) => ls::run(&store, &a, &mut out)?,
        Command::Show(a) => show::run(&store, &a, &mut out)?,
        Command::Status(a) => status::run(&store, &a, &mut out)?,
        Command::Grep(a) => grep::run(&store, &a, &mut out)?,
        Command::Path(a) => path(&store, &a, &mut out)?,
        Command::Rm(a) => rm(&store, &a),
        Command::Pin(a) => pin(&store, &a.id, true)?,
        Command::Unpin(a) => pin(&store, &a.id, false)?,
        Command::Keys(a) => lifecycle::keys(&store, &a, &mut out)?,
        Command::Cleanup(a) => lifecycle::cleanup(&store, &a, &mut out)?,
        Command::Export(a) => export::run(&store, &a, &mut out)?,
        Command::Append(a) => append::run(&store, &a)?,
        Command::Checkpoints(a) => rewind::list(&store, &a, &mut out)?,
        Command::Rewind(a) => rewind::run(&store, &a, &mut out)?,
        Command::Import(a) => import::run(&store, &a, &mut out)?,
        Command::Diff(a) => provenance::diff(&store, &a, &mut out)?,
        Command::Blame(a) => provenance::blame(&store, &a, &mut out)?,
        Command::Log(a) => provenance::log(&store, &a, &mut out)?,
        Command::Repair(a) => repair(&store, &a, &mut out)?,
    };
    out.flush()?;
    Ok(code)
}

fn path(store: &Store, args: &PathArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let path = match &args.id {
        None => store.paths.sessions.clone(),
        Some(id) => store.resolve(id)?.path,
    };
    writeln!(out, "{}", path.display())?;
    Ok(ExitCode::Success)
}

/// Remove each session; one that cannot be removed is reported and the
/// rest still go. Exit 4 when any was open, else 2 for an invalid id,
/// else 1 when any failed.
fn rm(store: &Store, args: &RmArgs) -> ExitCode {
    let mut code = ExitCode::Success;
    let terminal = crate::output::stdout_is_terminal();
    for text in &args.ids {
        let removed = store.resolve(text).and_then(|at| {
            let artifacts = crate::compact::artifact::list(store, &at.id).map_or(0, |a| a.len());
            crate::rewind::note_removal(store, &at);
            store.remove(&at).map(|()| (at.id, artifacts))
        });
        if let Ok((id, _)) = &removed {
            forget_checkpoints(store, id);
        }
        match removed {
            // Said to a person (a pipe gets nothing, as rm(1)).
            Ok((id, artifacts)) if terminal => match artifacts {
                0 => println!("removed {id}"),
                n => println!("removed {id} and its {}", crate::output::count(n as u64, "artifact", "artifacts")),
            },
            Ok(_) => {}
            Err(err) => {
                eprintln!("{PROGRAM}: error: {}{}", err.report(), crate::cli::advice(&err).unwrap_or_default());
                code = code.max(crate::cli::exit_code_of(&err));
            }
        }
    }
    code
}

/// A removed session's checkpoints go with it (SPEC 19): what it alone
/// reached is removed at once, as cleanup does. A failure is a warning:
/// the session is gone.
pub(crate) fn forget_checkpoints(store: &Store, id: &crate::SessionId) {
    let data = &store.paths.data;
    let removed = crate::cli::block_on(async {
        crate::checkpoint::lifecycle::remove(data, id).await.map_err(anyhow::Error::msg)
    });
    if let Err(e) = removed {
        crate::cli::warn(PROGRAM, &format!("the checkpoints of {id}: {e:#}"));
    }
}

/// `repair ID`: the damaged lines kept as entries, the original as `.bak`.
fn repair(store: &Store, args: &RepairArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    let repaired = store.repair(&at)?;
    if args.json {
        let (lines, backup) = repaired.map_or((Vec::new(), None), |(l, b)| (l, Some(b)));
        let report = serde_json::json!({"id": at.id.as_str(), "lines": lines, "backup": backup});
        writeln!(out, "{report}")?;
        return Ok(ExitCode::Success);
    }
    match repaired {
        None => crate::output::to_stderr(format_args!("{PROGRAM}: {}: no damaged line: nothing to repair", at.id)),
        Some((lines, backup)) => {
            let numbers: Vec<String> = lines.iter().map(usize::to_string).collect();
            crate::output::to_stderr(format_args!(
                "{PROGRAM}: {}: kept {} as custom entries named {} (line {}); the original is {}",
                at.id,
                crate::output::count(lines.len() as u64, "damaged line", "damaged lines"),
                crate::store::damage::NAME,
                numbers.join(", "),
                backup.display()
            ));
        }
    }
    Ok(ExitCode::Success)
}

fn pin(store: &Store, text: &str, pinned: bool) -> Result<ExitCode> {
    let at = store.resolve(text)?;
    let written = store.update(&at.id, |file| {
        if pinned {
            file.set("pinned", Value::Bool(true));
        } else {
            file.remove("pinned");
        }
        Ok::<(), StoreError>(())
    })?;
    // The change is in place; a folder that could not be synced after is
    // worth saying, never a failure (the pin was applied).
    if let Some(warning) = written.warning {
        crate::cli::warn(
            PROGRAM,
            &format!("{}: {} applied, but {warning}", at.id, if pinned { "pin" } else { "unpin" }),
        );
    }
    Ok(ExitCode::Success)
}
