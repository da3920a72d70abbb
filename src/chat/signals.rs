//! SIGTERM and SIGHUP (a closed terminal) stop a running turn the way
//! Ctrl-C does: what arrived is kept and saved, then the chat exits with
//! 128 + the signal's number. Without this, closing the terminal in the
//! middle of a turn would lose everything since the last write point.
//!
//! One-shot mode waits on [`Signals`] beside its turn. The REPL spends its
//! idle time blocked in rustyline, so [`Watcher`] listens on a thread of its
//! own: during a turn it cancels the turn; at the prompt (where everything
//! is saved) it calls the REPL's idle handler, which ends the process.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

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
}

impl Watcher {
    /// Start listening. `at_idle` runs on the listening thread when a signal
    /// arrives while nothing is running.
    pub fn start(at_idle: impl Fn(Stop) + Send + 'static) -> std::io::Result<Watcher> {
        let watcher = Watcher { current: Arc::default(), received: Arc::default() };
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
                    // Held while `at_idle` runs, so no turn starts meanwhile.
                    match shared.current.lock() {
                        Ok(running) => match running.as_ref() {
                            Some(cancel) => cancel.cancel(),
                            None => at_idle(stop),
                        },
                        Err(_) => at_idle(stop),
                    }
                }
            })
        })?;
        Ok(watcher)
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
