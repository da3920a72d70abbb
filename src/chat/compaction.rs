//! Compaction inside a running chat (SPEC 6 "When", SPEC 7): the checks at
//! idle and after every step, compaction run as `glrs-compact` in a child
//! process (so it can be abandoned, and the chat reloads the session when it
//! lands), overflow recovery, the memory flush, and the tools offered to the
//! model (the compaction tools once an artifact exists; `memory_append`
//! during the flush).

use serde_json::json;

use super::Chat;
use super::turn::{SilentUi, TurnKind, TurnUi};
use crate::compact::Trigger;
use crate::provider::Cancel;
use crate::store::{Entry, Parsed};
use crate::time;
use crate::tools::Situation;

/// Defaults of `memoryFlush.*`.
pub const FLUSH_SOFT_THRESHOLD: u64 = 4_000;
/// Default of `memoryFlush.prompt`: the user message of the flush turn.
pub const FLUSH_PROMPT: &str = "Pre-compaction memory flush: the older part of this conversation will soon be \
summarised. Save anything worth keeping beyond it (decisions, facts about the user and the project, open tasks, \
exact names and commands) with memory_append. If there is nothing to save, reply with NO_REPLY.";
/// Default of `memoryFlush.systemPrompt`: appended to the system prompt for the flush turn.
pub const FLUSH_SYSTEM_PROMPT: &str = "You are saving durable notes before the conversation is summarised. Use \
the memory_append tool for each note. When you are done, reply with NO_REPLY and nothing else.";

/// `glrs-compact ID --no-flush [--instruction TEXT]`: the chat has flushed
/// (or will not) by the time it compacts.
pub fn compact_command(id: &crate::SessionId, instruction: Option<&str>) -> std::process::Command {
    let mut cmd = std::process::Command::new(crate::programs::program_path("glrs-compact"));
    cmd.args([id.as_str(), "--no-flush"]);
    if let Some(i) = instruction.filter(|i| !i.trim().is_empty()) {
        cmd.args(["--instruction", i]);
    }
    cmd
}

/// How a compaction run by the chat ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactOutcome {
    /// It landed; the line glrs-compact printed.
    Landed(String),
    /// There was nothing to compact.
    Nothing,
    /// Esc or Ctrl-C: the child was stopped and nothing was written.
    Abandoned,
    /// glrs-compact failed; its message.
    Failed(String),
}

impl CompactOutcome {
    /// Whether a brief landed.
    pub fn landed(&self) -> bool {
        matches!(self, CompactOutcome::Landed(_))
    }
}

/// The number of `compacted` entries, and the compaction count recorded by
/// the newest memory flush.
pub fn cycle_of<E: crate::store::EntryText>(events: &[E]) -> (u64, Option<u64>) {
    let mut compactions = 0;
    let mut flushed = None;
    for raw in events {
        let text = raw.text();
        let candidate = match crate::store::entry::quick_type(text) {
            Some(kind) => kind == "compacted" || (kind == "custom" && text.contains("memoryFlush")),
            None => text.contains("\"compacted\"") || text.contains("memoryFlush"),
        };
        if !candidate {
            continue;
        }
        match Parsed::from_text(text) {
            Parsed::Known(Entry::Compacted { .. }) => compactions += 1,
            Parsed::Known(Entry::Custom { name, data, .. }) if name == "memoryFlush" => {
                flushed = data.get("compactionCount").and_then(|v| v.as_u64());
            }
            _ => {}
        }
    }
    (compactions, flushed)
}

impl Chat {
    /// The trigger for the current model.
    pub fn trigger(&self) -> Trigger {
        Trigger::for_model(&self.config, &self.model.provider, &self.model.model)
    }

    /// True when the context is over the trigger and this user message has
    /// not had its automatic compaction yet.
    pub fn compaction_due(&self) -> bool {
        self.auto_compactions == 0 && self.trigger().is_over(self.context_tokens)
    }

    /// True when the memory flush should run now: on, within
    /// `softThresholdTokens` of the trigger, once per compaction cycle.
    pub fn flush_due(&self) -> bool {
        let mf = &self.config.memory_flush;
        if mf.enabled == Some(false) || self.flushed_cycle == Some(self.compactions) {
            return false;
        }
        let soft = mf.soft_threshold_tokens.unwrap_or(FLUSH_SOFT_THRESHOLD);
        self.trigger().threshold().is_some_and(|t| self.context_tokens > t.saturating_sub(soft))
    }

    /// What decides which tools are offered on the next step.
    pub fn situation(&self, kind: TurnKind) -> Situation {
        Situation { flush: kind == TurnKind::Flush, artifacts: self.store.artifact_count(&self.id) > 0 }
    }

    /// The system prompt for a turn of this kind.
    pub fn system_for(&self, kind: TurnKind) -> Option<String> {
        match kind {
            TurnKind::Normal => self.system_prompt(),
            TurnKind::Flush => {
                let flush = self.config.memory_flush.system_prompt.as_deref().unwrap_or(FLUSH_SYSTEM_PROMPT);
                Some(match &self.system_prompt() {
                    Some(s) => format!("{s}\n\n{flush}"),
                    None => flush.to_string(),
                })
            }
        }
    }

    /// Compact now with `glrs-compact` in a child process and wait for it;
    /// `cancel` stops it (nothing is written). Reloads the session after.
    pub async fn compact_child(
        &mut self,
        instruction: Option<&str>,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> CompactOutcome {
        self.auto_compactions += 1;
        match self.save_pending() {
            Err(problem) => return CompactOutcome::Failed(problem),
            Ok(Some(warning)) => ui.notice(&warning),
            Ok(None) => {}
        }
        ui.notice(&format!("(compacting {}…)", self.id));
        let mut cmd = tokio::process::Command::from(compact_command(&self.id, instruction));
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).kill_on_drop(true);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return CompactOutcome::Failed(format!("cannot run glrs-compact: {e}")),
        };
        let output = tokio::select! {
            out = child.wait_with_output() => out,
            () = cancel.cancelled() => {
                ui.notice("(compaction abandoned: nothing was written)");
                return CompactOutcome::Abandoned;
            }
        };
        let outcome = match output {
            Ok(out) if out.status.success() => {
                let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if line.ends_with("nothing to compact") {
                    CompactOutcome::Nothing
                } else {
                    CompactOutcome::Landed(line)
                }
            }
            Ok(out) => CompactOutcome::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            Err(e) => CompactOutcome::Failed(format!("glrs-compact: {e}")),
        };
        if let Err(e) = self.sync_from_disk() {
            ui.notice(&format!("could not re-read the session: {e}"));
        }
        match &outcome {
            CompactOutcome::Landed(line) => {
                ui.notice(&format!("({line})"));
                if self.trigger().is_over(self.context_tokens) {
                    // Reported, never repeated.
                    ui.notice(&format!(
                        "(still over the compaction trigger: {} tokens; /compact with an instruction, or /clear, makes more room)",
                        self.context_tokens
                    ));
                }
            }
            CompactOutcome::Nothing => ui.notice("(nothing to compact)"),
            CompactOutcome::Failed(why) => ui.notice(&format!("(compaction failed: {why})")),
            CompactOutcome::Abandoned => {}
        }
        outcome
    }

    /// Start `glrs-compact` without waiting: `/compact` typed during a turn.
    pub fn compact_in_background(&mut self, instruction: Option<&str>, ui: &mut dyn TurnUi) {
        match self.save_pending() {
            Err(problem) => {
                ui.notice(&problem);
                return;
            }
            Ok(Some(warning)) => ui.notice(&warning),
            Ok(None) => {}
        }
        let mut cmd = compact_command(&self.id, instruction);
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        match cmd.spawn() {
            Ok(child) => {
                ui.notice("(compacting in the background: the brief lands with the turn's next write)");
                self.background.push(child);
            }
            Err(e) => ui.notice(&format!("(cannot run glrs-compact: {e})")),
        }
    }

    /// Take over compactions started elsewhere (the REPL's key watcher).
    pub fn adopt_background(&mut self, children: Vec<std::process::Child>) {
        self.background.extend(children);
    }

    /// Wait for background compactions and reload what they wrote.
    pub fn wait_for_background(&mut self, ui: &mut dyn TurnUi) {
        for child in std::mem::take(&mut self.background) {
            match child.wait_with_output() {
                Ok(out) if out.status.success() => {
                    ui.notice(&format!("({})", String::from_utf8_lossy(&out.stdout).trim()));
                }
                Ok(out) => ui.notice(&format!("(compaction failed: {})", String::from_utf8_lossy(&out.stderr).trim())),
                Err(e) => ui.notice(&format!("(compaction failed: {e})")),
            }
        }
        let _ = self.sync_from_disk();
    }

    /// The silent memory flush (SPEC 7), once per compaction cycle.
    pub async fn memory_flush(&mut self, cancel: &Cancel, ui: &mut dyn TurnUi) {
        let cycle = self.compactions;
        let memory = std::path::Path::new(&self.cwd).join("memory");
        let writable = std::fs::create_dir_all(&memory).is_ok() && tempfile::NamedTempFile::new_in(&memory).is_ok();
        let data = if writable {
            let prompt = self.config.memory_flush.prompt.clone().unwrap_or_else(|| FLUSH_PROMPT.to_string());
            let mut none = Vec::new;
            self.turn_with(&prompt, TurnKind::Flush, &mut SilentUi, cancel, &mut none).await;
            json!({"compactionCount": cycle})
        } else {
            let text = format!("memory flush skipped: {} is not writable", memory.display());
            ui.notice(&format!("({text})"));
            self.record(Entry::Notice { at: time::now(), text });
            json!({"compactionCount": cycle, "skipped": "cwd not writable"})
        };
        self.record(Entry::Custom { at: time::now(), name: "memoryFlush".into(), data });
        self.flushed_cycle = Some(cycle);
        if let Some(problem) = self.save_or_report() {
            ui.notice(&problem);
        }
    }

    /// What runs at idle after a turn: the flush when due, then compaction
    /// when due (or when the turn stopped at the line).
    pub async fn at_idle(
        &mut self,
        stopped_at_line: bool,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> Option<CompactOutcome> {
        if self.flush_due() {
            self.memory_flush(cancel, ui).await;
        }
        if stopped_at_line || self.compaction_due() {
            return Some(self.compact_child(None, cancel, ui).await);
        }
        None
    }
}
