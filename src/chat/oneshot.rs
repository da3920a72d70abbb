//! One-shot mode: `glrs-chat -p "…"`, or a prompt on a non-terminal stdin.
//! One turn; only the reply on stdout (streamed as it arrives), the session
//! id on stderr; `--json` prints `{id, reply, usage}` instead. Ctrl-C stops
//! the turn and keeps what arrived, as in the REPL.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::signals::{Signals, Stop};
use super::{Chat, TurnUi};
use crate::agent::turn::Reply;
use crate::exit::ExitCode;
use crate::provider::{Cancel, Delta, Usage};

/// What `--json` prints.
#[derive(Serialize)]
struct JsonOutput<'a> {
    id: &'a str,
    reply: &'a Reply,
    usage: &'a Usage,
}

/// `--json`: `{id, reply, usage}`, written straight to stdout (a 100 MB
/// reply is not built into a second string first).
fn print_json(id: &str, reply: &Reply, usage: &Usage) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, &JsonOutput { id, reply, usage })?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

struct PlainUi {
    /// A child agent's progress pipe (SPEC 20): one line a tool call.
    progress: Option<std::fs::File>,
    quiet: bool,
    /// stdout is a terminal: the reply's control sequences are shown, not obeyed.
    terminal: bool,
    wrote: bool,
    ends_with_newline: bool,
}

impl TurnUi for PlainUi {
    fn tool_start(&mut self, call: &crate::store::ToolCall, _summary: &str) {
        if let Some(pipe) = &mut self.progress {
            let line = format!("{}\n", serde_json::json!({"tool": call.name}));
            // A parent that stopped reading must not stop the turn.
            let _ = pipe.write_all(line.as_bytes());
        }
    }

    fn delta(&mut self, delta: &Delta) {
        if let (false, Delta::Text(text)) = (self.quiet, delta) {
            let mut out = std::io::stdout().lock();
            // A closed stdout must not stop the turn: it is still recorded.
            let text = crate::output::shown(text, self.terminal);
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            self.wrote = true;
            self.ends_with_newline = text.ends_with('\n');
        }
    }

    fn step_end(&mut self) {
        if self.wrote && !self.ends_with_newline && !self.quiet {
            let _ = std::io::stdout().write_all(b"\n");
            self.ends_with_newline = true;
        }
    }

    fn notice(&mut self, text: &str) {
        crate::output::to_stderr(format_args!("glrs-chat: {text}"));
    }
}

/// `--progress-fd FD` (from a parent's `task` tool): the pipe at `fd`, made
/// close-on-exec so nothing the child runs can write to it. Anything but a
/// pipe is left alone (a number that names another descriptor must not be
/// taken over, nor closed when the chat ends).
pub fn adopt_progress_pipe(fd: i32) -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: fstat writes only into `stat`, a zeroed struct we own; fcntl
    // takes plain integers.
    let is_pipe = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut stat) == 0 && (stat.st_mode & libc::S_IFMT) == libc::S_IFIFO
    };
    // SAFETY: as above.
    if !is_pipe || unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: a pipe at `fd` that the parent passed for this and nothing in
    // this process has opened (the runtime is not built yet): ours to own.
    Some(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Run one turn and print it. Returns the exit code: 0; 1 when the turn
/// failed or the session could not be saved; 130 when it was stopped with
/// Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (what arrived is kept and saved).
pub async fn run(
    chat: &mut Chat,
    prompt: &str,
    json_output: bool,
    progress: Option<std::fs::File>,
) -> Result<ExitCode> {
    // What a repository's AGENTS.md tried and was refused (issue 20).
    for problem in &chat.agent().instructions().problems {
        eprintln!("glrs-chat: warning: {}", crate::output::terminal_safe(problem));
    }
    if let Err(warning) = chat.agent().remember_prompt(prompt) {
        crate::output::to_stderr(format_args!("glrs-chat: warning: {warning:#}"));
    }
    chat.go_on_at_line();
    let cancel = Cancel::default();
    let mut signals = Signals::new()?;
    // Registered now, before the turn starts: `tokio::signal::ctrl_c()`
    // registers only when first polled, and a SIGINT before that would
    // kill the chat unsaved instead of stopping the turn (exit 130).
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut stop: Option<Stop> = None;
    let terminal = crate::output::stdout_is_terminal();
    let mut ui = PlainUi { progress, quiet: json_output, terminal, wrote: false, ends_with_newline: true };
    let mut no_steers = Vec::new;
    let outcome = {
        let turn = chat.turn(prompt, &mut ui, &cancel, &mut no_steers);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                outcome = &mut turn => break outcome,
                Some(()) = interrupt.recv() => cancel.cancel(),
                signal = signals.recv() => {
                    stop = Some(signal);
                    cancel.cancel();
                }
            }
        }
    };
    if !outcome.stopped() {
        // At idle: the memory flush and compaction, when due.
        let idle = chat.at_idle(outcome.compact_due, &cancel, &mut ui);
        tokio::pin!(idle);
        loop {
            tokio::select! {
                _ = &mut idle => break,
                Some(()) = interrupt.recv() => cancel.cancel(),
                signal = signals.recv() => {
                    stop = Some(signal);
                    cancel.cancel();
                }
            }
        }
    }
    // A stdout that cannot be written must not keep the turn from its save.
    let printed =
        if json_output { print_json(chat.agent().id().as_str(), &outcome.reply, &outcome.usage) } else { Ok(()) };
    let mut code = match &outcome.error {
        None => ExitCode::Success,
        Some(_) if outcome.stopped() => {
            match stop {
                Some(signal) => crate::output::to_stderr(format_args!(
                    "glrs-chat: stopped by {}: what arrived is kept",
                    signal.name()
                )),
                // Said as a signal's stop is (issue 24): what stopped it, and what is kept.
                None => crate::output::to_stderr(format_args!("glrs-chat: stopped by Ctrl-C: what arrived is kept")),
            }
            ExitCode::Signal(libc::SIGINT)
        }
        Some(e) => {
            // Named with the model: behind a gateway, which one refused matters.
            crate::output::to_stderr(format_args!("glrs-chat: error: {}: {e}", chat.agent().model().full()));
            ExitCode::Failure
        }
    };
    if let Some(signal) = stop {
        code = signal.exit_code();
    }
    if let Err(e) = printed {
        crate::output::to_stderr(format_args!("glrs-chat: error: could not print the reply: {e}"));
        code = code.max(ExitCode::Failure);
    }
    // A failed write point is retried once more; the turn is never dropped
    // without a word.
    if let Err(unsaved) = chat.leave() {
        crate::output::to_stderr(format_args!("glrs-chat: error: {unsaved}"));
        code = ExitCode::Failure;
    }
    if chat.agent().is_saved() {
        crate::output::to_stderr(format_args!("{}", chat.agent().id()));
    }
    Ok(code)
}
