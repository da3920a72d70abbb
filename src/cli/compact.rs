//! `glrs-compact`: compact one session, or from cron every session over its
//! trigger (SPEC sections 6 and 11).

use std::io::{IsTerminal, Write};

use anyhow::{Result, bail};
use clap::Parser;

use crate::agent::{Agent, TurnUi};
use crate::cli::UsageError;
use crate::compact::report::Report;
use crate::compact::run::{self, Landed, Options, Outcome};
use crate::compact::{Trigger, flush};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::hooks;
use crate::provider::Cancel;
use crate::provider::select::ModelRef;
use crate::store::lock::Holder;
use crate::store::{Located, SessionFile, Store, listing};

/// The program's name, for messages.
pub const PROGRAM_NAME: &str = "glrs-compact";

/// Summarise the older part of a session into a brief; the replaced
/// messages are kept, whole, in an artifact.
#[derive(Debug, Parser)]
#[command(
    name = "glrs-compact",
    version,
    about = "Summarise the older part of a session into a brief, keeping the replaced messages in an artifact",
    long_about = "Summarise the older part of a session into a brief (a compacted entry), keep the recent part \
        verbatim, and write the replaced messages, whole, to an artifact in \
        $XDG_DATA_HOME/glrs/sessions/artifacts/ID/. Nothing is deleted from the session.\n\n\
        With --all (for cron), every session over its compaction trigger is compacted; sessions open in a chat \
        are skipped with a note (none with --quiet), and one failure never stops the rest.\n\n\
        Hooks: hooks.before_compact runs before each compaction, with tokensBefore; in an automatic \
        one (--all, --if-needed, --auto) a hook that exits 2 cancels it (reported, nothing written). \
        hooks.compacted runs after a brief lands, with tokensBefore, tokensAfter and artifact (its path).",
    after_help = "Exit status: 0 success (also when there was nothing to compact, or a hook cancelled it), 1 failure, \
        2 usage error."
)]
pub struct Args {
    /// Session id or unique prefix
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    #[arg(add = crate::cli::complete::ids())]
    pub id: Option<String>,
    /// Every session over its trigger (skipping open ones)
    #[arg(long)]
    pub all: bool,
    /// Only when over the trigger (always so with --all)
    #[arg(long)]
    pub if_needed: bool,
    /// Print nothing unless something failed (no result lines, no notes of skipped sessions)
    #[arg(short, long)]
    pub quiet: bool,
    /// Steer the brief: what it should keep ("Additional focus: …")
    #[arg(long, value_name = "TEXT")]
    pub instruction: Option<String>,
    /// The model that writes the brief (else compactModel, else the session's model)
    #[arg(short = 'm', long, value_name = "PROVIDER/MODEL", value_parser = ModelRef::check_arg)]
    pub model: Option<String>,
    /// Skip the memory flush (the silent turn that saves notes before compacting)
    #[arg(long)]
    pub no_flush: bool,
    /// Print each result as a JSON object on one line (outcome "compacted", "nothing",
    /// "underTrigger" or "cancelled", with the numbers) instead of the line for people
    #[arg(long)]
    pub json: bool,
    /// An automatic compaction (the chat passes this; --all and --if-needed are too): a
    /// before_compact hook that exits 2 cancels it
    #[arg(long)]
    pub auto: bool,
}

/// Run `glrs-compact`; returns the exit code.
pub fn run(args: Args) -> Result<ExitCode> {
    let store = Store::from_env()?;
    let config = Config::load_env(&store.paths)?;
    // Before any child starts: no command, hook or tool gets a provider key.
    crate::process::env::withhold(config.withheld_env());
    let options = Options {
        instruction: args.instruction.clone(),
        model: args.model.as_deref().map(ModelRef::parse).transpose().map_err(|e| UsageError(format!("{e:#}")))?,
    };
    // A model that cannot work is a usage error even when nothing needs it.
    if let Some(model) = &options.model {
        crate::provider::check_known(&config, &model.provider).map_err(|e| UsageError(format!("{e:#}")))?;
    }
    let runtime = crate::runtime::build()?;
    let cancel = Cancel::default();
    let job = Job {
        store: &store,
        config: &config,
        options: &options,
        flush: !args.no_flush,
        automatic: args.auto || args.all || args.if_needed,
        runtime: &runtime,
        cancel: &cancel,
    };
    if let Some(id) = &args.id {
        let at = store.resolve(id)?;
        let file = store.read(&at)?.file;
        if args.if_needed {
            let tokens = file.get_u64("contextTokens").unwrap_or(0);
            let trigger = Trigger::for_session(&config, file.get_str("model"));
            if !trigger.is_over(tokens) {
                if !args.quiet {
                    let report = Report::UnderTrigger { id: at.id.to_string(), tokens, trigger: trigger.threshold() };
                    print_report(&report, args.json)?;
                }
                return Ok(ExitCode::Success);
            }
        }
        let outcome = compact_one(&job, &at, file)?;
        if !args.quiet {
            report(&at, &outcome, args.json)?;
        }
        return Ok(ExitCode::Success);
    }
    compact_all(&job, args.quiet, args.json)
}

/// What every compaction of one run shares.
struct Job<'a> {
    store: &'a Store,
    config: &'a Config,
    options: &'a Options,
    flush: bool,
    /// Not asked for by a person: a `before_compact` hook may cancel it.
    automatic: bool,
    runtime: &'a tokio::runtime::Runtime,
    cancel: &'a Cancel,
}

/// The memory flush before compacting (SPEC 7), when it has not run this
/// compaction cycle. A session open in a chat is left to that chat, which
/// flushes itself; a flush that cannot run is a warning, never a reason not
/// to compact.
fn flush_first(job: &Job<'_>, at: &Located, file: SessionFile) -> Option<SessionFile> {
    let (store, config) = (job.store, job.config);
    if !job.flush || at.legacy || matches!(store.open_holder(&at.id), Ok(Some(_))) {
        return Some(file);
    }
    let cycle = flush::cycle_of(&file.events);
    if !flush::wanted(config, cycle.compactions, cycle.flushed) {
        return Some(file);
    }
    // No flush for a compaction that will not happen.
    let keep = Trigger::for_session(config, file.get_str("model")).keep_recent;
    if crate::compact::plan::plan(&file.events, keep).is_none()
        || run::compact_model(config, &file, job.options.model.as_ref()).is_err()
    {
        return Some(file);
    }
    let no_model = || anyhow::bail!("the session names no model");
    // Marked as a compaction: a chat refused meanwhile is told so, not to fork.
    let system = config.system_prompt.clone();
    let agent = Agent::resume(store.clone(), config.clone(), at, Holder::Compaction, None, no_model, system);
    match agent {
        Ok(mut agent) => {
            let mut notices = Notices(at);
            let failed = job.runtime.block_on(agent.memory_flush(job.cancel, &mut notices));
            if let Some(e) = failed.filter(|e| !matches!(e, crate::provider::CallError::Cancelled { .. })) {
                crate::cli::warn(PROGRAM_NAME, &format!("{}: memory flush failed: {e}", at.id));
            }
        }
        Err(e) => crate::cli::warn(PROGRAM_NAME, &format!("{}: memory flush skipped: {e:#}", at.id)),
    }
    None
}

/// The flush's notices (a `cwd` that is not writable, a write that
/// failed), as warnings naming the session; its text is never shown.
struct Notices<'a>(&'a Located);

impl TurnUi for Notices<'_> {
    fn delta(&mut self, _: &crate::provider::Delta) {}
    fn notice(&mut self, text: &str) {
        crate::cli::warn(
            PROGRAM_NAME,
            &format!("{}: {}", self.0.id, text.trim_start_matches('(').trim_end_matches(')')),
        );
    }
}

/// How one session's compaction ended: it ran (whatever it found), or a
/// `before_compact` hook cancelled it.
enum Done {
    Ran(Outcome),
    Cancelled(String),
}

/// Compact one session, flushing first (unless `--no-flush`): the session
/// is read once, and again only when the flush changed it. The
/// `before_compact` hooks run first (before the flush: no notes are saved
/// for a compaction a hook cancels), `compacted` after a brief lands.
fn compact_one(job: &Job<'_>, at: &Located, file: SessionFile) -> Result<Done> {
    let (store, config, options, cancel) = (job.store, job.config, job.options, job.cancel);
    // One compaction of a session at a time. A second one waits, then finds
    // the first's boundary and does nothing: no second brief, no double cost.
    let (_compacting, file) = match store.try_compaction_lock(&at.id)? {
        Some(lock) => (lock, file),
        None => {
            let lock = store.compaction_lock(&at.id)?;
            let now = store.read(at)?.file;
            let before = flush::cycle_of(&file.events).compactions;
            if flush::cycle_of(&now.events).compactions > before {
                return Ok(Done::Ran(Outcome::CompactedMeanwhile));
            }
            (lock, now)
        }
    };
    let hooks = CompactHooks::of(job, at, &file);
    if let Some(reason) = hooks.before(job, &file) {
        return Ok(Done::Cancelled(reason));
    }
    let unchanged = flush_first(job, at, file);
    let outcome = job.runtime.block_on(async {
        match unchanged {
            Some(file) => run::compact_read(store, config, at, file, options, cancel).await,
            None => run::compact(store, config, at, options, cancel).await,
        }
    })?;
    if let Outcome::Compacted(landed) = &outcome {
        hooks.after(job, landed);
    }
    Ok(Done::Ran(outcome))
}

/// Where the compaction hooks of one session run (SPEC 15).
struct CompactHooks {
    id: String,
    file: std::path::PathBuf,
    cwd: std::path::PathBuf,
    redactor: crate::redact::Redactor,
}

impl CompactHooks {
    fn of(job: &Job<'_>, at: &Located, file: &SessionFile) -> CompactHooks {
        // Hooks run in the session's cwd; one that is gone is not recreated.
        let cwd = file
            .get_str("cwd")
            .map(std::path::PathBuf::from)
            .filter(|c| c.is_dir())
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| "/".into());
        // A config whose patterns do not compile fails the compaction
        // itself (compact::run); until then, the built-in shapes.
        let redactor = job.config.redactor().unwrap_or_default();
        CompactHooks { id: at.id.to_string(), file: job.store.session_path(&at.id), cwd, redactor }
    }

    fn run(&self, job: &Job<'_>, payload: hooks::Payload) -> hooks::Outcome {
        let scene =
            hooks::Scene { session_id: &self.id, session_file: &self.file, cwd: &self.cwd, redactor: &self.redactor };
        let outcome = job.runtime.block_on(hooks::run(&job.config.hooks, payload, &scene, None));
        for problem in &outcome.problems {
            crate::cli::warn(PROGRAM_NAME, &format!("{}: {problem}", self.id));
        }
        outcome
    }

    /// `before_compact`: the reason when a hook cancels this (automatic)
    /// compaction. When there is nothing to compact, no hook is asked.
    fn before(&self, job: &Job<'_>, file: &SessionFile) -> Option<String> {
        let keep = Trigger::for_session(job.config, file.get_str("model")).keep_recent;
        if job.config.hooks.before_compact.is_empty() || crate::compact::plan::plan(&file.events, keep).is_none() {
            return None;
        }
        let tokens = file.get_u64("contextTokens").unwrap_or(0);
        let reason = self.run(job, hooks::Payload::BeforeCompact { tokens_before: tokens }).blocked?;
        if job.automatic {
            return Some(reason);
        }
        crate::cli::warn(
            PROGRAM_NAME,
            &format!(
                "{}: a before_compact hook asked to cancel ({reason}), but this compaction was asked for, not \
                 automatic: compacting",
                self.id
            ),
        );
        None
    }

    /// `compacted`, after a brief landed.
    fn after(&self, job: &Job<'_>, landed: &Landed) {
        if job.config.hooks.compacted.is_empty() {
            return;
        }
        let payload = hooks::Payload::Compacted {
            tokens_before: landed.tokens_before,
            tokens_after: landed.tokens_after,
            artifact: landed.artifact.to_string_lossy().into_owned(),
        };
        self.run(job, payload);
    }
}

fn report(at: &Located, done: &Done, json: bool) -> Result<()> {
    let outcome = match done {
        Done::Ran(outcome) => outcome,
        Done::Cancelled(reason) => {
            return print_report(&Report::Cancelled { id: at.id.to_string(), reason: reason.clone() }, json);
        }
    };
    if let Outcome::Compacted(Landed { warning: Some(warning), .. }) = outcome {
        crate::cli::warn(PROGRAM_NAME, &format!("{}: the brief landed, but {warning}", at.id));
    }
    print_report(&Report::of(&at.id, outcome), json)
}

/// One session's result: its line, or its JSON on one line.
fn print_report(report: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        println!("{}", report.line());
    }
    Ok(())
}

/// Every session over its trigger; open ones skipped, failures counted.
fn compact_all(job: &Job<'_>, quiet: bool, json: bool) -> Result<ExitCode> {
    let (store, config) = (job.store, job.config);
    let listing = listing::list(store)?;
    for problem in listing.all_problems() {
        crate::cli::warn(PROGRAM_NAME, problem);
    }
    let due: Vec<_> = listing
        .sessions
        .iter()
        .filter(|s| !s.legacy && Trigger::for_session(config, s.model.as_deref()).is_over(s.context_tokens))
        .collect();
    let progress = !quiet && std::io::stderr().is_terminal();
    // Messages first clear the progress bar's line, when there is one.
    let cr = if progress { "\r\x1b[2K" } else { "" };
    let mut failures = 0;
    for (i, summary) in due.iter().enumerate() {
        if progress {
            let done = i * 20 / due.len().max(1);
            eprint!("\r[{}{}] {}/{} {}", "#".repeat(done), " ".repeat(20 - done), i, due.len(), summary.id);
            let _ = std::io::stderr().flush();
        }
        let at = match store.resolve(&summary.id) {
            Ok(at) => at,
            Err(e) => {
                failures += 1;
                eprintln!("{cr}{PROGRAM_NAME}: error: {}", e.report());
                continue;
            }
        };
        if let Ok(Some((pid, by))) = store.open_holder_of(&at.id) {
            // A skip is not a failure: `--quiet` (cron mails any output)
            // keeps it to itself, and the next run catches the session.
            if !quiet {
                let who = pid.map_or(String::new(), |pid| format!(" (pid {pid})"));
                let why = match by {
                    Holder::Chat => format!("open in a chat{who}"),
                    Holder::Compaction => {
                        format!("a compaction is running{who}: another glrs-compact holds it for its memory flush")
                    }
                };
                eprintln!("{cr}{PROGRAM_NAME}: note: skipped {}: {why}", at.id);
            }
            continue;
        }
        let compacted =
            store.read(&at).map_err(anyhow::Error::from).and_then(|loaded| compact_one(job, &at, loaded.file));
        match compacted {
            Ok(outcome) => {
                if progress {
                    eprint!("\r\x1b[2K");
                }
                if !quiet {
                    report(&at, &outcome, json)?;
                }
            }
            Err(e) => {
                failures += 1;
                eprintln!("{cr}{PROGRAM_NAME}: error: {}: {e:#}", at.id);
            }
        }
    }
    if progress {
        eprint!("\r\x1b[2K");
    }
    if failures > 0 {
        let noun = if due.len() == 1 { "session" } else { "sessions" };
        bail!("{failures} of {} {noun} could not be compacted", due.len());
    }
    Ok(ExitCode::Success)
}
