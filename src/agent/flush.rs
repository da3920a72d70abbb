//! The memory flush (SPEC 7) as the agent runs it: one silent turn, with
//! `memory_append` offered and the flush's system prompt, then its
//! `memoryFlush` record. The rules on when a flush is due are
//! [`crate::compact::flush`]'s; the chat asks at idle, glrs-compact before
//! compacting. Also how the agent reads a session for its context.

use super::Agent;
use super::turn::{SilentUi, TurnKind, TurnUi, Unattended};
use crate::compact::flush;
use crate::provider::{CallError, Cancel};
use crate::store::Entry;
use crate::time;
use crate::tools::Situation;

/// Read a session for the agent's context: the entries from the last
/// boundary on, and (picked out by a streaming scan) every `compacted`,
/// `cleared` and `custom` entry, which is all
/// [`crate::compact::flush::cycle_of`] and the boundary need.
pub fn read_for_context(
    store: &crate::store::Store,
    at: &crate::store::Located,
) -> Result<crate::store::recent::Recent, crate::error::StoreError> {
    store.read_recent(at, CONTEXT_TYPES, context_start)
}

/// The entry types [`read_for_context`] picks out.
pub const CONTEXT_TYPES: &[&str] = &["compacted", "cleared", "custom"];

/// Where the context starts, from the entries of [`CONTEXT_TYPES`].
pub fn context_start(hits: &[crate::store::recent::Hit]) -> usize {
    crate::context::last_boundary_in(hits.iter().map(|h| (h.index, h.text.as_str()))).start
}

impl Agent {
    /// What decides which tools are offered on the next step.
    pub fn situation(&self, kind: TurnKind) -> Situation {
        Situation { flush: kind == TurnKind::Flush, artifacts: self.log.store.artifact_count(&self.log.id) > 0 }
    }

    /// The system prompt for a turn of this kind.
    pub fn system_for(&self, kind: TurnKind) -> Option<String> {
        match kind {
            TurnKind::Normal => self.system_prompt(),
            TurnKind::Flush => Some(flush::system_prompt(&self.config, self.system_prompt().as_deref())),
        }
    }

    /// The silent memory flush (SPEC 7), once per compaction cycle. A flush
    /// that fails (an overflow among others: a flush never compacts) ends
    /// with its error in the `memoryFlush` record, and returned, so the
    /// compaction it precedes goes on. `ui` hears only the notices (a
    /// `cwd` that is not writable, a write that failed).
    pub async fn memory_flush(&mut self, cancel: &Cancel, ui: &mut dyn TurnUi) -> Option<CallError> {
        let cycle = self.context.cycle.compactions;
        let dir = flush::memory_dir(&self.log.store.paths.data, std::path::Path::new(&self.log.cwd));
        let mut failed = None;
        // A session whose cwd is gone flushes nothing (its workspace is no
        // more), and the cwd is never recreated.
        let cwd = std::path::Path::new(&self.log.cwd);
        let data = if cwd.is_dir() && flush::writable(&dir) {
            let prompt = flush::prompt(&self.config);
            let before = notes_size(&dir);
            failed = self.turn_with(&prompt, TurnKind::Flush, &mut SilentUi, cancel, &mut Unattended).await.error;
            // Said where they went: the notes are not in the project.
            if notes_size(&dir) != before {
                ui.notice(&format!("(memory flush: notes saved in {})", dir.display()));
            }
            let mut data = flush::record_data(cycle, None);
            if let (Some(e), Some(fields)) = (&failed, data.as_object_mut()) {
                fields.insert("error".into(), e.to_string().into());
            }
            data
        } else {
            let (text, why) = if cwd.is_dir() {
                (format!("memory flush skipped: {} is not writable", dir.display()), "memory folder not writable")
            } else {
                (format!("memory flush skipped: {} does not exist (any more)", cwd.display()), "cwd gone")
            };
            ui.notice(&format!("({text})"));
            self.record(Entry::Notice { at: time::now(), text });
            flush::record_data(cycle, Some(why))
        };
        self.record(Entry::Custom { at: time::now(), name: "memoryFlush".into(), data });
        self.context.cycle.flushed = Some(cycle);
        if let Some(problem) = self.save_or_report() {
            ui.notice(&problem.to_string());
        }
        failed
    }
}

/// The bytes of the notes in a memory folder, to tell whether a flush wrote any.
fn notes_size(dir: &std::path::Path) -> u64 {
    let files = std::fs::read_dir(dir).into_iter().flatten().flatten();
    files.filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}
