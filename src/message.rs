//! The conversation's shared vocabulary: a message, a tool call, a piece of
//! reasoning. A leaf module (it imports nothing from this crate) so that the
//! store, the provider adapters, the context and the chat can all use these
//! types without one of them depending on another. What reaches disk is the
//! store's own types (`store::entry`); only `ToolCall` and `Reasoning` are
//! shared with them, as the schema's `toolCalls` and reasoning fields.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Text held once however many places keep it: an answer is in the
/// context, its `assistant` entry and its `turn` entry, and a 100 MB answer
/// must not be held three times (issue 14). Cloning shares; a `String`
/// becomes one without a copy. Reads as a `str`; on disk, a JSON string.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Arc<String>);

impl Text {
    /// The text as a `str`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as an owned `String`: moved out when nothing else holds it,
    /// else copied.
    pub fn into_string(self) -> String {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| String::clone(&shared))
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Arc::new(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Arc::new(s.to_string()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.into_string()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

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
        /// The text of the answer (shared with the entries that record it).
        content: Text,
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

/// Why a model call ended: the schema's `stopReason` (SPEC 2). The
/// providers' own words are kept as they sent them (Anthropic's `end_turn`,
/// OpenAI's `stop`, …; a word this list does not know is kept as
/// [`StopReason::Other`]), and glrs adds two of its own: `aborted` (the user
/// stopped the call) and `error` (the stream was cut). On disk and in
/// `Display`, the word itself; each is spelled once, in [`StopReason::as_str`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StopReason {
    /// Anthropic: the model finished its answer.
    EndTurn,
    /// Anthropic: the model asks for tools.
    ToolUse,
    /// Anthropic: the answer reached the output token limit.
    MaxTokens,
    /// Anthropic: a stop sequence was produced.
    StopSequence,
    /// Anthropic: a long-running turn paused, to be continued.
    PauseTurn,
    /// Anthropic: the model declined to answer.
    Refusal,
    /// OpenAI: the model finished its answer.
    Stop,
    /// OpenAI: the model asks for tools.
    ToolCalls,
    /// OpenAI: the answer reached the output token limit.
    Length,
    /// OpenAI: the answer was filtered.
    ContentFilter,
    /// glrs: the user stopped the call (Ctrl-C, Esc).
    Aborted,
    /// glrs: the stream was cut mid-answer.
    Error,
    /// The stream ended without saying why (on disk, `""`).
    #[default]
    Unstated,
    /// A word this list does not know, kept as the provider (or an imported
    /// agent) wrote it.
    Other(String),
}

impl StopReason {
    /// Every reason but [`StopReason::Other`], for parsing by name.
    const NAMED: [StopReason; 13] = [
        StopReason::EndTurn,
        StopReason::ToolUse,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::PauseTurn,
        StopReason::Refusal,
        StopReason::Stop,
        StopReason::ToolCalls,
        StopReason::Length,
        StopReason::ContentFilter,
        StopReason::Aborted,
        StopReason::Error,
        StopReason::Unstated,
    ];

    /// The word, as the schema writes it.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::Stop => "stop",
            StopReason::ToolCalls => "tool_calls",
            StopReason::Length => "length",
            StopReason::ContentFilter => "content_filter",
            StopReason::Aborted => "aborted",
            StopReason::Error => "error",
            StopReason::Unstated => "",
            StopReason::Other(word) => word,
        }
    }

    /// Whether the model ended the call itself, done or asking for tools
    /// (not cut, stopped, limited or filtered): exports say nothing then.
    pub fn ended_normally(&self) -> bool {
        matches!(self, StopReason::EndTurn | StopReason::ToolUse | StopReason::Stop | StopReason::ToolCalls)
    }
}

impl From<&str> for StopReason {
    fn from(word: &str) -> StopReason {
        StopReason::NAMED
            .into_iter()
            .find(|r| r.as_str() == word)
            .unwrap_or_else(|| StopReason::Other(word.to_string()))
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<StopReason, D::Error> {
        String::deserialize(deserializer).map(|word| StopReason::from(word.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_reason_reads_back_as_itself() {
        for reason in StopReason::NAMED.into_iter().chain([StopReason::Other("toolUse".into())]) {
            let json = serde_json::to_string(&reason).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", reason.as_str()));
            let back: StopReason = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(back, reason, "{json}");
        }
    }

    #[test]
    fn unknown_and_empty_words_are_kept_as_written() {
        assert_eq!(StopReason::from("model_context_window_exceeded").as_str(), "model_context_window_exceeded");
        assert_eq!(StopReason::from(""), StopReason::Unstated);
        assert_eq!(serde_json::to_string(&StopReason::Unstated).unwrap_or_default(), "\"\"");
        assert_eq!(StopReason::from("end_turn"), StopReason::EndTurn);
        assert_eq!(StopReason::from("aborted"), StopReason::Aborted);
    }
}
