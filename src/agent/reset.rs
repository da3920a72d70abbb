//! Resets on the next message (SPEC 16): a keyed session's reset rule
//! (SPEC 9) is checked before every user message, not only when the chat
//! starts, so a REPL left open past the reset hour or the idle time starts
//! the key's new session with that message. The last activity is the
//! file's `updatedAt` as it is now: another program may have changed it.

use anyhow::Result;
use jiff::{Timestamp, Zoned};

use super::Agent;
use crate::keys::ResetRule;
use crate::store::Entry;
use crate::time;

impl Agent {
    /// Why this keyed session resets before the next message, if it does.
    pub fn reset_due(&mut self, now: &Zoned) -> Option<String> {
        self.log.key.as_ref()?;
        if !self.is_saved() {
            return None;
        }
        // Another program's write (or a hand-edited `updatedAt`) counts.
        let _ = self.sync_from_disk();
        let last: Timestamp = self.log.seen.updated_at.as_deref()?.parse().ok()?;
        ResetRule::from_config(&self.config).due(last, now)
    }

    /// A fresh session that carries on this one's key, model, system
    /// prompt, cwd and thinking level (`/new`, and a reset).
    pub fn successor(&self) -> Result<Agent> {
        let mut next = Agent::start(
            self.log.store.clone(),
            self.config.clone(),
            self.binding.model.clone(),
            self.prompt.system.clone(),
            self.log.cwd.clone(),
        )?;
        next.log.key = self.log.key.clone();
        next.binding.thinking = self.binding.thinking;
        self.tools.carry_to(&mut next.tools);
        next.set_sandbox_mode(self.tools.sandbox().mode());
        Ok(next)
    }

    /// The successor for a reset that is due: the reason is recorded as a
    /// notice in the new session and returned for the user, with the old
    /// session's id.
    pub fn reset_for(&self, why: &str) -> Result<(Agent, String)> {
        let mut next = self.successor()?;
        let key = self.log.key.as_deref().unwrap_or_default();
        let text = format!("new session for key {key}: {why}");
        next.record(Entry::Notice { at: time::now(), text: text.clone() });
        Ok((next, format!("{text} (the old one: glrs-chat --resume {})", self.log.id)))
    }
}
