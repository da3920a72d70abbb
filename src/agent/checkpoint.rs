//! The turn loop's checkpoint (SPEC 19): before the first mutating tool
//! call of a model step, the workspace is recorded (`crate::checkpoint`)
//! and a `checkpoint` entry written. A checkpoint that fails is said and
//! recorded, never a reason not to run the tool.

use super::Agent;
use super::turn::TurnUi;
use crate::checkpoint::Change;
use crate::store::Entry;
use crate::time;

impl Agent {
    /// Record the workspace before this step's first mutating call.
    pub(super) async fn checkpoint_before_step(&mut self, ui: &mut dyn TurnUi) {
        if let Some(text) = self.checkpoints.first_notice() {
            self.tell(ui, text);
        }
        if self.checkpoints.unavailable().is_some() {
            return;
        }
        match self.checkpoints.record(false).await {
            Ok((recorded, notices)) => {
                for text in notices {
                    self.tell(ui, text);
                }
                if let Some(r) = recorded {
                    self.record(r.entry());
                }
            }
            Err(e) => self.tell(ui, format!("checkpoint failed (rewinding files to here will not be possible): {e}")),
        }
    }

    /// Record what the turn's last step left (SPEC 24), when the turn
    /// took a step's checkpoint; a failure is only said.
    pub(super) async fn checkpoint_turn_end(&mut self, ui: &mut dyn TurnUi) {
        if self.checkpoints.unavailable().is_some() {
            return;
        }
        match self.checkpoints.record_turn_end().await {
            Ok((recorded, notices)) => {
                for text in notices {
                    self.tell(ui, text);
                }
                if let Some(r) = recorded {
                    self.record(r.entry());
                }
            }
            Err(e) => self.tell(ui, format!("checkpoint at the turn's end failed: {e}")),
        }
    }

    fn tell(&mut self, ui: &mut dyn TurnUi, text: String) {
        ui.notice(&text);
        self.record(Entry::Notice { at: time::now(), text });
    }

    /// The files part of a rewind of this open session (SPEC 19): the
    /// present is checkpointed and recorded (going back to it undoes the
    /// rewind), then the workspace is made what `target` recorded. Returns
    /// what changed and the entry number of the checkpoint of the present.
    pub async fn rewind_files(&mut self, target: &crate::rewind::Point) -> Result<(Vec<Change>, usize), String> {
        if self.checkpoints.workspace() != Some(target.workspace.as_path()) {
            return Err(format!(
                "entry {} recorded {}, not the workspace of this chat: glrs-sessions rewind does it from there",
                target.entry,
                target.workspace.display()
            ));
        }
        let (present, changed) = self.checkpoints.rewind_to(&target.commit).await?;
        self.record(present.rewind_entry(&target.commit));
        let text =
            format!("files rewound to entry {} (checkpoint {})", target.entry, crate::rewind::short(&target.commit));
        self.record(Entry::Notice { at: time::now(), text });
        if let Some(problem) = self.save_or_report() {
            return Err(problem.to_string());
        }
        let total = self
            .log
            .store
            .locate(&self.log.id)
            .and_then(|at| self.log.store.read(&at).ok())
            .map_or(0, |l| l.file.events.len());
        Ok((changed, total.saturating_sub(1)))
    }

    /// The session's checkpoints (a rewind takes one of the present).
    pub fn checkpoints(&mut self) -> &mut crate::checkpoint::Tracker {
        &mut self.checkpoints
    }
}
