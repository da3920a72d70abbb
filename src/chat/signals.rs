//! SIGTERM and SIGHUP (a closed terminal) stop a running turn the way
//! Ctrl-C does: what arrived is kept and saved, then the chat exits with
//! 128 + the signal's number. Without this, closing the terminal in the
//! middle of a turn would lose everything since the last write point.
//!
//! One-shot mode waits on [`Signals`] beside its turn. The REPL's
//! [`Watcher`] is a task on the runtime: during a turn it cancels the turn;
//! at the prompt the REPL, waiting for the line editor's thread and the
//! watcher at once, wakes the editor and leaves the way Ctrl-D does: what
//! an earlier failed save left unwritten gets one more attempt, else a
//! recovery file. Between the two (a slash command running), the REPL sees
//! the signal before its next prompt.

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
    pub fn exit_code(self) -> crate::exit::ExitCode {
        crate::exit::ExitCode::Signal(self.number())
    }

    fn number(self) -> i32 {
        match self {
            Stop::Terminate => libc::SIGTERM,
            Stop::Hangup => libc::SIGHUP,
        }
    }

    /// The signal's name (`TERM`, `HUP`).
    pub fn name(self) -> &'static str {
        match self {
            Stop::Terminate => "SIGTERM",
            Stop::Hangup => "SIGHUP",
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

/// Listens for SIGTERM and SIGHUP for the REPL, in a task on the runtime.
/// A closed terminal ([`Watcher::raise`] with [`Stop::Hangup`] from the key
/// reader, on end of file) is taken for SIGHUP.
#[derive(Clone)]
pub struct Watcher {
    /// The cancel of the turn (or idle work) running now, if any. Held
    /// while a signal is noted, so work starting meanwhile sees it.
    current: Arc<Mutex<Option<Arc<Cancel>>>>,
    received: tokio::sync::watch::Sender<Option<Stop>>,
}

impl Watcher {
    /// Start listening (inside the runtime). SIGINT is listened for too,
    /// and only stops the work running: at the prompt the line editor
    /// catches it itself (it wakes the prompt, [`Watcher::arrived`]), and
    /// a stray one never ends the chat without saving.
    pub fn start() -> std::io::Result<Watcher> {
        let watcher = Watcher { current: Arc::default(), received: tokio::sync::watch::Sender::new(None) };
        // Registered here, before the task runs, so a signal sent right
        // after start-up is never lost (nor fatal).
        let mut signals = Signals::new()?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let shared = watcher.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    stop = signals.recv() => shared.raise(stop),
                    Some(()) = interrupt.recv() => shared.cancel_current(),
                }
            }
        });
        Ok(watcher)
    }

    /// Note `stop` (the first one counts) and stop the work running.
    pub fn raise(&self, stop: Stop) {
        let running = self.current.lock();
        self.received.send_if_modified(|seen| seen.is_none() && seen.replace(stop).is_none());
        if let Some(cancel) = running.as_ref().ok().and_then(|r| r.as_ref()) {
            cancel.cancel();
        }
    }

    fn cancel_current(&self) {
        if let Some(cancel) = self.current.lock().ok().and_then(|r| r.clone()) {
            cancel.cancel();
        }
    }

    /// Run `work` as the thing a signal stops (through `cancel`).
    pub async fn during<T>(&self, cancel: &Arc<Cancel>, work: impl Future<Output = T>) -> T {
        if let Ok(mut current) = self.current.lock() {
            *current = Some(cancel.clone());
            // A signal that arrived just before is not lost.
            if self.received().is_some() {
                cancel.cancel();
            }
        }
        let out = work.await;
        if let Ok(mut current) = self.current.lock() {
            *current = None;
        }
        out
    }

    /// The signal that arrived, if one did.
    pub fn received(&self) -> Option<Stop> {
        *self.received.borrow()
    }

    /// Resolves when a signal has arrived (at once if one did).
    pub async fn arrived(&self) -> Stop {
        let mut seen = self.received.subscribe();
        loop {
            if let Some(stop) = *seen.borrow_and_update() {
                return stop;
            }
            // The sender lives in `self`: the channel never closes here.
            let _ = seen.changed().await;
        }
    }
}
