//! The line editor (rustyline, which blocks while it reads) on a thread of
//! its own, talking to the REPL by channels: the REPL sends what to read
//! and awaits the line on a oneshot, beside the signal watcher. A signal at
//! the prompt wakes the editor (the SIGINT rustyline listens for, sent to
//! its thread), so it puts the terminal back as it found it.

use std::os::unix::thread::JoinHandleExt;
use std::sync::mpsc;
use std::time::Duration;

use rustyline::history::DefaultHistory;
use rustyline::{Editor, Helper};
use tokio::sync::oneshot;

use super::signals::Watcher;

/// How long the prompt is woken before the REPL leaves without it.
const WAKE_FOR: Duration = Duration::from_secs(3);

/// How often the wake is sent again (the first may come before the
/// editor reads).
const WAKE_EVERY: Duration = Duration::from_millis(50);

/// What a read gave.
pub type Read = rustyline::Result<String>;

enum Request {
    Read { prompt: String, initial: String, line: oneshot::Sender<Read> },
    Remember(String),
}

/// The editor's thread.
pub struct LineEditor {
    requests: mpsc::Sender<Request>,
    /// Never joined: it ends when `requests` is dropped, or with the
    /// process when it is stuck in a read no signal wakes.
    thread: std::thread::JoinHandle<()>,
}

impl LineEditor {
    /// Start the thread; it owns `editor` from now on.
    pub fn start<H: Helper + Send + 'static>(mut editor: Editor<H, DefaultHistory>) -> std::io::Result<LineEditor> {
        let (requests, asked) = mpsc::channel::<Request>();
        let thread = std::thread::Builder::new().name("glrs-editor".into()).spawn(move || {
            while let Ok(request) = asked.recv() {
                match request {
                    Request::Read { prompt, initial, line } => {
                        let _ = line.send(editor.readline_with_initial(&prompt, (&initial, "")));
                    }
                    Request::Remember(text) => {
                        let _ = editor.add_history_entry(text);
                    }
                }
            }
        })?;
        Ok(LineEditor { requests, thread })
    }

    /// Add `text` to the history that Up walks.
    pub fn remember(&self, text: &str) {
        let _ = self.requests.send(Request::Remember(text.to_string()));
    }

    /// Read a line at `prompt`, `initial` already typed. `None` when a
    /// signal came first (the editor is woken, its line dropped) or the
    /// editor is gone.
    pub async fn read(&self, prompt: &str, initial: &str, signals: &Watcher) -> Option<Read> {
        let (line, mut answer) = oneshot::channel();
        let request = Request::Read { prompt: prompt.to_string(), initial: initial.to_string(), line };
        self.requests.send(request).ok()?;
        tokio::select! {
            biased;
            read = &mut answer => return read.ok(),
            _ = signals.arrived() => {}
        }
        self.wake(&mut answer).await;
        None
    }

    /// Interrupt the read until it returns, at most [`WAKE_FOR`]. The
    /// watcher listens for SIGINT for the whole chat, so a wake that comes
    /// just after the read ended is harmless.
    async fn wake(&self, answer: &mut oneshot::Receiver<Read>) {
        let deadline = tokio::time::Instant::now() + WAKE_FOR;
        while tokio::time::Instant::now() < deadline {
            // SAFETY: the thread is never joined, so its id stays valid
            // even if it has ended; SIGINT has a handler (the watcher's).
            unsafe {
                libc::pthread_kill(self.thread.as_pthread_t(), libc::SIGINT);
            }
            if tokio::time::timeout(WAKE_EVERY, &mut *answer).await.is_ok() {
                return;
            }
        }
    }
}
