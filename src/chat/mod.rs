//! The chat: an [`Agent`] with someone at the keyboard. Used by the REPL
//! (`repl`) and one-shot mode (`oneshot`). It adds to the agent's turn what
//! only a person brings (through [`ChatDriver`], the turn's
//! [`crate::agent::Driver`]): lines typed during a turn join it as steers,
//! `/compact` typed meanwhile starts glrs-compact in the background, and
//! compaction runs when a request overflows or the context passes the line
//! (`compaction`).
//!
//! What a session is and does is the agent's; what is here is only the
//! chat's. A `Chat` shows its agent read-only ([`Chat::agent`]) and changes
//! it only through the few things a person at the keyboard can do (the
//! methods below: a turn, `/model`, `/thinking`, `/sandbox`, `/clear`,
//! `/rewind`, quitting); everything set up before the first line (keys,
//! permissions, tools, servers) is done on the `Agent` before it becomes a
//! chat.

/// `println!` that never panics: the terminal may be gone (closed
/// mid-turn), and the chat must still save and leave.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that never panics, as [`say!`], and made terminal_safe on
/// a terminal ([`crate::output::to_stderr`]): a warning may carry a hook's
/// or a server's text.
macro_rules! warn {
    ($($arg:tt)*) => {{
        crate::output::to_stderr(format_args!($($arg)*));
    }};
}

pub mod compaction;
pub mod editor;
pub mod history;
pub mod keyboard;
pub mod markdown;
pub mod oneshot;
pub mod picker;
pub mod render;
pub mod repl;
pub mod rewind;
pub mod signals;
pub mod slash;
pub mod terminal;

pub use crate::agent::{Agent, TurnKind, TurnOutcome, TurnUi};
use crate::provider::{CallError, Cancel};

/// What the chat remembers between turns about compaction.
#[derive(Debug, Default)]
struct Automatic {
    /// Automatic compactions since the last user message (at most one).
    count: u32,
    /// The context size when an automatic compaction last found nothing
    /// to compact, and the agent's [`Agent::rebuilds`] then: forgotten once
    /// the context was rebuilt from the file or cleared.
    nothing_at: Option<(u64, u64)>,
    /// The last user turn ended with a context overflow compaction could
    /// not fix: no memory flush re-sends that context.
    overflowed: bool,
    /// Compactions started during a turn (`/compact` typed meanwhile).
    background: Vec<crate::process::Background>,
    /// The last user turn failed because the model's server did not answer
    /// (after its retries): the flush and compaction at idle, which would
    /// ask the same server, do not run (issue 33: three rounds of retries).
    unreachable: bool,
    /// A turn that passes the compaction line compacts and goes on, rather
    /// than stopping for a "continue" (one-shot: no one could send it).
    goes_on_at_line: bool,
}

/// An open conversation with someone at the keyboard.
pub struct Chat {
    agent: Agent,
    automatic: Automatic,
}

impl From<Agent> for Chat {
    fn from(agent: Agent) -> Chat {
        Chat { agent, automatic: Automatic::default() }
    }
}

impl Chat {
    /// The agent, to read what the session is (its id, model, store,
    /// context) without changing it.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// `/model`: switch models for the next turns.
    pub fn set_model(&mut self, model: crate::provider::select::ModelRef) -> anyhow::Result<()> {
        self.agent.set_model(model)
    }

    /// `/thinking`: the thinking level of the next turns.
    pub fn set_thinking(&mut self, level: crate::provider::cache::Thinking) {
        self.agent.set_thinking(level);
    }

    /// `/sandbox MODE`: the sandbox mode of the next calls.
    pub fn set_sandbox_mode(&mut self, mode: crate::sandbox::Mode) {
        self.agent.set_sandbox_mode(mode);
    }

    /// `/clear`: the model starts from nothing; the transcript stays.
    pub fn clear(&mut self) -> Option<crate::agent::WriteNote> {
        self.agent.clear()
    }

    /// Whether the session is due for its daily or idle reset (SPEC 16),
    /// and why.
    pub fn reset_due(&mut self, now: &jiff::Zoned) -> Option<String> {
        self.agent.reset_due(now)
    }

    /// The workspace's checkpoints (`/rewind`).
    pub fn checkpoints(&mut self) -> &mut crate::checkpoint::Tracker {
        self.agent.checkpoints()
    }

    /// `/rewind`: put the workspace's files back as they were at `target`.
    pub async fn rewind_files(
        &mut self,
        target: &crate::rewind::Point,
    ) -> Result<(Vec<crate::checkpoint::Change>, usize), String> {
        self.agent.rewind_files(target).await
    }

    /// One-shot: a turn that passes the compaction line compacts and goes
    /// on by itself (SPEC 6); the REPL's stop and "continue" need a person.
    pub fn go_on_at_line(&mut self) {
        self.automatic.goes_on_at_line = true;
    }

    /// Quitting: write what is unwritten and let the session go.
    pub fn leave(&mut self) -> Result<(), crate::agent::Unsaved> {
        self.agent.leave()
    }

    /// Run one turn for `text`. `steers` is asked before each model call for
    /// lines the user typed meanwhile; they join the turn as `steer` user
    /// messages (a `/compact` among them starts a compaction in the
    /// background instead).
    pub async fn turn(
        &mut self,
        text: &str,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
        steers: &mut dyn FnMut() -> Vec<String>,
    ) -> TurnOutcome {
        // At most one automatic compaction per user message.
        self.automatic.count = 0;
        let mut driver = ChatDriver { automatic: &mut self.automatic, typed: steers };
        let outcome = self.agent.turn_with(text, TurnKind::Normal, ui, cancel, &mut driver).await;
        self.automatic.overflowed = matches!(outcome.error, Some(CallError::Overflow(_)));
        self.automatic.unreachable = outcome.error.as_ref().is_some_and(CallError::server_down);
        outcome
    }
}

/// The chat's part in a turn ([`Driver`]).
struct ChatDriver<'a> {
    automatic: &'a mut Automatic,
    /// Lines typed during the turn (the REPL's key watcher).
    typed: &'a mut dyn FnMut() -> Vec<String>,
}
