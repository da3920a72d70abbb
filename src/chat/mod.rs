//! The chat: one open session, its context in memory, and the turn loop
//! (`turn`). Used by the REPL (`repl`) and one-shot mode (`oneshot`).
//!
//! A `Chat` holds the session's open lock for as long as it lives. It
//! remembers the stamp of the file it last wrote; when the file's stamp
//! differs before a model call, another program changed the session (e.g.
//! a compaction landed) and the context is rebuilt from the file.

pub mod compaction;
pub mod history;
pub mod hooked;
pub mod markdown;
pub mod oneshot;
pub mod picker;
pub mod pruning;
pub mod render;
pub mod repl;
pub mod reset;
pub mod session_tools;
pub mod signals;
pub mod system;
pub mod terminal;
pub mod turn;

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::config::Config;
use crate::context;
use crate::error::StoreError;
use crate::provider::select::ModelRef;
use crate::provider::{Message, Provider, catalogue};
use crate::redact::Redactor;
use crate::store::{Append, Entry, Located, OpenLock, Parsed, Stamp, Store};
use crate::tools::{Permissions, Registry};
use crate::{SessionId, time};
pub use turn::{TurnOutcome, TurnUi};

/// An open conversation: the session it records to, the model it talks to, and what it holds in memory between writes.
pub struct Chat {
    /// The store the session lives in.
    pub store: Store,
    /// The configuration it was started with.
    pub config: Config,
    /// The session's id.
    pub id: SessionId,
    /// The working folder the session belongs to (its `cwd`).
    pub cwd: String,
    /// The model it talks to.
    pub model: ModelRef,
    /// The provider serving `model`.
    pub provider: Provider,
    /// The system prompt's replacement for the default part (`--system`,
    /// `systemPrompt`, or the session header's `system`); saved in the header.
    pub system: Option<String>,
    /// What the `AGENTS.md` files add to the system prompt.
    agents: String,
    /// Every tool the model can call, and the session's permissions.
    pub tools: Registry,
    /// Applied to everything this chat writes.
    pub redactor: Redactor,
    /// The context the next model call sends.
    pub messages: Vec<Message>,
    /// The estimate of the context the next request sends (SPEC 5).
    pub context_tokens: u64,
    /// The context window of `model`, in tokens.
    pub window: u64,
    /// The thinking level (SPEC 16): saved in the header as `thinking`.
    pub thinking: crate::provider::cache::Thinking,
    /// When the session's last model call was (its `updatedAt` on resume):
    /// pruning waits until it is older than `contextPruning.ttl`.
    pub last_call: Option<jiff::Timestamp>,
    /// The last pruning pass that changed the context.
    pub last_prune: Option<pruning::LastPrune>,
    /// The stamp of the file as this chat last wrote or read it; `None`
    /// before the session's first write.
    stamp: Option<Stamp>,
    /// Compactions in the session, and the cycle of the last memory flush.
    pub compactions: u64,
    /// The compaction count the newest memory flush recorded, if any.
    pub flushed_cycle: Option<u64>,
    /// Automatic compactions since the last user message (at most one).
    pub auto_compactions: u32,
    /// The context size when an automatic compaction last found nothing
    /// to compact; `None` once the context was rebuilt or compacted.
    pub nothing_to_compact_at: Option<u64>,
    /// The last user turn ended with a context overflow compaction could
    /// not fix: no memory flush re-sends that context.
    pub overflowed: bool,
    /// Compactions started during a turn (`/compact` typed meanwhile).
    background: Vec<std::process::Child>,
    /// The session key that owns this session, if any.
    pub key: Option<String>,
    /// True once `keys.json` points the key at this session.
    pub key_recorded: bool,
    /// True when the file holds a `thinking` header field.
    thinking_recorded: bool,
    /// The file's `updatedAt` as this chat last wrote or read it.
    pub(crate) updated_at: Option<String>,
    /// The mark of the file as this chat last wrote or read it: a write
    /// that finds the file still so appends in place without reading it.
    mark: Option<crate::store::Mark>,
    /// How many entries the file had when this chat last read or wrote it:
    /// a write that finds more merged another program's entries.
    known_len: usize,
    /// Entries recorded but not yet on disk (a write failed, or they wait
    /// for the next write point).
    unwritten: Vec<Entry>,
    _open: OpenLock,
}

impl Chat {
    /// A new session. Its file is created at the first write, so starting
    /// and quitting leaves nothing behind.
    pub fn start(store: Store, config: Config, model: ModelRef, system: Option<String>, cwd: String) -> Result<Chat> {
        // A bad model or a missing key fails here, before any file exists.
        let provider = Provider::from_config(&config, &model.provider)?;
        let (id, open) = loop {
            let id = store.fresh_id()?;
            let open = store.open_lock(&id)?;
            // Taken the lock first: now nobody else can have made this id.
            if store.locate(&id).is_none() {
                break (id, open);
            }
        };
        let system = system.or_else(|| config.system_prompt.clone());
        Chat::assemble(store, config, id, open, model, provider, system, cwd)
    }

    /// A chat on `id` with nothing read yet: what `start` returns, and what
    /// `resume` fills in from the file.
    #[allow(clippy::too_many_arguments)] // each is a distinct part of an open chat
    fn assemble(
        store: Store,
        config: Config,
        id: SessionId,
        open: OpenLock,
        model: ModelRef,
        provider: Provider,
        system: Option<String>,
        cwd: String,
    ) -> Result<Chat> {
        let window = catalogue::context_window(&config, &model.provider, &model.model);
        let permissions = Permissions::new(&config.permissions.allow, &config.permissions.deny, &[], false)?;
        let mut tools = Registry::with_builtins(config.tool_offering()?, permissions);
        tools.add(std::sync::Arc::new(session_tools::MemoryAppend { cwd: cwd.clone().into() }));
        for kind in session_tools::COMPACTION_TOOLS {
            tools.add(std::sync::Arc::new(session_tools::CompactionTool {
                kind,
                store: store.clone(),
                id: id.clone(),
            }));
        }
        let agents = system::agents_text(&system::agents_files(system::config_home().as_deref(), Path::new(&cwd)));
        let redactor = config.redactor()?;
        Ok(Chat {
            store,
            id,
            cwd,
            provider,
            window,
            thinking: config.thinking.unwrap_or_default(),
            last_call: None,
            last_prune: None,
            system,
            agents,
            tools,
            redactor,
            messages: Vec::new(),
            context_tokens: 0,
            stamp: None,
            mark: None,
            thinking_recorded: false,
            updated_at: None,
            known_len: 0,
            unwritten: Vec::new(),
            key: None,
            key_recorded: false,
            compactions: 0,
            flushed_cycle: None,
            auto_compactions: 0,
            nothing_to_compact_at: None,
            overflowed: false,
            background: Vec::new(),
            _open: open,
            model,
            config,
        })
    }

    /// Open an existing session. Refused (`Busy`, exit 4) while another chat
    /// has it open. The model is `model`, else the one the session last used.
    pub fn resume(
        store: Store,
        config: Config,
        at: &Located,
        model: Option<ModelRef>,
        fallback: impl FnOnce() -> Result<ModelRef>,
        system: Option<String>,
    ) -> Result<Chat> {
        let open = store.open_lock(&at.id)?;
        Chat::resume_locked(open, store, config, at, model, fallback, system)
    }

    /// [`Chat::resume`] with the open lock already taken (by `glrs-compact`
    /// for its memory flush, marked as a compaction).
    pub fn resume_locked(
        open: OpenLock,
        store: Store,
        config: Config,
        at: &Located,
        model: Option<ModelRef>,
        fallback: impl FnOnce() -> Result<ModelRef>,
        system: Option<String>,
    ) -> Result<Chat> {
        // The stamp first: if the file changes while it is read, the stamp
        // is the older one, and the next check reloads (never the reverse).
        let stamp = Stamp::of(&at.path).with_context(|| format!("cannot read {}", at.path.display()))?;
        // Only the entries from the last boundary on are read (and only
        // those the context uses parsed); counts come from a streaming scan.
        let recent = compaction::read_for_context(&store, at)?;
        let file = &recent.lines;
        let events = file.entries();
        let model = match model {
            Some(m) => m,
            None => match file.get_str("model") {
                Some(name) => ModelRef::parse(name)?,
                None => fallback()?,
            },
        };
        let provider = Provider::from_config(&config, &model.provider)?;
        let cwd = file.get_str("cwd").unwrap_or("").to_string();
        // `--system` wins, then what the session was started with, then the config.
        let system =
            system.or_else(|| file.get_str("system").map(str::to_string)).or_else(|| config.system_prompt.clone());
        let mut chat = Chat::assemble(store, config, at.id.clone(), open, model, provider, system, cwd)?;
        chat.messages = context::replay_from(&events, recent.first);
        chat.context_tokens = file.get_u64("contextTokens").unwrap_or(0);
        chat.key = file.get_str("key").map(str::to_string);
        chat.key_recorded = true;
        chat.last_call = file.get_str("updatedAt").and_then(|t| t.parse().ok());
        chat.thinking_recorded = file.get("thinking").is_some();
        chat.updated_at = file.get_str("updatedAt").map(str::to_string);
        if let Some(level) = file.get_str("thinking").and_then(|t| crate::provider::cache::Thinking::parse(t).ok()) {
            chat.thinking = level;
        }
        (chat.compactions, chat.flushed_cycle) = crate::compact::flush::cycle_of(&recent.hit_texts());
        chat.known_len = recent.total;
        // A legacy session has no file in the store yet: its first write
        // saves it there.
        if !at.legacy {
            chat.stamp = Some(stamp);
            chat.mark = Some(file.mark.clone());
        }
        Ok(chat)
    }

    /// Permissions from the config plus `--allow` rules and `--allow-all`.
    pub fn set_permissions(&mut self, allow: &[String], allow_all: bool) -> Result<()> {
        let p = &self.config.permissions;
        self.tools.permissions = Permissions::new(&p.allow, &p.deny, allow, allow_all)?;
        Ok(())
    }

    /// `--no-tools`: offer the model nothing.
    pub fn no_tools(&mut self) {
        self.tools.offer_none();
    }

    /// The system prompt as sent: the default part (or its replacement),
    /// then the `AGENTS.md` files.
    pub fn system_prompt(&self) -> Option<String> {
        let builtins = self.tools.builtin_names();
        let builtins = (!builtins.is_empty()).then_some(builtins);
        system::assemble(self.system.as_deref(), builtins.as_deref(), &self.cwd, &self.agents)
    }

    /// The system prompt's share of the context, estimated.
    pub fn system_tokens(&self) -> u64 {
        self.system_prompt().map_or(0, |s| crate::message::estimate_text(&s))
    }

    /// An entry as it may be written: redacted.
    fn redacted(&self, entry: &Entry) -> Result<Option<Entry>, StoreError> {
        let raw =
            entry.to_raw().map_err(|e| StoreError::Corrupt { path: "(new entry)".into(), detail: e.to_string() })?;
        if !self.redactor.hit(raw.get()) {
            return Ok(None);
        }
        let mut value: Value = serde_json::from_str(raw.get())
            .map_err(|e| StoreError::Corrupt { path: "(new entry)".into(), detail: e.to_string() })?;
        self.redactor.json(&mut value);
        let raw = serde_json::value::to_raw_value(&value)
            .map_err(|e| StoreError::Corrupt { path: "(new entry)".into(), detail: e.to_string() })?;
        match Parsed::from_raw(&raw) {
            Parsed::Known(e) => Ok(Some(e)),
            _ => Err(StoreError::Corrupt {
                path: "(new entry)".into(),
                detail: "redaction changed the entry's shape".into(),
            }),
        }
    }

    /// Switch models for the next turns.
    pub fn set_model(&mut self, model: ModelRef) -> Result<()> {
        self.provider = Provider::from_config(&self.config, &model.provider)?;
        self.window = catalogue::context_window(&self.config, &model.provider, &model.model);
        self.model = model;
        Ok(())
    }

    /// The context fill, in percent of the window.
    pub fn fill_percent(&self) -> u64 {
        // Of the window compaction plans against, not the model's whole
        // window: on a 1M-token model compaction fires at `compactAt` of
        // `compactWindow`, and the prompt should say so (75%, not 18%).
        (self.context_tokens.saturating_mul(100)).checked_div(self.trigger().window).unwrap_or(0)
    }

    /// True once the session has a file in the store.
    pub fn is_saved(&self) -> bool {
        self.stamp.is_some()
    }

    /// If another program changed the session file since this chat last
    /// saw it, rebuild the context from the file (plus what this chat has
    /// not written yet). Returns true when it did.
    pub fn sync_from_disk(&mut self) -> Result<bool, StoreError> {
        let Some(known) = self.stamp else { return Ok(false) };
        let path = self.store.session_path(&self.id);
        let now = Stamp::of(&path).map_err(|e| StoreError::io(&path, "read", e))?;
        if now == known {
            return Ok(false);
        }
        let at = Located { id: self.id.clone(), path: path.clone(), legacy: false };
        let recent = compaction::read_for_context(&self.store, &at)?;
        let file = &recent.lines;
        let mut events = file.entries();
        let known_len = recent.total;
        (self.compactions, self.flushed_cycle) = crate::compact::flush::cycle_of(&recent.hit_texts());
        let unwritten: Vec<String> = self.unwritten.iter().filter_map(|e| serde_json::to_string(e).ok()).collect();
        events.extend(unwritten.iter().map(String::as_str));
        self.nothing_to_compact_at = None;
        self.messages = context::replay_from(&events, recent.first);
        self.context_tokens = file.get_u64("contextTokens").unwrap_or(self.context_tokens);
        self.known_len = known_len;
        self.thinking_recorded = file.get("thinking").is_some();
        self.updated_at = file.get_str("updatedAt").map(str::to_string);
        self.stamp = Some(now);
        // Read after `now` was taken: if it changed meanwhile, the stamps
        // differ at the next check, and the mark at the next write.
        self.mark = Some(file.mark.clone());
        Ok(true)
    }

    /// Add a prompt to the shared history (`prompts.json`, the REPL's Up
    /// arrow), whichever mode it was typed in. A failure is only a warning.
    pub fn remember_prompt(&self, text: &str) -> Result<()> {
        let prompt = crate::store::prompts::Prompt {
            text: self.redactor.text(text).into_owned(),
            at: time::now(),
            session: self.id.to_string(),
            cwd: self.cwd.clone(),
            truncated_from: None,
            extra: Default::default(),
        };
        self.store.add_prompt(prompt, crate::store::prompts::DEFAULT_CAP).context("prompt history not saved")
    }

    /// `/clear`: a `cleared` entry; the model starts from nothing, the
    /// transcript stays in the session.
    pub fn clear(&mut self) -> Option<WriteNote> {
        self.record(Entry::Cleared { at: time::now() });
        self.nothing_to_compact_at = None;
        self.messages.clear();
        self.context_tokens = self.system_tokens();
        self.save_or_report()
    }

    /// Record an entry for the next write point.
    pub fn record(&mut self, entry: Entry) {
        self.unwritten.push(entry);
    }

    /// A write point: every unwritten entry, `contextTokens` and `model`,
    /// in one atomic locked write. On failure the entries stay queued for
    /// the next write point, and the error is returned to be shown. A write
    /// that took effect but warned (the folder could not be synced) is done:
    /// its entries are not queued again, and the warning is returned.
    pub fn save(&mut self) -> Result<Option<String>, StoreError> {
        if self.stamp.is_none() && self.store.locate(&self.id).is_none() {
            self.store.create_as(&self.id, &self.cwd)?;
        }
        let mut change = Append::new()
            .set("contextTokens", Value::from(self.context_tokens))
            .set("model", Value::from(self.model.full()));
        if let Some(key) = &self.key {
            change = change.set("key", Value::from(key.as_str()));
        }
        if let Some(system) = &self.system {
            change = change.set("system", Value::from(self.redactor.text(system).into_owned()));
        }
        // Written only when it applies: a level other than off, or a change
        // back to off from a level the file holds.
        let set_thinking = self.thinking != crate::provider::cache::Thinking::Off || self.thinking_recorded;
        if set_thinking {
            change = change.set("thinking", Value::from(self.thinking.name()));
        }
        for entry in &self.unwritten {
            change = match self.redacted(entry)? {
                Some(clean) => change.entry(&clean)?,
                None => change.entry(entry)?,
            };
        }
        // Under the lock: if the file holds entries this chat has not seen
        // (a compaction landed during the turn), they stay, and the context
        // and `contextTokens` are rebuilt from the file as written, in the
        // same write.
        let known_len = self.known_len;
        let system_tokens = self.system_tokens();
        // Messages, entries on disk, compaction cycle, contextTokens.
        type Merged = (Vec<crate::provider::Message>, usize, (u64, Option<u64>), u64);
        let mut merged: Option<Merged> = None;
        let added = self.unwritten.len();
        // Usually appended in place. When the file is not as this chat left
        // it, it is read from the last boundary on (never whole), and this
        // chat's entries go after what is there.
        let merge = |recent: &crate::store::recent::Recent, change: &mut Append| {
            if recent.total == known_len {
                return;
            }
            let new: Vec<String> = change.entry_texts().into_iter().map(str::to_string).collect();
            let mut events = recent.lines.entries();
            events.extend(new.iter().map(String::as_str));
            let messages = context::replay_from(&events, recent.first);
            let tokens = context::estimate(&messages) + system_tokens;
            change.set_field("contextTokens", tokens);
            let mut picked = recent.hit_texts();
            picked.extend(new.iter().map(String::as_str));
            merged = Some((messages, recent.total, crate::compact::flush::cycle_of(&picked), tokens));
        };
        let written = self.store.append_since(
            &self.id,
            change,
            self.mark.as_ref(),
            compaction::CONTEXT_TYPES,
            compaction::context_start,
            merge,
        )?;
        self.unwritten.clear();
        self.thinking_recorded |= set_thinking;
        self.updated_at = Some(written.updated_at.clone());
        let warning = written.warning.clone().map(|w| format!("the session was saved, but {w}"));
        self.stamp = Some(written.stamp);
        self.mark = Some(written.mark);
        self.known_len = match (&written.rewritten, &merged) {
            (Some(file), _) => file.events.len(),
            (None, Some((_, total, ..))) => total + added,
            (None, None) => self.known_len + added,
        };
        if let Some((messages, _, cycle, tokens)) = merged {
            self.messages = messages;
            (self.compactions, self.flushed_cycle) = cycle;
            self.context_tokens = tokens;
        }
        if let (Some(key), false) = (&self.key, self.key_recorded) {
            self.store.set_key(key, &self.id)?;
            self.key_recorded = true;
        }
        Ok(warning)
    }

    /// True when entries wait to be written (a write failed, or they wait
    /// for the next write point).
    pub fn has_unsaved(&self) -> bool {
        !self.unwritten.is_empty()
    }

    /// Before leaving the session (exit, `/new`, `/resume`): what is not on
    /// disk gets one more attempt; if that fails too, it is written to a
    /// recovery file for `glrs-sessions import`. The error says so plainly.
    pub fn leave(&mut self) -> Result<(), Unsaved> {
        if self.unwritten.is_empty() {
            return Ok(());
        }
        let error = match self.save() {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        // Redacted like everything else this chat writes.
        let entries: Vec<_> = self
            .unwritten
            .iter()
            .filter_map(|e| match self.redacted(e) {
                Ok(Some(clean)) => clean.to_raw().ok(),
                Ok(None) => e.to_raw().ok(),
                Err(_) => None,
            })
            .collect();
        let mut header =
            vec![("model", Value::from(self.model.full())), ("contextTokens", Value::from(self.context_tokens))];
        if let Some(key) = &self.key {
            header.push(("key", Value::from(key.as_str())));
        }
        let recovery = self.store.write_recovery(&self.id, &self.cwd, &header, &entries);
        if recovery.is_ok() {
            // They are safe there; the chat must not write them twice.
            self.unwritten.clear();
        }
        Err(Unsaved { id: self.id.clone(), count: entries.len(), error, recovery })
    }

    /// Save only what is not on disk yet (compaction must see it all): the
    /// failure, or `Ok` with a warning to show.
    pub fn save_pending(&mut self) -> Result<Option<String>, WriteFailed> {
        if self.unwritten.is_empty() && self.is_saved() {
            return Ok(None);
        }
        self.save().map_err(|e| self.report_failure(e))
    }

    /// Save, and on failure record the failure (it is written with the next
    /// write that works): what the user should hear, if anything (the
    /// failure, or a warning about a save that took effect).
    pub fn save_or_report(&mut self) -> Option<WriteNote> {
        match self.save() {
            Ok(warning) => warning.map(WriteNote::Warning),
            Err(e) => Some(WriteNote::Failed(self.report_failure(e))),
        }
    }

    fn report_failure(&mut self, error: StoreError) -> WriteFailed {
        let failed = WriteFailed(error);
        self.record(Entry::Error { at: time::now(), text: failed.to_string(), kind: "io".into() });
        failed
    }
}

/// A write point that failed: its entries wait for the next one, and the
/// failure itself is recorded to be written with them.
#[derive(Debug)]
pub struct WriteFailed(pub StoreError);

impl std::fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not save the session (will retry): {}", self.0)
    }
}

impl std::error::Error for WriteFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// What a write point has to tell the user, when it has anything.
#[derive(Debug)]
pub enum WriteNote {
    /// The write took effect, but something about it did not (the folder
    /// could not be synced): the warning.
    Warning(String),
    /// The write failed.
    Failed(WriteFailed),
}

impl std::fmt::Display for WriteNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteNote::Warning(w) => f.write_str(w),
            WriteNote::Failed(e) => e.fmt(f),
        }
    }
}

/// Entries that could not be saved when leaving a session.
#[derive(Debug)]
pub struct Unsaved {
    /// The session that could not be saved.
    pub id: SessionId,
    /// How many entries wait to be written.
    pub count: usize,
    /// Why the write failed.
    pub error: StoreError,
    /// The recovery file they went to, or why none could be written.
    pub recovery: Result<std::path::PathBuf, crate::store::recovery::NoRecoveryFile>,
}

impl std::fmt::Display for Unsaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = crate::output::count(self.count as u64, "entry", "entries");
        let verb = if self.count == 1 { "is" } else { "are" };
        write!(f, "session {} could not be saved ({}): {entries} {verb} not in it", self.id, self.error)?;
        match &self.recovery {
            Ok(path) => write!(
                f,
                "; they were written to {}; once there is room, add them with: glrs-sessions import {}",
                path.display(),
                path.display()
            ),
            Err(why) => write!(f, "; no recovery file could be written either ({why}): they are lost"),
        }
    }
}
