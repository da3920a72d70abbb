//! The chat: an [`Agent`] with someone at the keyboard. Used by the REPL
//! (`repl`) and one-shot mode (`oneshot`). It adds to the agent's turn what
//! only a person brings (through [`ChatDriver`], the turn's
//! [`crate::agent::Driver`]): lines typed during a turn join it as steers,
//! `/compact` typed meanwhile starts glrs-compact in the background, and
//! compaction runs when a request overflows or the context passes the line
//! (`compaction`).
//!
//! A `Chat` derefs to its `Agent`: what a session is and does is the
//! agent's; what is here is only the chat's.

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
}

/// An open conversation with someone at the keyboard.
pub struct Chat {
    agent: Agent,
    automatic: Automatic,
}

impl std::ops::Deref for Chat {
    type Target = Agent;
    fn deref(&self) -> &Agent {
        &self.agent
    }
}

impl std::ops::DerefMut for Chat {
    fn deref_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }
}

impl From<Agent> for Chat {
    fn from(agent: Agent) -> Chat {
        Chat { agent, automatic: Automatic::default() }
    }
}

impl Chat {
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
        outcome
    }
}

/// The chat's part in a turn ([`Driver`]).
struct ChatDriver<'a> {
    automatic: &'a mut Automatic,
    /// Lines typed during the turn (the REPL's key watcher).
    typed: &'a mut dyn FnMut() -> Vec<String>,
}
