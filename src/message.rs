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
