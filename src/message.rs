//! The conversation's shared vocabulary: a message, a tool call, a piece of
//! reasoning. A leaf module (it imports nothing from this crate) so that the
//! store, the provider adapters, the context and the chat can all use these
//! types without one of them depending on another. What reaches disk is the
//! store's own types (`store::entry`); only `ToolCall` and `Reasoning` are
//! shared with them, as the schema's `toolCalls` and reasoning fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the provider gave; its result must carry the same.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input object the model sent.
    pub input: Value,
}

/// Reasoning the model showed, with what the provider needs to take it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning text, in full.
    pub text: String,
    /// Provider data needed to send it back (Anthropic's signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// One message of the conversation, whatever protocol carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// What the user said (or a brief standing in for earlier turns).
    User {
        /// The text.
        content: String,
    },
    /// One model call's answer.
    Assistant {
        /// The text of the answer.
        content: String,
        /// Reasoning shown before or during the answer.
        reasoning: Vec<Reasoning>,
        /// Tools the model asked to run.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result, answering the call with the same id.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

impl Message {
    /// The estimate of SPEC section 5: `ceil(chars / 4)`, tool calls counted
    /// as name plus JSON input.
    pub fn estimate_tokens(&self) -> u64 {
        let chars = match self {
            Message::User { content } => content.chars().count(),
            Message::Assistant { content, reasoning, tool_calls } => {
                content.chars().count()
                    + reasoning.iter().map(|r| r.text.chars().count()).sum::<usize>()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.chars().count() + c.input.to_string().chars().count())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.chars().count(),
        };
        tokens_of_chars(chars)
    }
}

/// SPEC 5's estimate, the one place it lives: `ceil(chars / 4)` tokens for
/// `chars` characters (not bytes).
pub fn tokens_of_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The estimate for a text: [`tokens_of_chars`] of its characters.
pub fn estimate_text(text: &str) -> u64 {
    tokens_of_chars(text.chars().count())
}
