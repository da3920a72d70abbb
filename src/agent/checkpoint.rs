//! The turn loop's checkpoint (SPEC 19): before the first mutating tool
//! call of a model step, the workspace is recorded (`crate::checkpoint`)
//! and a `checkpoint` entry written. A checkpoint that fails is said and
//! recorded, never a reason not to run the tool.

use super::Agent;
use super::turn::TurnUi;
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

    fn tell(&mut self, ui: &mut dyn TurnUi, text: String) {
        ui.notice(&text);
        self.record(Entry::Notice { at: time::now(), text });
    }

    /// The session's checkpoints (a rewind takes one of the present).
    pub fn checkpoints(&mut self) -> &mut crate::checkpoint::Tracker {
        &mut self.checkpoints
    }
}
