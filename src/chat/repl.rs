//! The REPL (SPEC section 12). At the prompt, rustyline reads a line
//! (history from `prompts.json`, Tab completes slash commands and session
//! ids, a line ending in `\` continues on a line marked `... `). During a
//! turn the terminal is in raw mode and a key watcher runs: Esc or Ctrl-C
//! stops the turn (what arrived is kept), and a line typed and sent with
//! Enter joins the turn as a steer.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Context, Editor, Event, EventContext, EventHandler, Helper, KeyEvent, RepeatCount,
};

use tokio::sync::mpsc;

use super::Chat;
use super::editor::LineEditor;
use super::signals::Watcher;
use super::slash::{Action, Command};
use super::terminal::{BackgroundCompact, KeyWatch, WatchParts, term_ui};
use crate::exit::ExitCode;
use crate::provider::Cancel;

/// What starts each continuation line (bash's PS2, Python's `... `).
/// rustyline 17 has no continuation prompt, so the marker is text in the
/// edited buffer (the cursor stays where it is drawn); [`join_lines`]
/// takes it out again.
pub const CONTINUATION: &str = "... ";

/// Enter on a line ending in `\` (the cursor at its end) starts a
/// continuation line within the same read: whatever was typed or pasted
/// ahead lands on it, nothing is lost between two reads.
struct ContinueLine;

impl ConditionalEventHandler for ContinueLine {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        let line = ctx.line();
        (ctx.pos() == line.len() && line.ends_with('\\')).then(|| Cmd::Insert(1, format!("\n{CONTINUATION}")))
    }
}

/// The message a multi-line edit sends: each `\` that ends a line goes,
/// and so does the continuation marker after it; other newlines (pasted
/// text) stay as they are.
pub fn join_lines(buffer: &str) -> String {
    let mut out = String::with_capacity(buffer.len());
    let mut rest = buffer;
    while let Some(at) = rest.find("\\\n") {
        out.push_str(&rest[..at]);
        out.push('\n');
        rest = &rest[at + 2..];
        rest = rest.strip_prefix(CONTINUATION).unwrap_or(rest);
    }
    out.push_str(rest);
    out
}

struct ReplHelper {
    store: crate::store::Store,
    /// The configured models, for `/model <Tab>`.
    models: Vec<String>,
    /// Whether the continuation marker is dimmed.
    color: bool,
}

impl ReplHelper {
    /// Session ids, read when completion asks (a folder listing, no file
    /// is opened), so a large store costs nothing at start-up.
    fn ids(&self) -> Vec<String> {
        self.store.all().map(|all| all.into_iter().map(|l| l.id.to_string()).collect()).unwrap_or_default()
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let pair = |s: &str| Pair { display: s.to_string(), replacement: s.to_string() };
        if let Some(rest) = before.strip_prefix("/resume ") {
            let mut ids = self.ids();
            ids.sort();
            let found = ids.iter().filter(|id| id.starts_with(rest.trim())).map(|id| pair(id)).collect();
            return Ok(("/resume ".len(), found));
        }
        if let Some(rest) = before.strip_prefix("/model ") {
            let found = self.models.iter().filter(|m| m.starts_with(rest.trim())).map(|m| pair(m)).collect();
            return Ok(("/model ".len(), found));
        }
        if before.starts_with('/') && !before.contains(' ') {
            return Ok((0, commands_for(before)));
        }
        Ok((pos, Vec::new()))
    }
}

/// The slash commands that start with `typed`, each completed with a space
/// after it (issue 24), ready for its argument as a shell completes a word.
fn commands_for(typed: &str) -> Vec<Pair> {
    let fits = Command::LISTED.into_iter().map(Command::name).filter(|c| c.starts_with(typed));
    fits.map(|c| Pair { display: c.to_string(), replacement: format!("{c} ") }).collect()
}

impl Hinter for ReplHelper {
    type Hint = String;
}
impl Highlighter for ReplHelper {
    /// The continuation marker dimmed (the same width, as rustyline needs).
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> std::borrow::Cow<'l, str> {
        let marked = format!("\\\n{CONTINUATION}");
        if !self.color || !line.contains(&marked) {
            return std::borrow::Cow::Borrowed(line);
        }
        let dimmed = crate::output::Style::on_terminal(true).dim(CONTINUATION);
        std::borrow::Cow::Owned(line.replace(&marked, &format!("\\\n{dimmed}")))
    }
}
impl Validator for ReplHelper {}
impl Helper for ReplHelper {}

/// The start-up line naming the `AGENTS.md` files in the prompt, and a
/// warning for each one left out (a link out of the repository, …).
fn show_instructions(found: &crate::agent::system::Instructions, cwd: &Path, dim: &dyn Fn(&str) -> String) {
    if !found.loaded.is_empty() {
        let names: Vec<String> = found.loaded.iter().map(|f| crate::tools::shown_path(cwd, f)).collect();
        say!("{}", dim(&crate::output::terminal_safe(&format!("instructions from {}", names.join(", ")))));
    }
    for problem in &found.problems {
        warn!("glrs-chat: warning: {}", crate::output::terminal_safe(problem));
    }
}

/// The line editor for `chat`, its history from `prompts.json`.
fn line_editor(chat: &Chat, color: bool) -> Result<LineEditor> {
    let mut editor: Editor<ReplHelper, rustyline::history::DefaultHistory> = Editor::new()?;
    let models = crate::provider::select::configured_models(chat.agent().config());
    editor.set_helper(Some(ReplHelper { store: chat.agent().store().clone(), models, color }));
    for enter in [KeyEvent::new('\r', rustyline::Modifiers::NONE), KeyEvent::ctrl('M'), KeyEvent::ctrl('J')] {
        editor.bind_sequence(enter, EventHandler::Conditional(Box::new(ContinueLine)));
    }
    for prompt in chat.agent().store().prompts().unwrap_or_default() {
        let _ = editor.add_history_entry(prompt.text);
    }
    Ok(LineEditor::start(editor)?)
}

/// What the prompt gave.
enum Input {
    Line(String),
    /// Ctrl-C at the prompt: the line is dropped.
    Dropped,
    /// Leave: Ctrl-D, or a signal (then [`Watcher::received`] says which).
    Leave,
}

/// The next line: a queued one, else what the editor reads.
async fn next_input(
    editor: &LineEditor,
    prompt: &str,
    initial: &str,
    queued: &mut std::collections::VecDeque<String>,
    signals: &Watcher,
) -> Result<Input> {
    if let Some(line) = queued.pop_front() {
        say!("{prompt}{line}");
        return Ok(Input::Line(line));
    }
    if signals.received().is_some() {
        return Ok(Input::Leave);
    }
    Ok(match editor.read(prompt, initial, signals).await {
        _ if signals.received().is_some() => Input::Leave,
        Some(Ok(line)) => Input::Line(line),
        Some(Err(ReadlineError::Interrupted)) => Input::Dropped,
        Some(Err(ReadlineError::Eof)) | None => Input::Leave,
        Some(Err(e)) => return Err(e.into()),
    })
}

/// Run the REPL until the user leaves (inside the runtime). Returns the
/// exit code.
pub async fn run(mut chat: Chat, resumed: bool) -> Result<ExitCode> {
    let color = crate::output::color_enabled();
    let editor = line_editor(&chat, color)?;
    greet(&chat, color, resumed);
    // SIGTERM or SIGHUP at the prompt wakes it and the loop leaves like
    // Ctrl-D (below); during a turn they stop it first.
    let signals = Watcher::start()?;
    let mut initial = String::new();
    // Lines typed during an idle compaction: they run once it lands.
    let mut queued: std::collections::VecDeque<String> = Default::default();
    loop {
        // MCP servers that failed to start or stopped since: said once.
        for line in chat.agent().tools().servers().map(|s| s.news()).unwrap_or_default() {
            warn!("glrs-chat: warning: {}", crate::output::terminal_safe(&line));
        }
        let prompt = prompt_text(&chat);
        let line = match next_input(&editor, &prompt, &initial, &mut queued, &signals).await? {
            Input::Line(line) => line,
            Input::Dropped => {
                initial.clear();
                continue;
            }
            Input::Leave => break,
        };
        initial.clear();
        let text = join_lines(&line);
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        editor.remember(&text);
        if let Some(instruction) = super::compaction::parse_compact(trimmed) {
            let idle = idle_work(&mut chat, &signals, color, IdleWork::Compact(instruction)).await;
            initial = idle.release(&mut queued);
            continue;
        }
        if trimmed.starts_with('/') {
            match slash_command(&mut chat, trimmed, color).await {
                Action::Continue => {}
                Action::Input(text) => initial = text,
                Action::Quit => break,
            }
            continue;
        }
        reset_if_due(&mut chat, color);
        if let Err(warning) = chat.agent().remember_prompt(&text) {
            warn!("glrs-chat: warning: {warning:#}");
        }
        let (typed, stopped_at_line) = run_turn(&mut chat, &text, color, &signals).await;
        initial = typed;
        if signals.received().is_none() && (chat.flush_due() || chat.compaction_due() || stopped_at_line) {
            let idle = idle_work(&mut chat, &signals, color, IdleWork::Due { stopped_at_line }).await;
            let held = idle.release(&mut queued);
            if !held.is_empty() {
                initial = held;
            }
        }
    }
    Ok(goodbye(&mut chat, &signals).await)
}

/// The first lines: the session, its model, the `AGENTS.md` files in the
/// prompt, and (resumed) what the session holds.
fn greet(chat: &Chat, color: bool, resumed: bool) {
    let style = crate::output::Style::on_terminal(color);
    let dim = |t: &str| style.dim(t);
    let agent = chat.agent();
    say!("{}", dim(&format!("glrs-chat · session {} · {} · /help for commands", agent.id(), agent.model().full())));
    show_instructions(agent.instructions(), Path::new(agent.cwd()), &dim);
    if resumed {
        super::history::show(chat, color);
    }
}

/// Run a slash command; an error is told and the REPL goes on.
async fn slash_command(chat: &mut Chat, line: &str, color: bool) -> Action {
    if Command::named(Command::split(line).0) == Some(Command::Mcp)
        && let Some(servers) = chat.agent().tools().servers()
    {
        servers.ready().await;
    }
    // Slash commands run child programs and read the store.
    match crate::runtime::blocking(|| super::slash::run(chat, line, color)) {
        Ok(action) => action,
        Err(e) => {
            warn!("glrs-chat: error: {e:#}");
            Action::Continue
        }
    }
}

/// SPEC 16: the key's reset rule, checked before every message.
fn reset_if_due(chat: &mut Chat, color: bool) {
    let Some(why) = chat.reset_due(&crate::time::local_now()) else { return };
    match chat.agent().reset_for(&why) {
        Ok((next, line)) => {
            leave_loudly(chat);
            *chat = Chat::from(next);
            say!("{}", crate::output::Style::on_terminal(color).dim(&format!("({line})")));
        }
        Err(e) => warn!("glrs-chat: error: cannot start the key's new session: {e:#}"),
    }
}

/// Leaving: why (a signal), one more attempt at a failed write point, the
/// `session_end` hook, and how to come back. Returns the exit code.
async fn goodbye(chat: &mut Chat, signals: &Watcher) -> ExitCode {
    let mut code = ExitCode::Success;
    if let Some(stop) = signals.received() {
        // Stopped the turn like Ctrl-C, or woke the prompt; now leave.
        warn!("glrs-chat: stopped by {}: what arrived is kept", stop.name());
        code = stop.exit_code();
    }
    // A failed write point gets one more attempt before the chat ends.
    if let Err(unsaved) = crate::runtime::blocking(|| chat.leave()) {
        warn!("glrs-chat: error: {unsaved}");
        code = ExitCode::Failure;
    }
    let ended = chat.agent().hook(crate::hooks::Payload::SessionEnd {}).await;
    for problem in ended.problems {
        warn!("glrs-chat: warning: {problem}");
    }
    if chat.agent().is_saved() {
        say!("to come back: glrs-chat --resume {}", chat.agent().id());
    }
    code
}

/// `ID MODEL [thinking:LEVEL] FILL% > `: the level only when not off. The
/// model id may come from another agent's transcript (an imported
/// session's header): shown, never obeyed.
fn prompt_text(chat: &Chat) -> String {
    let thinking = match chat.agent().thinking() {
        crate::provider::cache::Thinking::Off => String::new(),
        level => format!(" thinking:{level}"),
    };
    let model = crate::output::terminal_safe(&chat.agent().model().model).into_owned();
    format!("{} {model}{thinking} {}% > ", chat.agent().id(), chat.agent().fill_percent())
}

/// What runs at idle.
enum IdleWork<'a> {
    /// The flush and compaction that are due.
    Due { stopped_at_line: bool },
    /// `/compact [instruction]`.
    Compact(Option<&'a str>),
}

/// What the user typed while idle work ran.
struct Idle {
    lines: Vec<String>,
    unsent: String,
    abandoned: bool,
}

impl Idle {
    /// Lines typed during a compaction that landed run next (queued); after
    /// Esc they stay held in the prompt until the user sends them.
    fn release(self, queued: &mut std::collections::VecDeque<String>) -> String {
        if self.abandoned {
            let mut held = self.lines.join("\n");
            if !self.unsent.is_empty() {
                if !held.is_empty() {
                    held.push('\n');
                }
                held.push_str(&self.unsent);
            }
            return held;
        }
        queued.extend(self.lines);
        self.unsent
    }
}

/// Flush and compaction at idle, holding the input queue: lines typed
/// meanwhile wait; Esc or Ctrl-C abandons (nothing is written).
async fn idle_work(chat: &mut Chat, signals: &Watcher, color: bool, work: IdleWork<'_>) -> Idle {
    let cancel = Arc::new(Cancel::default());
    let (typed, mut lines_typed) = mpsc::unbounded_channel();
    let mut ui = term_ui(color);
    let watch = KeyWatch::start(WatchParts {
        cancel: cancel.clone(),
        steers: typed,
        compact: None,
        answer: ui.answer.clone(),
        lock: ui.lock.clone(),
        signals: signals.clone(),
    });
    let work = async {
        match work {
            IdleWork::Due { stopped_at_line } => chat.at_idle(stopped_at_line, &cancel, &mut ui).await,
            IdleWork::Compact(instruction) => Some(chat.compact_child(instruction, &cancel, &mut ui).await),
        }
    };
    let outcome = signals.during(&cancel, work).await;
    let unsent = watch.finish().await;
    let lines = drain(&mut lines_typed);
    let abandoned = matches!(outcome, Some(super::compaction::CompactOutcome::Abandoned));
    Idle { lines, unsent, abandoned }
}

/// Everything waiting in `lines`.
fn drain(lines: &mut mpsc::UnboundedReceiver<String>) -> Vec<String> {
    std::iter::from_fn(|| lines.try_recv().ok()).collect()
}

/// One turn with the key watcher; returns text typed but not sent, and
/// whether the turn stopped at the compaction line.
async fn run_turn(chat: &mut Chat, text: &str, color: bool, signals: &Watcher) -> (String, bool) {
    let cancel = Arc::new(Cancel::default());
    let (steers, mut steered) = mpsc::unbounded_channel();
    let mut ui = term_ui(color);
    let started: Arc<Mutex<Vec<crate::process::Background>>> = Arc::default();
    // `/compact` during a turn needs the session on disk to act on.
    let compact = chat.agent().is_saved().then(|| BackgroundCompact {
        id: chat.agent().id().clone(),
        started: started.clone(),
        lock: ui.lock.clone(),
    });
    let watch = KeyWatch::start(WatchParts {
        cancel: cancel.clone(),
        steers,
        compact,
        answer: ui.answer.clone(),
        lock: ui.lock.clone(),
        signals: signals.clone(),
    });
    ui.can_ask = watch.active();
    let mut take_steers = || drain(&mut steered);
    let outcome = signals.during(&cancel, chat.turn(text, &mut ui, &cancel, &mut take_steers)).await;
    let leftover = watch.finish().await;
    // Steers sent after the last model call: the next prompt's text.
    let late = take_steers();
    let children = started.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default();
    if !children.is_empty() {
        chat.adopt_background(children);
        // Ctrl-C (a SIGINT now the terminal is out of raw mode) stops waiting.
        let wait = Arc::new(Cancel::default());
        signals.during(&wait, chat.wait_for_background(&wait, &mut ui)).await;
    }
    match &outcome.error {
        None => {}
        Some(e) if outcome.stopped() => say!("{}", ui.dim(&format!("({e}: what arrived is kept)"))),
        // Named with the model: behind a gateway, which one refused matters.
        Some(e) => warn!("glrs-chat: error: {}: {e}", chat.agent().model().full()),
    }
    let mut next = late.join("\n");
    if !leftover.is_empty() {
        if !next.is_empty() {
            next.push('\n');
        }
        next.push_str(&leftover);
    }
    (next, outcome.compact_due)
}

/// One more attempt to save what a failed write left, before switching
/// sessions; if it fails, say where it went instead.
pub(super) fn leave_loudly(chat: &mut Chat) {
    if let Err(unsaved) = chat.leave() {
        warn!("glrs-chat: error: {unsaved}");
    }
}

#[cfg(test)]
mod tests {
    use super::{commands_for, join_lines};

    #[test]
    fn a_completed_command_gets_a_space() {
        let found = commands_for("/res");
        let replaced: Vec<&str> = found.iter().map(|p| p.replacement.as_str()).collect();
        assert_eq!(replaced, ["/resume ", "/reset "]);
        assert_eq!(found[0].display, "/resume");
    }

    #[test]
    fn continued_lines_lose_the_backslash_and_the_marker_only() {
        assert_eq!(join_lines("first \\\n... second"), "first \nsecond");
        assert_eq!(join_lines("a\\\n... b\\\n... c"), "a\nb\nc");
        // The marker deleted by hand, or a pasted continuation: still joined.
        assert_eq!(join_lines("a\\\nb"), "a\nb");
        // A pasted newline or a backslash elsewhere stays.
        assert_eq!(join_lines("a\n... b \\ c\\"), "a\n... b \\ c\\");
    }
}
