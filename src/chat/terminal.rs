//! The terminal side of a REPL turn: the UI that streams the reply and
//! shows tool calls (one line each, a dimmed preview of the result, errors
//! in red) and asks permission, and the key watcher that reads keys while
//! the terminal is in raw mode (Esc or Ctrl-C stop the turn, Enter sends a
//! steer or answers a permission prompt).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::TurnUi;
use super::render::{MarkdownStream, Spinner};
use crate::output::{Style, terminal_safe};
use crate::provider::{Cancel, Delta};
use crate::store::ToolCall;
use crate::tools::ToolOutput;
use crate::tools::permissions::{Answer, Question, parse_answer};

/// Where the key watcher sends the line typed at a permission prompt
/// (`None`: Esc or Ctrl-C).
pub type AnswerSlot = Arc<Mutex<Option<std::sync::mpsc::Sender<Option<String>>>>>;

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
}

impl TermUi {
    /// Write text (newlines as the raw-mode terminal needs them).
    pub fn write(&self, text: &str) {
        let _guard = self.lock.lock();
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

    fn ask(&mut self, question: &Question<'_>) -> Answer {
        self.stop_spinner();
        if !self.can_ask {
            return Answer::Cannot;
        }
        let mut text = String::new();
        if let Some(preview) = &question.preview {
            text.push_str(&self.dim(&terminal_safe(preview.trim_end())));
            text.push('\n');
        }
        let always = if question.tool == "bash" { "this command" } else { question.tool };
        text.push_str(&format!(
            "allow {}? y yes · a always ({always}, this session) · n no · or type what to do instead: ",
            question.tool
        ));
        let (tx, rx) = std::sync::mpsc::channel();
        if let Ok(mut slot) = self.answer.lock() {
            *slot = Some(tx);
        }
        self.write(&text);
        match rx.recv() {
            Ok(Some(line)) => parse_answer(&line),
            _ => Answer::Interrupted,
        }
    }

    fn notice(&mut self, text: &str) {
        self.stop_spinner();
        let line = self.dim(&terminal_safe(text));
        self.write(&format!("{line}\n"));
    }
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

/// Reads keys while a turn runs (the terminal in raw mode).
pub struct KeyWatch {
    /// Set to make the watcher stop.
    pub stop: Arc<AtomicBool>,
    /// The watcher; it returns the text typed but not sent.
    pub thread: Option<std::thread::JoinHandle<String>>,
}

impl KeyWatch {
    /// Watch keys: Esc and Ctrl-C cancel, lines sent become steers.
    pub fn start(cancel: Arc<Cancel>, steers: Arc<Mutex<Vec<String>>>) -> KeyWatch {
        KeyWatch::start_with(cancel, steers, None, Arc::default(), Arc::default())
    }

    /// True while keys are read (the terminal went into raw mode).
    pub fn active(&self) -> bool {
        !self.stop.load(Ordering::SeqCst)
    }

    /// Watch keys, also starting background compactions and answering permission prompts.
    pub fn start_with(
        cancel: Arc<Cancel>,
        steers: Arc<Mutex<Vec<String>>>,
        compact: Option<BackgroundCompact>,
        answer: AnswerSlot,
        lock: Arc<Mutex<()>>,
    ) -> KeyWatch {
        let raw = crossterm::terminal::enable_raw_mode().is_ok();
        let stop = Arc::new(AtomicBool::new(!raw));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut typed = String::new();
            // A steer half typed when a permission prompt appears waits
            // here, so the answer is only what is typed at the prompt.
            let mut held: Option<String> = None;
            let asking = || answer.lock().is_ok_and(|slot| slot.is_some());
            let echo = |text: &str| {
                let _guard = lock.lock();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            };
            let reply = |line: Option<String>| {
                if let Some(tx) = answer.lock().ok().and_then(|mut slot| slot.take()) {
                    let _ = tx.send(line);
                    true
                } else {
                    false
                }
            };
            while !flag.load(Ordering::SeqCst) {
                if !event::poll(Duration::from_millis(30)).unwrap_or(false) {
                    continue;
                }
                let event = event::read();
                if held.is_none() && asking() {
                    held = Some(std::mem::take(&mut typed));
                }
                match event {
                    Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => match key.code {
                        KeyCode::Esc => {
                            cancel.cancel();
                            if reply(None) {
                                echo("\r\n");
                                typed = held.take().unwrap_or_default();
                            }
                        }
                        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                            cancel.cancel();
                            if reply(None) {
                                echo("\r\n");
                                typed = held.take().unwrap_or_default();
                            }
                        }
                        KeyCode::Enter => {
                            let line = std::mem::take(&mut typed);
                            if reply(Some(line.clone())) {
                                // The answer to a permission prompt, not a steer.
                                echo("\r\n");
                                typed = held.take().unwrap_or_default();
                                continue;
                            }
                            let compact_now = super::compaction::parse_compact(&line);
                            if let (Some(instruction), Some(compact)) = (compact_now, &compact) {
                                compact.start(instruction);
                            } else if !line.trim().is_empty()
                                && let Ok(mut queue) = steers.lock()
                            {
                                queue.push(line);
                            }
                        }
                        KeyCode::Backspace if typed.pop().is_some() && asking() => echo("\x08 \x08"),
                        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                            typed.push(c);
                            if asking() {
                                echo(&c.to_string());
                            }
                        }
                        _ => {}
                    },
                    Ok(Event::Paste(text)) => typed.push_str(&text),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            typed
        });
        KeyWatch { stop, thread: Some(thread) }
    }

    /// Stop watching; what was typed but not sent is returned.
    pub fn finish(mut self) -> String {
        self.stop.store(true, Ordering::SeqCst);
        let typed = self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default();
        let _ = crossterm::terminal::disable_raw_mode();
        typed
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
    }
}
