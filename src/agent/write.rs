//! An agent's write points (SPEC 4): what it recorded goes to the session
//! file in one locked write, redacted, merged with what another program
//! wrote meanwhile; what cannot be written is kept for the next write
//! point, and when leaving, for a recovery file.

use serde_json::Value;

use super::{Agent, LastSeen, flush};
use crate::context;
use crate::error::StoreError;
use crate::store::{Append, Entry};
use crate::{SessionId, time};

impl Agent {
    /// Record an entry for the next write point.
    pub fn record(&mut self, entry: Entry) {
        self.log.unwritten.push(entry);
    }

    /// A write point: every unwritten entry, `contextTokens` and `model`,
    /// in one atomic locked write. On failure the entries stay queued for
    /// the next write point, and the error is returned to be shown. A write
    /// that took effect but warned (the folder could not be synced) is done:
    /// its entries are not queued again, and the warning is returned.
    ///
    /// It locks the session and fsyncs, which may wait: inside the runtime
    /// it runs where the runtime's other tasks (the key watcher, the signal
    /// watcher, MCP servers) keep going ([`crate::runtime::blocking`]).
    pub fn save(&mut self) -> Result<Option<String>, StoreError> {
        crate::runtime::blocking(|| self.save_now())
    }

    fn save_now(&mut self) -> Result<Option<String>, StoreError> {
        // Not written yet: created with this save's entries in one write.
        let create = !self.is_saved() && self.log.store.locate(&self.log.id).is_none();
        let mut change = Append::new()
            .set("contextTokens", Value::from(self.context.tokens))
            .set("model", Value::from(self.binding.model.full()));
        if let Some(key) = &self.log.key {
            change = change.set("key", Value::from(key.as_str()));
        }
        change = change.set("sandbox", Value::from(self.tools.sandbox().mode().name()));
        if let Some(system) = &self.prompt.system {
            change = change.set("system", Value::from(self.redactor.text(system).into_owned()));
        }
        // Written only when it applies: a level other than off, or a change
        // back to off from a level the file holds.
        let set_thinking = self.binding.thinking != crate::provider::cache::Thinking::Off || self.log.seen.thinking;
        if set_thinking {
            change = change.set("thinking", Value::from(self.binding.thinking.to_string()));
        }
        // Serialized only into the file: an answer's text is shared by the
        // context and its entries, never held again as JSON (issue 14).
        for entry in &self.log.unwritten {
            change = change.entry_owned(entry.redacted(&self.redactor)?.unwrap_or_else(|| entry.clone()));
        }
        // Under the lock: if the file holds entries this chat has not seen
        // (a compaction landed during the turn), they stay, and the context
        // and `contextTokens` are rebuilt from the file as written, in the
        // same write.
        let known_len = self.log.seen.entries;
        let system_tokens = self.system_tokens();
        // Messages, entries on disk, compaction cycle, contextTokens.
        type Merged = (Vec<crate::provider::Message>, usize, crate::compact::flush::Cycle, u64);
        let mut merged: Option<Merged> = None;
        let added = self.log.unwritten.len();
        // Between a step that asked for tools and their results: the calls
        // stay in the rebuilt context (issue 24), their results follow.
        let awaiting = matches!(self.context.messages.last(),
            Some(crate::provider::Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty());
        // Usually appended in place. When the file is not as this chat left
        // it, it is read from the last boundary on (never whole), and this
        // chat's entries go after what is there.
        let merge = |recent: &crate::store::recent::Recent, change: &mut Append| {
            if recent.total == known_len {
                return;
            }
            let new = change.entry_texts();
            let mut events = recent.lines.entries();
            events.extend(new.iter().map(String::as_str));
            let messages = if awaiting {
                context::replay_awaiting(&events, recent.first)
            } else {
                context::replay_from(&events, recent.first)
            };
            let tokens = context::estimate(&messages) + system_tokens;
            change.set_field("contextTokens", tokens);
            let mut picked = recent.hit_texts();
            picked.extend(new.iter().map(String::as_str));
            merged = Some((messages, recent.total, crate::compact::flush::cycle_of(&picked), tokens));
        };
        let change = match create {
            true => self.log.store.create_with(&self.log.id, &self.log.cwd, change)?,
            false => Err(change),
        };
        let written = match change {
            Ok(created) => created,
            Err(change) => self.log.store.append_since(
                &self.log.id,
                change,
                self.log.seen.file.as_ref().map(|(_, mark)| mark),
                flush::CONTEXT_TYPES,
                flush::context_start,
                merge,
            )?,
        };
        self.log.unwritten.clear();
        let warning = written.warning.clone().map(|w| format!("the session was saved, but {w}"));
        self.log.seen = LastSeen {
            entries: match (&written.rewritten, &merged) {
                (Some(events), _) => *events,
                (None, Some((_, total, ..))) => total + added,
                (None, None) => self.log.seen.entries + added,
            },
            file: Some((written.stamp, written.mark)),
            updated_at: Some(written.updated_at),
            thinking: self.log.seen.thinking || set_thinking,
        };
        if let Some((messages, _, cycle, tokens)) = merged {
            self.context.messages = messages;
            self.context.cycle = cycle;
            self.context.tokens = tokens;
        }
        if let (Some(key), false) = (&self.log.key, self.log.key_recorded) {
            self.log.store.set_key(key, &self.log.id)?;
            self.log.key_recorded = true;
        }
        Ok(warning)
    }

    /// True when entries wait to be written (a write failed, or they wait
    /// for the next write point).
    pub fn has_unsaved(&self) -> bool {
        !self.log.unwritten.is_empty()
    }

    /// Before leaving the session (exit, `/new`, `/resume`): what is not on
    /// disk gets one more attempt; if that fails too, it is written to a
    /// recovery file for `glrs-sessions import`. The error says so plainly.
    pub fn leave(&mut self) -> Result<(), Unsaved> {
        if self.log.unwritten.is_empty() {
            return Ok(());
        }
        let error = match self.save() {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        // Redacted like everything else this chat writes.
        let entries: Vec<_> = self
            .log
            .unwritten
            .iter()
            .filter_map(|e| match e.redacted(&self.redactor) {
                Ok(Some(clean)) => clean.to_raw().ok(),
                Ok(None) => e.to_raw().ok(),
                Err(_) => None,
            })
            .collect();
        let mut header = vec![
            ("model", Value::from(self.binding.model.full())),
            ("contextTokens", Value::from(self.context.tokens)),
        ];
        if let Some(key) = &self.log.key {
            header.push(("key", Value::from(key.as_str())));
        }
        let recovery = self.log.store.write_recovery(&self.log.id, &self.log.cwd, &header, &entries);
        if recovery.is_ok() {
            // They are safe there; the agent must not write them twice.
            self.log.unwritten.clear();
        }
        Err(Unsaved { id: self.log.id.clone(), count: entries.len(), error, recovery })
    }

    /// Save only what is not on disk yet (compaction must see it all): the
    /// failure, or `Ok` with a warning to show.
    pub fn save_pending(&mut self) -> Result<Option<String>, WriteFailed> {
        if self.log.unwritten.is_empty() && self.is_saved() {
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
/// failure itself is recorded to be written with them. Its text says the
/// store's error with its causes (it is shown and recorded on its own).
#[derive(Debug, thiserror::Error)]
#[error("could not save the session (will retry): {}", crate::error::Report(.0))]
pub struct WriteFailed(pub StoreError);

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
        let error = crate::error::Report(&self.error);
        write!(f, "session {} could not be saved ({error}): {entries} {verb} not in it", self.id)?;
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
