//! SIGTERM and SIGHUP (a closed terminal) stop a running turn the way
//! Ctrl-C does: what arrived is kept and saved, then the chat exits with
//! 128 + the signal's number. Without this, closing the terminal in the
//! middle of a turn would lose everything since the last write point.
//!
//! One-shot mode waits on [`Signals`] beside its turn. The REPL spends its
//! idle time blocked in rustyline, so [`Watcher`] listens on a thread of its
//! own: during a turn it cancels the turn; at the prompt it wakes rustyline
//! (with the SIGINT rustyline listens for), and the REPL leaves the way
//! Ctrl-D does: what an earlier failed save left unwritten gets one more
//! attempt, else a recovery file. Between the two (a slash command
//! running), the REPL sees the signal before its next prompt.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::provider::Cancel;

/// A signal that ends the chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM.
    Terminate,
    /// SIGHUP.
    Hangup,
}

impl Stop {
    /// The exit status a shell reports for this signal.
    pub fn exit_code(self) -> i32 {
        128 + self.number()
    }

    fn number(self) -> i32 {
        match self {
            Stop::Terminate => 15,
            Stop::Hangup => 1,
        }
    }

    /// The signal's name (`TERM`, `HUP`).
    pub fn name(self) -> &'static str {
        match self {
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
        }
    }

    fn from_number(n: i32) -> Option<Stop> {
        match n {
            15 => Some(Stop::Terminate),
            1 => Some(Stop::Hangup),
            _ => None,
        }
    }
}

/// SIGTERM and SIGHUP, for a task that runs inside a tokio runtime.
pub struct Signals {
    term: Signal,
    hup: Signal,
}

impl Signals {
    /// Start listening for the signals.
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals { term: signal(SignalKind::terminate())?, hup: signal(SignalKind::hangup())? })
    }

    /// The next of the two to arrive.
    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.term.recv() => Stop::Terminate,
            _ = self.hup.recv() => Stop::Hangup,
        }
    }
}

/// Listens for SIGTERM and SIGHUP on its own thread, for the REPL.
#[derive(Clone)]
pub struct Watcher {
    /// The cancel of the turn (or idle work) running now, if any.
    current: Arc<Mutex<Option<Arc<Cancel>>>>,
    received: Arc<AtomicI32>,
    /// True while the REPL waits at its prompt ([`Watcher::at_prompt`]).
    prompting: Arc<AtomicBool>,
    /// The thread that waits at the prompt.
    reader: Arc<Mutex<Option<Reader>>>,
}

/// The thread that reads the prompt: rustyline's read returns only when
/// that thread is interrupted (any other thread may take a signal sent to
/// the process).
#[derive(Clone, Copy)]
struct Reader(libc::pthread_t);
// SAFETY: a thread id is only passed to pthread_kill, from any thread; it
// is a plain id, not memory this process shares.
unsafe impl Send for Reader {}

/// How long the prompt is woken before the old way is taken (a terminal
/// rustyline reads without listening for signals): `at_idle`.
const WAKE_FOR: Duration = Duration::from_secs(3);

impl Watcher {
    /// Start listening. At the prompt a signal wakes the prompt, which
    /// returns [`rustyline::error::ReadlineError::Interrupted`]: the caller
    /// then sees [`Watcher::received`] and leaves. `at_idle` runs on the
    /// listening thread only when the prompt does not wake.
    pub fn start(at_idle: impl Fn(Stop) + Send + 'static) -> std::io::Result<Watcher> {
        let watcher = Watcher {
            current: Arc::default(),
            received: Arc::default(),
            prompting: Arc::default(),
            reader: Arc::default(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
        // Registered here, before the thread starts, so a signal sent right
        // after start-up is never lost (nor fatal).
        let mut signals = runtime.block_on(async { Signals::new() })?;
        let shared = watcher.clone();
        std::thread::Builder::new().name("glrs-signals".into()).spawn(move || {
            runtime.block_on(async {
                loop {
                    let stop = signals.recv().await;
                    shared.received.store(stop.number(), Ordering::SeqCst);
                    // Held meanwhile, so no turn starts.
                    let running = shared.current.lock();
                    match running.as_ref().ok().and_then(|r| r.as_ref()) {
                        Some(cancel) => cancel.cancel(),
                        None if shared.wake_prompt() => {}
                        None => at_idle(stop),
                    }
                }
            })
        })?;
        Ok(watcher)
    }

    /// Run `read` (the prompt) so that a signal wakes it; `None`, without
    /// reading, when a signal has come already.
    pub fn at_prompt<T>(&self, read: impl FnOnce() -> T) -> Option<T> {
        if let Ok(mut reader) = self.reader.lock() {
            // SAFETY: pthread_self has no preconditions.
            *reader = Some(Reader(unsafe { libc::pthread_self() }));
        }
        self.prompting.store(true, Ordering::SeqCst);
        // Checked after `prompting` is set: a signal either sees the prompt
        // waiting (and wakes it) or is seen here.
        let out = if self.received().is_some() { None } else { Some(read()) };
        self.prompting.store(false, Ordering::SeqCst);
        out
    }

    /// Wake the prompt if it is waiting. False only when it cannot be
    /// woken: no SIGINT handler of rustyline's (stdout is not a terminal),
    /// or it did not wake within [`WAKE_FOR`]. When it is not waiting, the
    /// REPL sees `received` before its next prompt.
    fn wake_prompt(&self) -> bool {
        if !self.prompting.load(Ordering::SeqCst) {
            return true;
        }
        let reader = self.reader.lock().ok().and_then(|r| *r);
        let Some(Reader(thread)) = reader.filter(|_| interrupt_is_handled()) else { return false };
        let deadline = std::time::Instant::now() + WAKE_FOR;
        while self.prompting.load(Ordering::SeqCst) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            // Again and again: the first may come before rustyline reads.
            // SAFETY: the thread is the REPL's, alive while it prompts;
            // SIGINT has a handler (checked above), so it cannot end the
            // process.
            unsafe {
                libc::pthread_kill(thread, libc::SIGINT);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        true
    }

    /// Run `work` as the thing a signal stops (through `cancel`).
    pub fn during<T>(&self, cancel: &Arc<Cancel>, work: impl FnOnce() -> T) -> T {
        if let Ok(mut current) = self.current.lock() {
            *current = Some(cancel.clone());
        }
        // A signal that arrived just before is not lost.
        if self.received().is_some() {
            cancel.cancel();
        }
        let out = work();
        if let Ok(mut current) = self.current.lock() {
            *current = None;
        }
        out
    }

    /// The signal that arrived, if one did.
    pub fn received(&self) -> Option<Stop> {
        Stop::from_number(self.received.load(Ordering::SeqCst))
    }
}

/// True when SIGINT has a handler (rustyline installs one for its prompt
/// on a terminal): then it interrupts the prompt rather than end the process.
fn interrupt_is_handled() -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new
    // action only reads the current one.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction != libc::SIG_DFL
            && current.sa_sigaction != libc::SIG_IGN
    }
}
