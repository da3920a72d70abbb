//! Provider-neutral messages and results: what the turn loop sends and gets
//! back, whatever protocol carries it. These are also the `messages` of a
//! `turn` entry, so the context can be rebuilt exactly.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::store::ToolCall;

/// Reasoning the model showed, with what the provider needs to take it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User {
        content: String,
    },
    #[serde(rename_all = "camelCase")]
    Assistant {
        #[serde(default)]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    #[serde(rename_all = "camelCase")]
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
        #[serde(default)]
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
        (chars as u64).div_ceil(4)
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input object.
    pub parameters: Value,
}

/// Tokens and cost of one model call. `input_tokens` excludes cached input
/// (Anthropic's meaning; OpenAI's `prompt_tokens` is split accordingly), so
/// the four token counts add up to what the call saw and wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub cost_usd: Option<f64>,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        if let Some(c) = other.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
    }
}

/// What one model call produced (whole, or as much as arrived).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    pub text: String,
    pub reasoning: Vec<Reasoning>,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: String,
    pub usage: Option<Usage>,
}

/// Pieces of a streamed answer, for showing as they arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Reasoning(String),
}
