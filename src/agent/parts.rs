//! The parts an [`Agent`](super::Agent) is made of, along its seams: the
//! session log it records to, the context it holds in memory, the model it
//! is bound to, and what its system prompt is made of. Plain data: the
//! behaviour is the agent's, in the files beside this one.

use crate::SessionId;
use crate::provider::select::ModelRef;
use crate::provider::{Message, Provider};
use crate::store::{Entry, OpenLock, Store};

use super::pruning::LastPrune;
use super::system::Instructions;

/// The session file as this agent last wrote or read it: one record,
/// replaced whole at every read and write, so its parts never disagree.
#[derive(Debug, Clone, Default)]
pub(super) struct LastSeen {
    /// Its stamp and mark, once the file is in the store (`None` before the
    /// first write, and for a legacy session until its first write saves it
    /// there). When the file's stamp differs, another program changed it;
    /// a write that finds the file still at the mark appends in place.
    pub file: Option<(crate::store::Stamp, crate::store::Mark)>,
    /// How many entries it held: a write that finds more merges another
    /// program's entries.
    pub entries: usize,
    /// Its `updatedAt`.
    pub updated_at: Option<String>,
    /// True when it holds a `thinking` header field.
    pub thinking: bool,
}

/// The session an agent records to: where it lives, what is known of its
/// file, and what is not written yet. Holds the session's open lock.
pub(super) struct SessionLog {
    /// The store the session lives in.
    pub store: Store,
    /// The session's id.
    pub id: SessionId,
    /// The working folder the session belongs to (its `cwd`).
    pub cwd: String,
    /// The session key that owns this session, if any.
    pub key: Option<String>,
    /// True once `keys.json` points the key at this session.
    pub key_recorded: bool,
    /// The session file as this agent last wrote or read it.
    pub seen: LastSeen,
    /// Entries recorded but not yet on disk (a write failed, or they wait
    /// for the next write point).
    pub unwritten: Vec<Entry>,
    _open: OpenLock,
}

impl SessionLog {
    /// The log of a session nothing has been read of yet.
    pub fn new(store: Store, id: SessionId, cwd: String, open: OpenLock) -> Self {
        SessionLog {
            store,
            id,
            cwd,
            key: None,
            key_recorded: false,
            seen: LastSeen::default(),
            unwritten: Vec::new(),
            _open: open,
        }
    }
}

/// The context the next model call sends, and what is known about it.
#[derive(Default)]
pub(super) struct LiveContext {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The estimate of the context the next request sends (SPEC 5).
    pub tokens: u64,
    /// How many times the context was rebuilt from the file or cleared:
    /// what the chat remembers of a context (a compaction that found
    /// nothing) holds only while this is unchanged.
    pub rebuilds: u64,
    /// The last pruning pass that changed the context.
    pub last_prune: Option<LastPrune>,
    /// Where the session is in its compaction cycle (compactions, the last
    /// flush, a cancelled automatic compaction).
    pub cycle: crate::compact::flush::Cycle,
}

/// The model an agent talks to, and how.
pub(super) struct Binding {
    /// The model.
    pub model: ModelRef,
    /// The provider serving it.
    pub provider: Provider,
    /// Its context window, in tokens.
    pub window: u64,
    /// The thinking level (SPEC 16): saved in the header as `thinking`.
    pub thinking: crate::provider::cache::Thinking,
    /// When the session's last model call was (its `updatedAt` on resume):
    /// pruning waits until it is older than `contextPruning.ttl`.
    pub last_call: Option<jiff::Timestamp>,
}

/// What the system prompt is made of besides the tools.
pub(super) struct Prompt {
    /// The replacement for the default part (`--system`, `systemPrompt`, or
    /// the session header's `system`); saved in the header.
    pub system: Option<String>,
    /// What the `AGENTS.md` files add.
    pub agents: Instructions,
}
