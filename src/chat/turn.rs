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

use crate::context;
use crate::provider::{CallError, Cancel, Delta, Message, Request, Response, Usage};
use crate::store::{Entry, ToolCall};
use crate::time;

use super::Chat;
use super::tools::ToolOutput;

/// What a turn shows as it runs.
pub trait TurnUi: Send {
    /// A model call starts.
    fn step_start(&mut self) {}
    /// Text or reasoning arrived.
    fn delta(&mut self, delta: &Delta);
    /// A model call ended (whole or not).
    fn step_end(&mut self) {}
    /// A tool ran.
    fn tool(&mut self, _call: &ToolCall, _output: &ToolOutput) {}
    /// Something to tell the user (saving failed, a steer joined).
    fn notice(&mut self, text: &str);
}

/// How a turn ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOutcome {
    /// The assistant's text over the turn's steps.
    pub reply: String,
    pub usage: Usage,
    /// Why the turn ended early, if it did.
    pub error: Option<CallError>,
}

impl TurnOutcome {
    pub fn stopped(&self) -> bool {
        matches!(self.error, Some(CallError::Cancelled { .. }))
    }
}

impl Chat {
    /// Run one turn for `text`. `steers` is asked before each model call for
    /// lines the user typed meanwhile; they join the turn as `steer` user
    /// messages.
    pub async fn turn(
        &mut self,
        text: &str,
        ui: &mut dyn TurnUi,
        cancel: &Cancel,
        steers: &mut dyn FnMut() -> Vec<String>,
    ) -> TurnOutcome {
        let mut outcome = TurnOutcome::default();
        if let Err(e) = self.sync_from_disk() {
            ui.notice(&format!("could not re-read the session: {e}"));
        }
        let mut turn_messages = Vec::new();
        self.add_user(text, false, &mut turn_messages);
        let tool_specs = self.tools.specs();
        loop {
            for steer in steers() {
                ui.notice(&format!("(steer joined the turn: {steer})"));
                self.add_user(&steer, true, &mut turn_messages);
            }
            if let Err(e) = self.sync_from_disk() {
                ui.notice(&format!("could not re-read the session: {e}"));
            }
            ui.step_start();
            let result = {
                let request = Request {
                    model: &self.model.model,
                    system: self.system.as_deref(),
                    messages: &self.messages,
                    tools: &tool_specs,
                };
                let mut on_delta = |d: Delta| ui.delta(&d);
                self.provider.complete(&request, &mut on_delta, cancel).await
            };
            ui.step_end();
            let response = match result {
                Ok(response) => response,
                Err(error) => {
                    self.end_early(&error, &mut turn_messages, &mut outcome);
                    outcome.error = Some(error);
                    break;
                }
            };
            self.add_response(&response, "", &mut turn_messages, &mut outcome);
            if let Some(problem) = self.save_or_report() {
                ui.notice(&problem);
            }
            if response.tool_calls.is_empty() {
                // A steer typed while the model answered keeps the turn going.
                let pending = steers();
                if pending.is_empty() {
                    break;
                }
                for steer in pending {
                    ui.notice(&format!("(steer joined the turn: {steer})"));
                    self.add_user(&steer, true, &mut turn_messages);
                }
                continue;
            }
            for call in &response.tool_calls {
                let output = self.tools.run(call);
                ui.tool(call, &output);
                self.record(Entry::Tool {
                    at: time::now(),
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                    result: output.content.clone(),
                    is_error: output.is_error,
                });
                let message = Message::Tool {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: output.content,
                    is_error: output.is_error,
                };
                self.context_tokens += message.estimate_tokens();
                self.messages.push(message.clone());
                turn_messages.push(message);
            }
            if cancel.is_cancelled() {
                outcome.error = Some(CallError::Cancelled { partial: Response::default() });
                break;
            }
        }
        let messages = turn_messages.iter().filter_map(|m| serde_json::to_value(m).ok()).collect();
        self.record(Entry::Turn { at: time::now(), messages });
        if let Some(problem) = self.save_or_report() {
            ui.notice(&problem);
        }
        outcome
    }

    fn add_user(&mut self, text: &str, steer: bool, turn_messages: &mut Vec<Message>) {
        self.record(Entry::User { at: time::now(), text: text.to_string(), steer });
        let message = Message::User { content: text.to_string() };
        self.context_tokens += message.estimate_tokens();
        self.messages.push(message.clone());
        turn_messages.push(message);
    }

    /// Record a model call's answer (whole, or the part that arrived).
    fn add_response(&mut self, r: &Response, stop: &str, turn_messages: &mut Vec<Message>, outcome: &mut TurnOutcome) {
        let at = time::now();
        for reasoning in &r.reasoning {
            self.record(Entry::Reasoning {
                at: at.clone(),
                text: reasoning.text.clone(),
                signature: reasoning.signature.clone(),
            });
        }
        let stop_reason = if stop.is_empty() { r.stop_reason.clone() } else { stop.to_string() };
        self.record(Entry::Assistant {
            at: at.clone(),
            text: r.text.clone(),
            model: self.model.full(),
            tool_calls: r.tool_calls.clone(),
            stop_reason,
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
        let message = Message::Assistant {
            content: r.text.clone(),
            reasoning: r.reasoning.clone(),
            tool_calls: r.tool_calls.clone(),
        };
        self.messages.push(message.clone());
        turn_messages.push(message);
        // SPEC 5: what the provider reported for this call; else our estimate.
        self.context_tokens = match r.usage {
            Some(u) if u.total() > 0 => u.total(),
            _ => context::estimate(&self.messages) + self.system.as_deref().map_or(0, |s| s.len() as u64 / 4),
        };
        if !r.text.is_empty() {
            if !outcome.reply.is_empty() {
                outcome.reply.push_str("\n\n");
            }
            outcome.reply.push_str(&r.text);
        }
    }

    /// Keep what a broken or stopped call produced, and say why it ended.
    fn end_early(&mut self, error: &CallError, turn_messages: &mut Vec<Message>, outcome: &mut TurnOutcome) {
        let (partial, stop) = match error {
            CallError::Cancelled { partial } => (partial, "aborted"),
            CallError::Cut { partial, .. } => (partial, "error"),
            _ => (&Response::default(), ""),
        };
        if !partial.text.is_empty() || !partial.reasoning.is_empty() {
            // Tool calls of a broken answer are dropped: they have no result.
            let kept = Response { tool_calls: Vec::new(), ..partial.clone() };
            self.add_response(&kept, stop, turn_messages, outcome);
        }
        match error {
            CallError::Cancelled { .. } => {
                self.record(Entry::Notice { at: time::now(), text: "turn stopped by the user".into() })
            }
            other => self.record(Entry::Error { at: time::now(), text: other.to_string(), kind: other.kind().into() }),
        }
    }
}
