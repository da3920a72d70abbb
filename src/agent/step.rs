//! One step of a turn: the model call (after waiting for MCP servers still
//! starting and pruning the context), its streamed text shown through the
//! silent-reply gate, and what follows a call that failed (overflow
//! recovery, a new session dropped, what a cut or stopped answer keeps).

use crate::provider::{CallError, Cancel, Delta, Request, Response, StopReason};
use crate::store::Entry;
use crate::time;

use super::Agent;
use super::turn::{Driver, NO_REPLY, Turn, TurnKind, TurnUi};

/// Holds back streamed text until it is clear the reply does not begin
/// with `NO_REPLY`; a silent reply shows nothing at all.
#[derive(Debug, Default)]
struct SilentGate {
    silent: Option<bool>,
    held: String,
}

impl SilentGate {
    /// Text that may be shown now.
    fn feed(&mut self, text: &str) -> Option<String> {
        match self.silent {
            Some(true) => None,
            Some(false) => Some(text.to_string()),
            None => {
                self.held.push_str(text);
                let start = self.held.trim_start();
                if start.starts_with(NO_REPLY) {
                    self.silent = Some(true);
                    None
                } else if NO_REPLY.starts_with(start) {
                    None
                } else {
                    self.silent = Some(false);
                    Some(std::mem::take(&mut self.held))
                }
            }
        }
    }

    /// At the end of a step: what is still held, unless the reply is silent.
    fn finish(&mut self) -> Option<String> {
        if self.silent == Some(true) || self.held.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.held))
    }
}

/// What follows a model call that failed.
pub(super) enum Failed {
    /// Room was made: the step runs again.
    Retry,
    /// The turn ends with the error (recorded).
    End,
    /// The turn is forgotten: a new session's first call failed.
    Dropped,
}

impl Agent {
    /// One model call over the context, showing what arrives through `ui`.
    pub(super) async fn model_step(
        &mut self,
        kind: TurnKind,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
    ) -> Result<Response, CallError> {
        self.settle_servers(cancel, ui).await;
        let tool_specs = self.tools.specs(&self.situation(kind));
        let system = self.system_for(kind);
        self.prune_before_call(system.as_deref(), &tool_specs, jiff::Timestamp::now());
        ui.step_start();
        let mut gate = SilentGate::default();
        let result = {
            let request = Request {
                model: &self.binding.model.model,
                system: system.as_deref(),
                messages: &self.context.messages,
                tools: &tool_specs,
                thinking: self.binding.thinking,
            };
            let mut on_delta = |d: Delta| match d {
                Delta::Text(t) => {
                    if let Some(shown) = gate.feed(&t) {
                        ui.delta(&Delta::Text(shown));
                    }
                }
                Delta::Retrying(retry) => ui.notice(&format!("({retry})")),
                reasoning => ui.delta(&reasoning),
            };
            self.binding.provider.complete(&request, &mut on_delta, cancel).await
        };
        self.binding.last_call = Some(jiff::Timestamp::now());
        if let Some(rest) = gate.finish() {
            ui.delta(&Delta::Text(rest));
        }
        ui.step_end();
        result
    }

    /// SPEC 15: MCP servers still starting are waited for (bounded), and
    /// what they have to say is told.
    async fn settle_servers(&mut self, cancel: &Cancel, ui: &mut dyn TurnUi) {
        let news = {
            let settle = self.tools.settle(cancel);
            tokio::pin!(settle);
            tokio::select! {
                news = &mut settle => news,
                () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {
                    ui.notice("(waiting for MCP servers to start)");
                    settle.await
                }
            }
        };
        for line in news {
            ui.notice(&line);
        }
    }

    /// A failed model call. An overflow is met once by the driver making
    /// room (the chat compacts), then the step runs again; never in a
    /// flush, which precedes a compaction (glrs-compact holds the session
    /// for it) and ends with its error. Anything else ends the turn.
    pub(super) async fn after_failed_call<D: Driver>(
        &mut self,
        error: CallError,
        turn: &mut Turn,
        driver: &mut D,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> Failed {
        let error = match error {
            CallError::Overflow(message) if !turn.overflow_retried => {
                turn.overflow_retried = true;
                if driver.make_room(self, cancel, ui).await {
                    return Failed::Retry;
                }
                CallError::Overflow(format!("{message}; nothing could be compacted: {}", self.overflow_advice()))
            }
            CallError::Overflow(m) => CallError::Overflow(format!(
                "{m}; the request is still too large after compacting: try /compact with an instruction saying \
                 what to keep, or {}",
                self.overflow_advice()
            )),
            other => other,
        };
        // A new session dropped unsaved has no turn to record.
        let dropped = self.drop_if_never_saved(&error, ui);
        if !dropped {
            self.end_early(&error, &mut turn.messages, &mut turn.outcome);
        }
        turn.outcome.error = Some(error);
        if dropped { Failed::Dropped } else { Failed::End }
    }

    /// A new session whose first model call failed, with nothing arrived
    /// (nothing listening, a bad key), is not kept: a file holding only an
    /// error is clutter. Forgets the turn and says so; true when it did. A
    /// session already on disk keeps its error entry; a stop by the user or a
    /// cut answer with text keeps what there is.
    fn drop_if_never_saved(&mut self, error: &CallError, ui: &mut dyn TurnUi) -> bool {
        let arrived = match error {
            CallError::Cancelled { .. } => return false,
            CallError::Cut { partial, .. } => !partial.text.is_empty() || !partial.reasoning.is_empty(),
            _ => false,
        };
        let answered_before = self.log.unwritten.iter().any(|e| matches!(e, Entry::Assistant { .. }));
        if arrived || answered_before || self.is_saved() || self.log.store.locate(&self.log.id).is_some() {
            return false;
        }
        self.log.unwritten.clear();
        self.context.messages.clear();
        self.context.tokens = 0;
        ui.notice("the new session was not kept: its first model call failed");
        true
    }

    /// Keep what a broken or stopped call produced, and say why it ended.
    fn end_early(
        &mut self,
        error: &CallError,
        turn_messages: &mut Vec<crate::provider::Message>,
        outcome: &mut super::TurnOutcome,
    ) {
        let kept = match error {
            CallError::Cancelled { partial } => Some((partial, StopReason::Aborted)),
            CallError::Cut { partial, .. } => Some((partial, StopReason::Error)),
            _ => None,
        };
        if let Some((partial, stop_reason)) = kept
            && (!partial.text.is_empty() || !partial.reasoning.is_empty())
        {
            // Tool calls of a broken answer are dropped: they have no result.
            let kept = Response { tool_calls: Vec::new(), stop_reason, ..partial.clone() };
            self.add_response(kept, turn_messages, outcome);
        }
        match error {
            CallError::Cancelled { .. } => {
                self.record(Entry::Notice { at: time::now(), text: "turn stopped by the user".into() })
            }
            other => self.record(Entry::Error { at: time::now(), text: other.to_string(), kind: other.kind().into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::turn::is_silent;

    fn run(pieces: &[&str]) -> String {
        let mut gate = SilentGate::default();
        let mut shown: String = pieces.iter().filter_map(|p| gate.feed(p)).collect();
        shown.extend(gate.finish());
        shown
    }

    #[test]
    fn no_reply_is_never_shown_not_even_in_part() {
        assert_eq!(run(&["NO", "_REP", "LY"]), "");
        assert_eq!(run(&["  NO_REPLY and more"]), "");
        assert_eq!(run(&["NO", "PE"]), "NOPE");
        assert_eq!(run(&["Sure. NO_REPLY"]), "Sure. NO_REPLY", "text before the token: not silent");
        assert_eq!(run(&["N"]), "N");
        assert_eq!(run(&["Hello"]), "Hello");
        assert!(is_silent(" NO_REPLY") && !is_silent("ok NO_REPLY"));
    }
}
