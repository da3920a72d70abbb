//! The terminal side of a REPL turn: the UI that streams the reply and
//! shows tool calls (one line each, a dimmed preview of the result, errors
//! in red) and asks permission, and the key watcher, a task that reads
//! keys ([`super::keyboard`]) while the terminal is in raw mode (Esc or
//! Ctrl-C stop the turn, Enter sends a steer or answers a permission
//! prompt). Steers go to the turn by a channel, answers by a oneshot.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::TurnUi;
use super::keyboard::{Key, Keyboard};
use super::render::{MarkdownStream, Spinner};
use super::signals::{Stop, Watcher};
use crate::output::{Style, terminal_safe};
use crate::permissions::{Answer, Asked, Question, parse_answer};
use crate::provider::{Cancel, Delta};
use crate::store::ToolCall;
use crate::tools::ToolOutput;

/// The permission prompt shown now, shared by the turn's UI and the key
/// watcher.
pub type AnswerSlot = Arc<Mutex<Prompt>>;

/// The permission prompt shown now, if one is.
#[derive(Default)]
pub struct Prompt {
    /// Where the key watcher sends the answer.
    answer: Option<oneshot::Sender<Answer>>,
    /// The cursor is still on the prompt's line: whoever writes next (the
    /// echo of the answer, the turn going on after Esc) ends it first.
    line_open: bool,
}

/// End the prompt's line if it is still open: the next text starts on a
/// line of its own, whichever side writes first.
fn end_prompt_line(slot: &AnswerSlot) {
    let open = slot.lock().map(|mut prompt| std::mem::take(&mut prompt.line_open)).unwrap_or(false);
    if open {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\r\n").and_then(|()| out.flush());
    }
}

/// How long the end of a turn waits for its key watcher to stop (it stops
/// at once: it never blocks).
const WATCH_STOP: Duration = Duration::from_secs(2);

/// How many lines of a tool's result the REPL shows.
pub const RESULT_PREVIEW_LINES: usize = 4;

/// The terminal side of a turn.
pub struct TermUi {
    /// Renders the answer's Markdown as it streams.
    pub md: MarkdownStream,
    /// Whether to colour.
    pub color: bool,
    /// Held while writing, so the key watcher's notes do not interleave.
    pub lock: Arc<Mutex<()>>,
    /// The spinner shown until the first token.
    pub spinner: Option<Spinner>,
    /// Whether reasoning is being shown (dimmed).
    pub reasoning: bool,
    /// Set while the key watcher runs: a permission prompt can be answered.
    pub can_ask: bool,
    /// Where the key watcher puts the answer to a permission prompt.
    pub answer: AnswerSlot,
    /// How many live lines of running calls are drawn ([`TurnUi::running`]).
    pub live: usize,
}

impl TermUi {
    /// Write text (newlines as the raw-mode terminal needs them).
    pub fn write(&self, text: &str) {
        let _guard = self.lock.lock();
        end_prompt_line(&self.answer);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.replace('\n', "\r\n").as_bytes());
        let _ = out.flush();
    }

    /// `text` dimmed, when colouring.
    pub fn dim(&self, text: &str) -> String {
        Style::on_terminal(self.color).dim(text)
    }

    /// `text` in red, when colouring.
    pub fn red(&self, text: &str) -> String {
        Style::on_terminal(self.color).red(text)
    }

    /// The terminal's width (at least 20).
    pub fn width(&self) -> usize {
        crossterm::terminal::size().map_or(100, |(w, _)| w as usize).max(20)
    }

    /// Stop and clear the spinner.
    pub fn stop_spinner(&mut self) {
        if let Some(mut s) = self.spinner.take() {
            s.stop();
        }
    }
}

impl TurnUi for TermUi {
    fn step_start(&mut self) {
        if self.color {
            self.spinner = Some(Spinner::start(self.lock.clone()));
        }
    }

    fn delta(&mut self, delta: &Delta) {
        self.stop_spinner();
        match delta {
            // The model's text may carry escape sequences: shown, never obeyed.
            Delta::Reasoning(text) => {
                self.reasoning = true;
                let text = self.dim(&terminal_safe(text));
                self.write(&text);
            }
            // Said by the turn as a notice, not part of the answer.
            Delta::Retrying(_) => {}
            Delta::Text(text) => {
                if self.reasoning {
                    self.reasoning = false;
                    self.write("\n\n");
                }
                let _guard = self.lock.lock();
                end_prompt_line(&self.answer);
                let _ = self.md.push(&terminal_safe(text), &mut std::io::stdout().lock());
            }
        }
    }

    fn step_end(&mut self) {
        self.stop_spinner();
        let _guard = self.lock.lock();
        let _ = self.md.finish(&mut std::io::stdout().lock());
        self.reasoning = false;
    }

    fn tool_start(&mut self, call: &ToolCall, summary: &str) {
        self.stop_spinner();
        let _guard = self.lock.lock();
        let _ = self.md.finish(&mut std::io::stdout().lock());
        drop(_guard);
        let width = self.width();
        let line = cut_to(&terminal_safe(&format!("● {}  {summary}", call.name)), width);
        let line = Style::on_terminal(self.color).bold(&line);
        self.write(&format!("{line}\n"));
    }

    fn tool(&mut self, _call: &ToolCall, output: &ToolOutput) {
        let width = self.width().saturating_sub(2);
        // A tool's output (a file, a command's) may carry escape sequences too.
        let content = terminal_safe(&output.content);
        let lines: Vec<&str> = content.lines().collect();
        let mut shown: Vec<String> =
            lines.iter().take(RESULT_PREVIEW_LINES).map(|l| format!("  {}", cut_to(l, width))).collect();
        if lines.len() > RESULT_PREVIEW_LINES {
            shown.push(format!("  … {} more lines", lines.len() - RESULT_PREVIEW_LINES));
        }
        let text = shown.join("\n");
        let text = if output.is_error { self.red(&text) } else { self.dim(&text) };
        self.write(&format!("{text}\n"));
    }

    fn running(&mut self, lines: &[String]) {
        self.stop_spinner();
        let width = self.width();
        let mut text = String::new();
        if self.live > 0 {
            // Up to the first live line, and clear from there down.
            text.push_str(&format!("\x1b[{}A\r\x1b[J", self.live));
        }
        for line in lines {
            let line = cut_to(&terminal_safe(line), width);
            text.push_str(&Style::on_terminal(self.color).bold(&line));
            text.push('\n');
        }
        self.live = lines.len();
        self.write(&text);
    }

    fn can_ask(&self) -> bool {
        self.can_ask
    }

    fn ask(&mut self, question: &Question<'_>) -> Asked {
        self.stop_spinner();
        if !self.can_ask {
            return Asked::Now(Answer::Cannot);
        }
        let mut text = String::new();
        if let Some(full) = &question.full {
            text.push_str(&shown_whole(full));
        }
        if let Some(preview) = &question.preview {
            text.push_str(&self.dim(&terminal_safe(preview.trim_end())));
            text.push('\n');
        }
        text.push_str(&format!(
            "allow {}? y yes · a always ({}, this session) · n no · or type what to do instead: ",
            question.tool, question.always
        ));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.answer.lock() {
            slot.answer = Some(tx);
        }
        self.write(&text);
        if let Ok(mut slot) = self.answer.lock() {
            slot.line_open = true;
        }
        Asked::Later(rx)
    }

    fn notice(&mut self, text: &str) {
        self.stop_spinner();
        let line = self.dim(&terminal_safe(text));
        self.write(&format!("{line}\n"));
    }
}

/// The most lines of a call the prompt shows; it says how many more.
const PROMPT_LINES: usize = 400;

/// A call shown whole before asking: every line behind a `│` gutter (blank
/// and leading lines too), control characters visible.
pub fn shown_whole(full: &str) -> String {
    let lines = crate::output::visible_lines(full.strip_suffix('\n').unwrap_or(full));
    let mut out = String::new();
    for line in lines.iter().take(PROMPT_LINES) {
        out.push_str(&format!("  │ {line}\n"));
    }
    if lines.len() > PROMPT_LINES {
        out.push_str(&format!(
            "  │ … {} more lines not shown: answer n unless you know what they are\n",
            lines.len() - PROMPT_LINES
        ));
    }
    if lines.len() > 1 {
        out.push_str(&format!("  ({} lines)\n", lines.len()));
    }
    out
}

/// `text` cut to `width` characters.
pub fn cut_to(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let cut: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Starts `glrs-compact` the moment `/compact` is entered during a turn.
pub struct BackgroundCompact {
    /// The session to compact.
    pub id: crate::SessionId,
    /// The children started, for the turn to wait for.
    pub started: Arc<Mutex<Vec<crate::process::Background>>>,
    /// Held while writing its note.
    pub lock: Arc<Mutex<()>>,
}

impl BackgroundCompact {
    /// Start `glrs-compact` with `instruction` and say so.
    pub fn start(&self, instruction: Option<&str>) {
        let note = match super::compaction::start_background(&self.id, instruction, false) {
            Ok(child) => {
                if let Ok(mut started) = self.started.lock() {
                    started.push(child);
                }
                super::compaction::BACKGROUND_NOTE.to_string()
            }
            Err(e) => format!("(cannot run glrs-compact: {e})"),
        };
        let _guard = self.lock.lock();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\n{note}\r\n");
        let _ = out.flush();
    }
}

/// What the key watcher works with.
pub struct WatchParts {
    /// Esc and Ctrl-C cancel it.
    pub cancel: Arc<Cancel>,
    /// Lines sent with Enter go here (steers of the turn).
    pub steers: mpsc::UnboundedSender<String>,
    /// Starts `/compact` typed during the turn, when the session is saved.
    pub compact: Option<BackgroundCompact>,
    /// The permission prompt waiting for its answer, if any.
    pub answer: AnswerSlot,
    /// Held while echoing.
    pub lock: Arc<Mutex<()>>,
    /// Told when the terminal ends (a hang-up).
    pub signals: Watcher,
}

/// Reads keys while a turn runs (the terminal in raw mode): a task on the
/// runtime.
pub struct KeyWatch {
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<String>>,
}

impl KeyWatch {
    /// Watch keys (inside the runtime): Esc and Ctrl-C cancel, lines sent
    /// become steers or answers, `/compact` starts a compaction. Without a
    /// terminal in raw mode nothing is read ([`KeyWatch::active`] is false).
    pub fn start(parts: WatchParts) -> KeyWatch {
        let raw = crossterm::terminal::enable_raw_mode().is_ok();
        let keyboard = raw.then(Keyboard::open).and_then(Result::ok);
        let Some(mut keyboard) = keyboard else {
            if raw {
                let _ = crossterm::terminal::disable_raw_mode();
            }
            return KeyWatch { stop: None, task: None };
        };
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut typing = Typing { parts, typed: String::new(), held: None };
            loop {
                tokio::select! {
                    biased;
                    _ = &mut stopped => break,
                    key = keyboard.next() => match key {
                        Some(key) => typing.key(key),
                        None => {
                            // The terminal is gone: end the turn as SIGHUP does.
                            typing.parts.signals.raise(Stop::Hangup);
                            typing.reply(Answer::Interrupted);
                            break;
                        }
                    },
                }
            }
            // Keys read but not yet taken are the user's too.
            for key in keyboard.take_read() {
                typing.key(key);
            }
            typing.typed
        });
        KeyWatch { stop: Some(stop), task: Some(task) }
    }

    /// True while keys are read (the terminal went into raw mode).
    pub fn active(&self) -> bool {
        self.task.is_some()
    }

    /// Stop watching (bounded); what was typed but not sent is returned.
    pub async fn finish(mut self) -> String {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let typed = match self.task.take() {
            Some(task) => match tokio::time::timeout(WATCH_STOP, task).await {
                Ok(Ok(typed)) => typed,
                _ => String::new(),
            },
            None => return String::new(),
        };
        let _ = crossterm::terminal::disable_raw_mode();
        typed
    }
}

/// The key watcher's state: the line being typed, and the steer half
/// typed when a permission prompt appeared (it waits, so the answer is
/// only what is typed at the prompt).
struct Typing {
    parts: WatchParts,
    typed: String,
    held: Option<String>,
}

impl Typing {
    /// A prompt is shown and its turn still waits for the answer.
    fn asking(&self) -> bool {
        self.parts.answer.lock().is_ok_and(|slot| slot.answer.as_ref().is_some_and(|tx| !tx.is_closed()))
    }

    fn echo(&self, text: &str) {
        let _guard = self.parts.lock.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    /// Answer the prompt waiting, if one is.
    fn reply(&self, answer: Answer) -> bool {
        match self.parts.answer.lock().ok().and_then(|mut slot| slot.answer.take()) {
            Some(tx) if !tx.is_closed() => {
                let _ = tx.send(answer);
                true
            }
            _ => false,
        }
    }

    /// Answer the prompt (its line ended first, so nothing the turn
    /// writes next lands on it), and take the held steer back.
    fn answer(&mut self, answer: Answer) -> bool {
        if !self.asking() {
            return false;
        }
        {
            let _guard = self.parts.lock.lock();
            end_prompt_line(&self.parts.answer);
        }
        self.typed = self.held.take().unwrap_or_default();
        self.reply(answer)
    }

    fn key(&mut self, key: Key) {
        if self.held.is_none() && self.asking() {
            self.held = Some(std::mem::take(&mut self.typed));
        }
        match key {
            Key::Stop => {
                // The turn ends at once; the prompt's line is ended by
                // whoever writes first (`end_prompt_line`).
                self.parts.cancel.cancel();
                self.answer(Answer::Interrupted);
            }
            Key::Enter => {
                let line = std::mem::take(&mut self.typed);
                if self.answer(parse_answer(&line)) {
                    // The answer to a permission prompt, not a steer.
                    return;
                }
                let compact_now = super::compaction::parse_compact(&line);
                if let (Some(instruction), Some(compact)) = (compact_now, &self.parts.compact) {
                    compact.start(instruction);
                } else if !line.trim().is_empty() {
                    let _ = self.parts.steers.send(line);
                }
            }
            Key::Backspace => {
                if self.typed.pop().is_some() && self.asking() {
                    self.echo("\x08 \x08");
                }
            }
            Key::Text(c) => {
                self.typed.push(c);
                if self.asking() {
                    self.echo(&c.to_string());
                }
            }
            Key::Other => {}
        }
    }
}

/// The terminal side of a turn, with colour or without.
pub fn term_ui(color: bool) -> TermUi {
    let (width, height) = crossterm::terminal::size().map_or((80, 24), |(w, h)| (w as usize, h as usize));
    TermUi {
        md: MarkdownStream::new(color, true, width).with_height(height),
        color,
        lock: Arc::default(),
        spinner: None,
        reasoning: false,
        can_ask: false,
        answer: Arc::default(),
        live: 0,
    }
}
