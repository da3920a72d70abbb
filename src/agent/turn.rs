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

use super::step::Failed;
use crate::context;
use crate::message::Text;
use crate::provider::{CallError, Cancel, Delta, Message, Response, Usage};
use crate::store::{Entry, ToolCall, TurnMessage};
use crate::time;

use super::Agent;
use crate::hooks::{Event, Payload};
use crate::permissions::{Answer, Asked, Asker, Question};
use crate::tools::ToolOutput;

/// Printed (and recorded) when a turn reaches `maxStepsPerTurn`.
pub fn steps_message(max: u64) -> String {
    format!("(the turn stopped after {max} model calls (maxStepsPerTurn): send \"continue\" to let the model go on)")
}

/// The token that makes a reply silent (SPEC 7).
pub const NO_REPLY: &str = "NO_REPLY";

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
    /// A driver with no one to send "continue" compacts here and goes on.
    async fn stop_at_line(&mut self, agent: &mut Agent, cancel: &Cancel, ui: &mut dyn TurnUi) -> bool;
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
    async fn stop_at_line(&mut self, _: &mut Agent, _: &Cancel, _: &mut dyn TurnUi) -> bool {
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
    fn tell(&mut self, text: &str) {
        self.0.notice(text);
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

/// A turn as it runs: its messages so far and what it will return.
#[derive(Default)]
pub(super) struct Turn {
    /// The messages of this turn, for its `turn` entry.
    pub messages: Vec<Message>,
    /// What the turn returns.
    pub outcome: TurnOutcome,
    /// An overflow was met and room made once already.
    pub overflow_retried: bool,
}

/// What follows a step that answered.
enum Next {
    /// Another step.
    Step,
    /// The turn ends.
    End,
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
        let mut turn = Turn::default();
        self.sync_or_warn(ui);
        let text = self.prompt_with_hooks(text, kind, ui).await;
        // The flush's prompt is glrs's, not the person's: marked, never shown as typed.
        let internal = (kind == TurnKind::Flush).then(|| crate::compact::flush::INTERNAL.to_string());
        self.add_user(&text, false, internal, &mut turn.messages);
        let max_steps = self.config.max_steps_per_turn.unwrap_or(crate::config::DEFAULT_MAX_STEPS);
        for step in 1.. {
            // A model that never stops calling tools ends here, with every
            // call answered, rather than running (and billing) for ever.
            if step > max_steps {
                let text = steps_message(max_steps);
                ui.notice(&text);
                self.record(Entry::Notice { at: time::now(), text });
                break;
            }
            let steers = driver.steers(self, ui);
            self.add_steers(steers, ui, &mut turn.messages);
            self.sync_or_warn(ui);
            let response = match self.model_step(kind, ui, cancel).await {
                Ok(response) => response,
                Err(error) => match self.after_failed_call(error, &mut turn, driver, cancel, ui).await {
                    Failed::Retry => continue,
                    Failed::End => break,
                    Failed::Dropped => return turn.outcome,
                },
            };
            match self.after_answer(response, &mut turn, kind, driver, cancel, ui).await {
                Next::Step => {}
                Next::End => break,
            }
        }
        self.end_turn(turn.messages, &turn.outcome, kind, ui).await;
        driver.after_turn(self, cancel, ui).await;
        turn.outcome
    }

    /// What follows a model call that answered: its calls run (and the turn
    /// goes on), or, with none, the turn ends unless a steer keeps it going.
    async fn after_answer<D: Driver>(
        &mut self,
        response: Response,
        turn: &mut Turn,
        kind: TurnKind,
        driver: &mut D,
        cancel: &Cancel,
        ui: &mut dyn TurnUi,
    ) -> Next {
        let calls = response.tool_calls.clone();
        self.add_response(response, &mut turn.messages, &mut turn.outcome);
        if calls.is_empty() {
            // A steer typed while the model answered keeps the turn going;
            // otherwise the turn ends here, and its write point (the turn's
            // end) writes this step too: one rewrite, not two.
            let steers = driver.steers(self, ui);
            if steers.is_empty() {
                return Next::End;
            }
            self.save_or_notice(ui);
            self.add_steers(steers, ui, &mut turn.messages);
            return Next::Step;
        }
        self.save_or_notice(ui);
        self.run_calls(&calls, kind, ui, cancel, &mut turn.messages).await;
        if cancel.is_cancelled() {
            turn.outcome.error = Some(CallError::Cancelled { partial: Response::default() });
            return Next::End;
        }
        // A turn that passed the line stops here rather than take another step.
        if driver.stop_at_line(self, cancel, ui).await {
            turn.outcome.compact_due = true;
            return Next::End;
        }
        Next::Step
    }

    /// The user's text as the model gets it: a `user_prompt` hook's stdout
    /// is appended to it (SPEC 15).
    async fn prompt_with_hooks(&self, text: &str, kind: TurnKind, ui: &mut dyn TurnUi) -> String {
        let mut text = text.to_string();
        if kind == TurnKind::Normal {
            let out = self.hook(Payload::UserPrompt { prompt: text.clone() }).await;
            report(&out, ui);
            for added in &out.output {
                text = format!("{}\n\n{}", text.trim_end(), added.trim_end());
            }
        }
        text
    }

    /// The turn's write point: its `turn` entry, then the `turn_end` hook.
    async fn end_turn(&mut self, messages: Vec<Message>, outcome: &TurnOutcome, kind: TurnKind, ui: &mut dyn TurnUi) {
        // Consumed as converted: the turn's messages are not held twice during the write.
        let messages = messages.into_iter().map(|m| TurnMessage::from(&m)).collect();
        self.checkpoint_turn_end(ui).await;
        self.record(Entry::Turn { at: time::now(), messages });
        self.save_or_notice(ui);
        if kind == TurnKind::Normal && self.hooked(Event::TurnEnd) {
            let out = self.hook(Payload::TurnEnd { reply: outcome.reply.to_string() }).await;
            report(&out, ui);
        }
    }

    /// Rebuild the context if another program changed the file; a failure
    /// is only told.
    fn sync_or_warn(&mut self, ui: &mut dyn TurnUi) {
        if let Err(e) = self.sync_from_disk() {
            ui.notice(&format!("could not re-read the session: {}", e.report()));
        }
    }

    /// Write what is unwritten; a failure is told, not fatal (it is kept
    /// for the next write point).
    pub(super) fn save_or_notice(&mut self, ui: &mut dyn TurnUi) {
        if let Some(problem) = self.save_or_report() {
            ui.notice(&problem.to_string());
        }
    }

    /// Add typed lines to the turn as steers.
    fn add_steers(&mut self, lines: Vec<String>, ui: &mut dyn TurnUi, turn_messages: &mut Vec<Message>) {
        for line in lines {
            ui.notice(&format!("(steer joined the turn: {line})"));
            self.add_user(&line, true, None, turn_messages);
        }
    }

    fn add_user(&mut self, text: &str, steer: bool, internal: Option<String>, turn_messages: &mut Vec<Message>) {
        self.checkpoints.user_message();
        self.record(Entry::User { at: time::now(), text: text.to_string(), steer, internal });
        let message = Message::User { content: text.to_string() };
        self.context.tokens += message.estimate_tokens();
        self.context.messages.push(message.clone());
        turn_messages.push(message);
    }

    /// Record a model call's answer (whole, or the part that arrived).
    /// Takes the answer by value: its text moves into the context rather
    /// than being copied once more (a 100 MB answer).
    pub(super) fn add_response(&mut self, r: Response, turn_messages: &mut Vec<Message>, outcome: &mut TurnOutcome) {
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
            model: self.binding.model.full(),
            tool_calls: r.tool_calls.clone(),
            stop_reason: r.stop_reason,
        });
        if let Some(usage) = r.usage {
            self.record(Entry::Usage {
                at,
                model: self.binding.model.full(),
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
        self.context.messages.push(message.clone());
        turn_messages.push(message);
        // SPEC 5: what the provider reported for this call; else our estimate.
        self.context.tokens = match r.usage {
            Some(u) if u.total() > 0 => u.total(),
            _ => context::estimate(&self.context.messages) + self.system_tokens(),
        };
    }
}
