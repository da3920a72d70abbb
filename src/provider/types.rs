//! What a model call takes besides messages and what it gives back: tool
//! specifications, usage, the response and its streamed pieces. The
//! messages themselves are the leaf module `message`'s, re-exported here.

use serde::Serialize;
use serde_json::Value;

pub use crate::message::{Message, Reasoning, StopReason, ToolCall};

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
    pub stop_reason: StopReason,
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
    /// The request failed in a way worth trying again, and will be: said
    /// so the user is not left in silence while it waits (issue 24).
    Retrying(Retrying),
}

/// A retry about to happen: why, after how long, and which attempt it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrying {
    /// What went wrong (`cannot reach openai: …`, `HTTP 503: …`).
    pub why: String,
    /// How long before the next attempt.
    pub wait: std::time::Duration,
    /// The number of the next attempt (from 2).
    pub attempt: u32,
    /// Attempts in all (`retry.attempts`).
    pub attempts: u32,
}

impl std::fmt::Display for Retrying {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.wait.as_secs_f64();
        // Whole seconds as such; short waits with the digits that matter.
        let shown = if secs >= 1.0 {
            format!("{secs:.0}")
        } else {
            let short = format!("{secs:.3}");
            short.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        write!(f, "{}: retrying in {shown} s (attempt {} of {})", self.why, self.attempt, self.attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_says_when_and_which_attempt() {
        let at = |ms: u64| Retrying {
            why: "HTTP 503: busy".into(),
            wait: std::time::Duration::from_millis(ms),
            attempt: 2,
            attempts: 4,
        };
        assert_eq!(at(2000).to_string(), "HTTP 503: busy: retrying in 2 s (attempt 2 of 4)");
        assert_eq!(at(10).to_string(), "HTTP 503: busy: retrying in 0.01 s (attempt 2 of 4)");
        assert_eq!(at(500).to_string(), "HTTP 503: busy: retrying in 0.5 s (attempt 2 of 4)");
    }

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
