//! What a model call takes besides messages and what it gives back: tool
//! specifications, usage, the response and its streamed pieces. The
//! messages themselves are the leaf module `message`'s, re-exported here.

use serde::Serialize;
use serde_json::Value;

pub use crate::message::{Message, Reasoning, ToolCall};

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
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
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// The cost in US dollars, when known.
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// All four token counts added up. The counts come from a server, so
    /// they saturate rather than wrap (or panic) on absurd values.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// Add another call's usage to this, saturating like [`Usage::total`].
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        if let Some(c) = other.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
    }
}

/// What one model call produced (whole, or as much as arrived).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The answer's text.
    pub text: String,
    /// Reasoning shown.
    pub reasoning: Vec<Reasoning>,
    /// Tools the model asked to run.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped, as the provider said it.
    pub stop_reason: String,
    /// Tokens and cost, when reported.
    pub usage: Option<Usage>,
}

/// Pieces of a streamed answer, for showing as they arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_counts_from_a_server_saturate_instead_of_wrapping() {
        let huge =
            Usage { input_tokens: u64::MAX, output_tokens: 7, cache_read_tokens: u64::MAX - 1, ..Usage::default() };
        assert_eq!(huge.total(), u64::MAX);
        let mut sum = Usage { input_tokens: 5, output_tokens: 1, ..Usage::default() };
        sum.add(&huge);
        assert_eq!((sum.input_tokens, sum.output_tokens, sum.cache_read_tokens), (u64::MAX, 8, u64::MAX - 1));
        assert_eq!(sum.total(), u64::MAX);
    }
}
