//! One turn: what follows a user message until the model stops asking for
//! tools. Each step is one model call and its tool runs. Entries are
//! written at the write points: after every model call (with its `usage`)
//! and at the turn's end (with its `turn`).
//!
//! What can end a turn early, and what is kept:
//! - the user stops it (Ctrl-C, Esc): the text that arrived becomes the
//!   assistant entry (`stopReason: "aborted"`);
//! - the stream is cut: the same, with `stopReason: "error"` and an `error`
//!   entry;
//! - the provider refuses or overflows: an `error` entry (`provider` or
//!   `overflow`).
//!
//! Partial tool calls are never kept: a call without its result would make
//! every later request invalid.
//!
//! What a person at a keyboard adds to a turn (lines typed meanwhile,
//! compaction when the request overflows or the context passes the line,
//! compactions started meanwhile) comes through a [`Driver`]: the chat's,
//! or [`Unattended`] for a turn no one watches (the memory flush).

use crate::context;
use crate::message::Text;
use crate::provider::{CallError, Cancel, Delta, Message, Request, Response, StopReason, Usage};
use crate::store::{Entry, ToolCall, TurnMessage};
use crate::time;

use super::Agent;
use super::hooked::fields;
use crate::hooks::Event;
use crate::permissions::{Answer, Asked, Asker, Question};
use crate::tools::ToolOutput;

/// Printed (and recorded) when a turn reaches `maxStepsPerTurn`.
pub fn steps_message(max: u64) -> String {
    format!("(the turn stopped after {max} model calls (maxStepsPerTurn): send \"continue\" to let the model go on)")
}

/// The token that makes a reply silent (SPEC 7).
pub const NO_REPLY: &str = "NO_REPLY";

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

/// True when a whole reply is silent.
pub fn is_silent(text: &str) -> bool {
    text.trim_start().starts_with(NO_REPLY)
}

/// What a turn is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// A user message.
    Normal,
    /// The silent memory flush before compaction (SPEC 7).
    Flush,
}

/// A UI that shows nothing (the memory flush).
pub struct SilentUi;

impl TurnUi for SilentUi {
    fn delta(&mut self, _: &Delta) {}
    fn notice(&mut self, _: &str) {}
}

/// What the one driving a turn adds to it: the chat (steers, compaction),
/// or [`Unattended`]. Each method gets the agent the turn runs on.
// Used as a generic parameter only (never `dyn`), by this crate's turn
// loop: the futures' auto traits are those of the one implementation.
#[allow(async_fn_in_trait)]
pub trait Driver {
    /// Before each model call, and when the model has answered without
    /// tools: lines typed meanwhile that join the turn as steers (a driver
    /// handles its own commands among them).
    fn steers(&mut self, agent: &mut Agent, ui: &mut dyn TurnUi) -> Vec<String>;
    /// The request was larger than the model's window: make room, once.
    /// True when the request should be tried again.
    async fn make_room(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi) -> bool;
    /// After a step's tool calls: true to end the turn here rather than
    /// take another step (the context passed the compaction line, SPEC 6).
    fn stop_at_line(&mut self, agent: &mut Agent, ui: &mut dyn TurnUi) -> bool;
    /// After the turn's last write: finish what the turn started meanwhile.
    async fn after_turn(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi);
}

/// A turn no one watches: no steers, no compaction. An overflow ends the
/// turn with its error.
pub struct Unattended;

impl Driver for Unattended {
    fn steers(&mut self, _: &mut Agent, _: &mut dyn TurnUi) -> Vec<String> {
        Vec::new()
    }
    async fn make_room(&mut self, _: &mut Agent, _: &Cancel, _: &mut dyn TurnUi) -> bool {
        false
    }
    fn stop_at_line(&mut self, _: &mut Agent, _: &mut dyn TurnUi) -> bool {
        false
    }
    async fn after_turn(&mut self, _: &mut Agent, _: &Cancel, _: &mut dyn TurnUi) {}
}

/// What a turn shows as it runs.
pub trait TurnUi: Send {
    /// A model call starts.
    fn step_start(&mut self) {}
    /// Text or reasoning arrived.
    fn delta(&mut self, delta: &Delta);
    /// A model call ended (whole or not).
    fn step_end(&mut self) {}
    /// A tool call is about to be checked and run; `summary` is the call in
    /// one line.
    fn tool_start(&mut self, _call: &ToolCall, _summary: &str) {}
    /// A tool ran (or was denied, or interrupted).
    fn tool(&mut self, _call: &ToolCall, _output: &ToolOutput) {}
    /// Calls running at the same time (`task`, SPEC 20), one live line
    /// each, redrawn in place of the last ones drawn; none: take them away.
    fn running(&mut self, _lines: &[String]) {}
    /// Ask whether a call may run. A UI without a terminal cannot.
    fn ask(&mut self, _question: &Question<'_>) -> Asked {
        Asked::Now(Answer::Cannot)
    }
    /// Whether `ask` can reach someone (a UI without a terminal cannot).
    fn can_ask(&self) -> bool {
        false
    }
    /// Something to tell the user (saving failed, a steer joined).
    fn notice(&mut self, text: &str);
}

/// Tell the user about hooks that failed (they are otherwise ignored).
pub(super) fn report(outcome: &crate::hooks::Outcome, ui: &mut dyn TurnUi) {
    for problem in &outcome.problems {
        ui.notice(&format!("warning: {problem}"));
    }
}

/// Lets the registry ask through the turn's UI.
pub(super) struct UiAsker<'a>(pub(super) &'a mut dyn TurnUi);

impl Asker for UiAsker<'_> {
    fn ask(&mut self, question: &Question<'_>) -> Asked {
        self.0.ask(question)
    }
    fn can_ask(&self) -> bool {
        self.0.can_ask()
    }
}

/// The assistant's text over a turn's steps, joined by blank lines. Each
/// step's text is shared with the context, not copied (a 100 MB answer is
/// held once); it is joined only where it is shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply(Vec<Text>);

impl Reply {
    /// Add a step's text.
    pub fn push(&mut self, text: Text) {
        self.0.push(text);
    }

    /// True when no step said anything.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|t| t.is_empty())
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, text) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            f.write_str(text)?;
        }
        Ok(())
    }
}

/// A JSON string, written piece by piece (`serde_json` escapes a `Display`
/// as it goes): no joined copy.
impl serde::Serialize for Reply {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOutcome {
    /// The assistant's text over the turn's steps.
    pub reply: Reply,
    /// Tokens and cost summed over the turn's model calls.
    pub usage: Usage,
    /// Why the turn ended early, if it did.
    pub error: Option<CallError>,
    /// The driver stopped the turn at the compaction line; compaction
    /// should follow.
    pub compact_due: bool,
}

impl TurnOutcome {
    /// Whether the turn ended before the model finished (stopped, failed or cut).
    pub fn stopped(&self) -> bool {
        matches!(self.error, Some(CallError::Cancelled { .. }))
    }
}

impl Agent {
    /// Run one turn of `kind` for the user's `text`, showing it through
    /// `ui`; `driver` adds what the one running it brings (steers,
    /// compaction).
    pub async fn turn_with<D: Driver>(
        &mut self,
        text: &str,
        kind: TurnKind,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
        driver: &mut D,
    ) -> TurnOutcome {
        let mut outcome = TurnOutcome::default();
        if let Err(e) = self.sync_from_disk() {
            ui.notice(&format!("could not re-read the session: {e}"));
        }
        let mut turn_messages = Vec::new();
        let mut text = text.to_string();
        if kind == TurnKind::Normal {
            // SPEC 15: a user_prompt hook's stdout is appended to the message.
            let out = self.hook(Event::UserPrompt, fields([("prompt", text.clone().into())]), None).await;
            report(&out, ui);
            for added in &out.output {
                text = format!("{}\n\n{}", text.trim_end(), added.trim_end());
            }
        }
        self.add_user(&text, false, &mut turn_messages);
        let mut overflow_retried = false;
        let max_steps = self.config.max_steps_per_turn.unwrap_or(crate::config::DEFAULT_MAX_STEPS);
        let mut steps = 0u64;
        loop {
            // A model that never stops calling tools ends here, with every
            // call answered, rather than running (and billing) for ever.
            if steps >= max_steps {
                let text = steps_message(max_steps);
                ui.notice(&text);
                self.record(Entry::Notice { at: time::now(), text });
                break;
            }
            steps += 1;
            let steers = driver.steers(self, ui);
            self.add_steers(steers, ui, &mut turn_messages);
            if let Err(e) = self.sync_from_disk() {
                ui.notice(&format!("could not re-read the session: {e}"));
            }
            // SPEC 15: MCP servers still starting are waited for (bounded).
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
            let tool_specs = self.tools.specs(&self.situation(kind));
            let system = self.system_for(kind);
            self.prune_before_call(system.as_deref(), &tool_specs, jiff::Timestamp::now());
            ui.step_start();
            let mut gate = SilentGate::default();
            let result = {
                let request = Request {
                    model: &self.model.model,
                    system: system.as_deref(),
                    messages: &self.messages,
                    tools: &tool_specs,
                    thinking: self.thinking,
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
                self.provider.complete(&request, &mut on_delta, cancel).await
            };
            self.last_call = Some(jiff::Timestamp::now());
            if let Some(rest) = gate.finish() {
                ui.delta(&Delta::Text(rest));
            }
            ui.step_end();
            let response = match result {
                Ok(response) => response,
                Err(error) => {
                    let error = match error {
                        // Overflow recovery: the driver makes room (the chat
                        // compacts), then this request is retried once. Never
                        // in a flush: it precedes a compaction (glrs-compact
                        // holds the session for it), and ends with its error.
                        CallError::Overflow(message) if !overflow_retried => {
                            overflow_retried = true;
                            if driver.make_room(self, cancel, ui).await {
                                continue;
                            }
                            CallError::Overflow(format!(
                                "{message}; nothing could be compacted: {}",
                                self.overflow_advice()
                            ))
                        }
                        CallError::Overflow(m) => CallError::Overflow(format!(
                            "{m}; the request is still too large after compacting: try /compact with an instruction \
                             saying what to keep, or {}",
                            self.overflow_advice()
                        )),
                        other => other,
                    };
                    // A new session dropped unsaved has no turn to record.
                    let dropped = self.drop_if_never_saved(&error, ui);
                    if !dropped {
                        self.end_early(&error, &mut turn_messages, &mut outcome);
                    }
                    outcome.error = Some(error);
                    if dropped {
                        return outcome;
                    }
                    break;
                }
            };
            let calls = response.tool_calls.clone();
            self.add_response(response, &mut turn_messages, &mut outcome);
            if calls.is_empty() {
                // A steer typed while the model answered keeps the turn going;
                // otherwise the turn ends here, and its write point (just
                // below the loop) writes this step too: one rewrite, not two.
                let steers = driver.steers(self, ui);
                if steers.is_empty() {
                    break;
                }
                if let Some(problem) = self.save_or_report() {
                    ui.notice(&problem.to_string());
                }
                self.add_steers(steers, ui, &mut turn_messages);
                continue;
            }
            if let Some(problem) = self.save_or_report() {
                ui.notice(&problem.to_string());
            }
            self.run_calls(&calls, kind, ui, cancel, &mut turn_messages).await;
            if cancel.is_cancelled() {
                outcome.error = Some(CallError::Cancelled { partial: Response::default() });
                break;
            }
            // A turn that passed the line stops here rather than take another step.
            if driver.stop_at_line(self, ui) {
                outcome.compact_due = true;
                break;
            }
        }
        // Consumed as converted: the turn's messages are not held twice during the write.
        let messages = turn_messages.into_iter().map(|m| TurnMessage::from(&m)).collect();
        self.record(Entry::Turn { at: time::now(), messages });
        if let Some(problem) = self.save_or_report() {
            ui.notice(&problem.to_string());
        }
        if kind == TurnKind::Normal && self.hooked(Event::TurnEnd) {
            let out = self.hook(Event::TurnEnd, fields([("reply", outcome.reply.to_string().into())]), None).await;
            report(&out, ui);
        }
        driver.after_turn(self, cancel, ui).await;
        outcome
    }

    /// Add typed lines to the turn as steers.
    fn add_steers(&mut self, lines: Vec<String>, ui: &mut dyn TurnUi, turn_messages: &mut Vec<Message>) {
        for line in lines {
            ui.notice(&format!("(steer joined the turn: {line})"));
            self.add_user(&line, true, turn_messages);
        }
    }

    fn add_user(&mut self, text: &str, steer: bool, turn_messages: &mut Vec<Message>) {
        self.checkpoints.user_message();
        self.record(Entry::User { at: time::now(), text: text.to_string(), steer });
        let message = Message::User { content: text.to_string() };
        self.context_tokens += message.estimate_tokens();
        self.messages.push(message.clone());
        turn_messages.push(message);
    }

    /// Record a model call's answer (whole, or the part that arrived).
    /// Takes the answer by value: its text moves into the context rather
    /// than being copied once more (a 100 MB answer).
    fn add_response(&mut self, r: Response, turn_messages: &mut Vec<Message>, outcome: &mut TurnOutcome) {
        let at = time::now();
        for reasoning in &r.reasoning {
            self.record(Entry::Reasoning {
                at: at.clone(),
                text: reasoning.text.clone(),
                signature: reasoning.signature.clone(),
            });
        }
        // One allocation for the context, the entry, the turn and the reply.
        let text = Text::from(r.text);
        self.record(Entry::Assistant {
            at: at.clone(),
            text: text.clone(),
            model: self.model.full(),
            tool_calls: r.tool_calls.clone(),
            stop_reason: r.stop_reason,
        });
        if let Some(usage) = r.usage {
            self.record(Entry::Usage {
                at,
                model: self.model.full(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cache_read_tokens: usage.cache_read_tokens,
                cache_write_tokens: usage.cache_write_tokens,
                cost_usd: usage.cost_usd,
            });
            outcome.usage.add(&usage);
        }
        if !text.is_empty() && !is_silent(&text) {
            outcome.reply.push(text.clone());
        }
        let message = Message::Assistant { content: text, reasoning: r.reasoning, tool_calls: r.tool_calls };
        self.messages.push(message.clone());
        turn_messages.push(message);
        // SPEC 5: what the provider reported for this call; else our estimate.
        self.context_tokens = match r.usage {
            Some(u) if u.total() > 0 => u.total(),
            _ => context::estimate(&self.messages) + self.system_tokens(),
        };
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
        let answered_before = self.unwritten.iter().any(|e| matches!(e, Entry::Assistant { .. }));
        if arrived || answered_before || self.is_saved() || self.store.locate(&self.id).is_some() {
            return false;
        }
        self.unwritten.clear();
        self.messages.clear();
        self.context_tokens = 0;
        ui.notice("the new session was not kept: its first model call failed");
        true
    }

    /// Keep what a broken or stopped call produced, and say why it ended.
    fn end_early(&mut self, error: &CallError, turn_messages: &mut Vec<Message>, outcome: &mut TurnOutcome) {
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
