//! The twelve entry types of schema 2 (SPEC section 2, "Entries").
//!
//! These types are for reading entries (show, grep, status, replay) and for
//! creating new ones. The file itself keeps every entry's raw text, so an
//! entry of a type this version does not know, or with extra fields, is
//! shown as `Entry::Other` here and written back untouched.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::{Message, Reasoning, Text};
pub use crate::message::{StopReason, ToolCall};

/// A known entry. Every variant also has `at`, the time it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Entry {
    /// The user sent a message; `steer` when it joined a running turn.
    #[serde(rename_all = "camelCase")]
    User {
        /// When it was recorded.
        at: String,
        /// What the user said.
        text: String,
        #[serde(default, skip_serializing_if = "is_false")]
        /// Whether it joined a running turn.
        steer: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// Set when glrs sent it, not the person (`memoryFlush`: the flush's
        /// prompt): sent to the model like any message, never shown as
        /// typed (resume, `show`, prompt history, the title).
        internal: Option<String>,
    },
    /// One model call's answer.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// When it was recorded.
        at: String,
        /// The answer's text (shared with the context and the `turn`).
        text: Text,
        /// The model, `provider/model-id`.
        model: String,
        #[serde(default)]
        /// Tools the model asked to run (may be empty).
        tool_calls: Vec<ToolCall>,
        /// Why the model stopped (`aborted`, `error` when glrs stopped it).
        stop_reason: StopReason,
    },
    /// The model's reasoning, in full, with what the provider needs back.
    #[serde(rename_all = "camelCase")]
    Reasoning {
        /// When it was recorded.
        at: String,
        /// The reasoning, in full.
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The provider's signature, needed to send it back.
        signature: Option<String>,
    },
    /// A tool ran.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// When it was recorded.
        at: String,
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The input the model sent.
        input: Value,
        /// What the tool returned.
        result: String,
        #[serde(default)]
        /// Whether it failed.
        is_error: bool,
    },
    /// Tokens and cost reported by one model call.
    #[serde(rename_all = "camelCase")]
    Usage {
        /// When it was recorded.
        at: String,
        /// The model, `provider/model-id`.
        model: String,
        #[serde(default)]
        /// Input tokens not read from the cache.
        input_tokens: u64,
        #[serde(default)]
        /// Output tokens.
        output_tokens: u64,
        #[serde(default)]
        /// Input tokens read from the cache.
        cache_read_tokens: u64,
        #[serde(default)]
        /// Input tokens written to the cache.
        cache_write_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The cost in US dollars, when known.
        cost_usd: Option<f64>,
    },
    /// A turn ended: its messages in provider-neutral form.
    #[serde(rename_all = "camelCase")]
    Turn {
        /// When it was recorded.
        at: String,
        /// The turn's messages, as sent and received.
        messages: Vec<TurnMessage>,
    },
    /// glrs said something.
    #[serde(rename_all = "camelCase")]
    Notice {
        /// When it was recorded.
        at: String,
        /// What glrs said.
        text: String,
    },
    /// Something failed; `kind` is `provider`, `overflow`, `tool`, `io`, …
    #[serde(rename_all = "camelCase")]
    Error {
        /// When it was recorded.
        at: String,
        /// What failed.
        text: String,
        /// `provider`, `overflow`, `tool`, `io`, …
        kind: String,
    },
    /// `/clear`: the replay boundary moves here.
    #[serde(rename_all = "camelCase")]
    Cleared {
        /// When it was recorded.
        at: String,
    },
    /// A compaction landed.
    #[serde(rename_all = "camelCase")]
    Compacted {
        /// When it was recorded.
        at: String,
        /// The brief standing in for the replaced entries.
        brief: String,
        /// The first entry kept verbatim (numbered from 1).
        first_kept: u64,
        /// The context estimate before.
        tokens_before: u64,
        /// The context estimate after.
        tokens_after: u64,
        /// The model that wrote the brief.
        model: String,
        /// The artifact's file name in the session's artifacts folder.
        artifact: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The instruction that steered it, if any.
        instruction: Option<String>,
    },
    /// A program's own data; never sent to the model.
    #[serde(rename_all = "camelCase")]
    Custom {
        /// When it was recorded.
        at: String,
        /// Whose data it is (`memoryFlush`, …).
        name: String,
        /// The data.
        data: Value,
    },
    /// The workspace was recorded before a mutating tool (SPEC 19); never
    /// sent to the model.
    #[serde(rename_all = "camelCase")]
    Checkpoint {
        /// When it was recorded.
        at: String,
        /// The commit in the workspace's shadow repository.
        commit: String,
        /// Paths changed since the session's previous checkpoint (at most
        /// [`CHECKPOINT_FILES_LISTED`]; `moreFiles` counts the rest).
        files: Vec<String>,
        #[serde(default, skip_serializing_if = "is_zero")]
        /// Changed paths beyond those listed.
        more_files: u64,
        /// The folder recorded (the cwd, or the root of its git work tree).
        workspace: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        /// Files left out for being over `checkpoints.maxFileBytes`.
        too_large: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// Set on the checkpoint of the present a files rewind takes: the
        /// commit it went back to. The steps between that checkpoint and
        /// this one were undone (SPEC 24: an undone turn owns no line).
        rewound_to: Option<String>,
    },
}

/// How many changed paths a `checkpoint` entry names.
pub const CHECKPOINT_FILES_LISTED: usize = 100;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One message of a `turn` entry, in the schema's shape. The store owns
/// it, so a change in how providers or the chat hold messages cannot move
/// the disk format; `From` converts to and from the shared `Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum TurnMessage {
    /// `{"role": "user", "content"}`
    User {
        /// The text.
        content: String,
    },
    /// `{"role": "assistant", "content", "reasoning"?, "toolCalls"?}`
    #[serde(rename_all = "camelCase")]
    Assistant {
        #[serde(default)]
        /// The answer's text.
        content: Text,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        /// Reasoning shown.
        reasoning: Vec<Reasoning>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        /// Tools the model asked to run.
        tool_calls: Vec<ToolCall>,
    },
    /// `{"role": "tool", "toolCallId", "name", "content", "isError"}`
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The result.
        content: String,
        #[serde(default)]
        /// Whether it failed.
        is_error: bool,
    },
}

impl From<&Message> for TurnMessage {
    fn from(m: &Message) -> TurnMessage {
        match m.clone() {
            Message::User { content } => TurnMessage::User { content },
            Message::Assistant { content, reasoning, tool_calls } => {
                TurnMessage::Assistant { content, reasoning, tool_calls }
            }
            Message::Tool { tool_call_id, name, content, is_error } => {
                TurnMessage::Tool { tool_call_id, name, content, is_error }
            }
        }
    }
}

impl From<TurnMessage> for Message {
    fn from(m: TurnMessage) -> Message {
        match m {
            TurnMessage::User { content } => Message::User { content },
            TurnMessage::Assistant { content, reasoning, tool_calls } => {
                Message::Assistant { content, reasoning, tool_calls }
            }
            TurnMessage::Tool { tool_call_id, name, content, is_error } => {
                Message::Tool { tool_call_id, name, content, is_error }
            }
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An entry as read from a file: known, or kept as it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// An entry of a type this version knows.
    Known(Entry),
    /// An unknown type, or a known type whose fields do not fit.
    Other {
        /// Its `type`.
        kind: String,
        /// Its `at`.
        at: String,
        /// The whole entry.
        value: Value,
    },
}

/// An entry's JSON text, whether held as a parsed file's raw value or as a
/// line of a file read without parsing ([`crate::store::lines`]).
pub trait EntryText {
    /// The entry's JSON text.
    fn text(&self) -> &str;
}

impl EntryText for Box<RawValue> {
    fn text(&self) -> &str {
        self.get()
    }
}

impl EntryText for &RawValue {
    fn text(&self) -> &str {
        self.get()
    }
}

impl EntryText for &str {
    fn text(&self) -> &str {
        self
    }
}

/// An entry's `type` read from its first bytes, for the layout glrs writes
/// (`{"type":"user",…`); `None` for anything else, which must be parsed (or
/// searched) to know. Cheap enough to skip entries of a 100 MB session.
pub fn quick_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    rest.find('"').map(|end| &rest[..end])
}

impl Parsed {
    /// Read one raw entry. Never fails: what does not fit is `Other`.
    pub fn from_raw(raw: &RawValue) -> Parsed {
        Parsed::from_text(raw.get())
    }

    /// Read one entry from its JSON text. Never fails: what does not fit
    /// (or is not JSON at all) is `Other`.
    pub fn from_text(text: &str) -> Parsed {
        if let Ok(entry) = serde_json::from_str::<Entry>(text) {
            return Parsed::Known(entry);
        }
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("").to_string();
        Parsed::Other { kind: field("type"), at: field("at"), value }
    }

    /// The entry's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Parsed::Known(e) => e.kind(),
            Parsed::Other { kind, .. } => kind,
        }
    }

    /// The entry's `at`.
    pub fn at(&self) -> &str {
        match self {
            Parsed::Known(e) => e.at(),
            Parsed::Other { at, .. } => at,
        }
    }
}

impl Entry {
    /// The entry's `type` as written in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            Entry::User { .. } => "user",
            Entry::Assistant { .. } => "assistant",
            Entry::Reasoning { .. } => "reasoning",
            Entry::Tool { .. } => "tool",
            Entry::Usage { .. } => "usage",
            Entry::Turn { .. } => "turn",
            Entry::Notice { .. } => "notice",
            Entry::Error { .. } => "error",
            Entry::Cleared { .. } => "cleared",
            Entry::Compacted { .. } => "compacted",
            Entry::Custom { .. } => "custom",
            Entry::Checkpoint { .. } => "checkpoint",
        }
    }

    /// The entry's `at`.
    pub fn at(&self) -> &str {
        match self {
            Entry::User { at, .. }
            | Entry::Assistant { at, .. }
            | Entry::Reasoning { at, .. }
            | Entry::Tool { at, .. }
            | Entry::Usage { at, .. }
            | Entry::Turn { at, .. }
            | Entry::Notice { at, .. }
            | Entry::Error { at, .. }
            | Entry::Cleared { at }
            | Entry::Compacted { at, .. }
            | Entry::Custom { at, .. }
            | Entry::Checkpoint { at, .. } => at,
        }
    }

    /// The entry as the raw JSON text the file stores.
    pub fn to_raw(&self) -> serde_json::Result<Box<RawValue>> {
        serde_json::value::to_raw_value(self)
    }

    /// The entry with every secret `redactor` finds replaced, or `None`
    /// when it holds none (the usual case: one look at each of its strings,
    /// no copy). Every writer of entries asks this first (the agent,
    /// `glrs-sessions append`): secrets never reach a file.
    pub fn redacted(&self, redactor: &crate::redact::Redactor) -> Result<Option<Entry>, crate::error::StoreError> {
        let broken = |detail: String| crate::error::StoreError::Corrupt { path: "(new entry)".into(), detail };
        // Asked of the entry's strings in place: serializing it first
        // held a 100 MB answer twice.
        if !redactor.hit_in(self) {
            return Ok(None);
        }
        let raw = self.to_raw().map_err(|e| broken(e.to_string()))?;
        let mut value: Value = serde_json::from_str(raw.get()).map_err(|e| broken(e.to_string()))?;
        redactor.json(&mut value);
        let raw = serde_json::value::to_raw_value(&value).map_err(|e| broken(e.to_string()))?;
        match Parsed::from_raw(&raw) {
            Parsed::Known(e) => Ok(Some(e)),
            _ => Err(broken("redaction changed the entry's shape".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asking_a_large_entry_for_secrets_copies_nothing() {
        let redactor = crate::redact::Redactor::default();
        let answer = |text: &str| Entry::Assistant {
            at: "2026-11-29T15:24:19.412Z".into(),
            text: Text::from(text),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        };
        let clean = answer(&"y ".repeat(4 << 20));
        let (redacted, held) = crate::alloc_probe::peak_during(|| clean.redacted(&redactor).unwrap());
        assert!(redacted.is_none());
        assert!(held < 1 << 20, "held {held} bytes more to look at an 8 MB answer");
        // One that holds a key is still redacted.
        let key = format!("sk-{}", "a".repeat(40));
        match answer(&format!("the key is {key}")).redacted(&redactor).unwrap() {
            Some(Entry::Assistant { text, .. }) => assert_eq!(&*text, "the key is [REDACTED:openai]"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_type_round_trips() {
        let at = "2026-11-29T15:24:19.412Z".to_string();
        let all = vec![
            Entry::User { at: at.clone(), text: "hi".into(), steer: true, internal: None },
            Entry::Assistant {
                at: at.clone(),
                text: "ok".into(),
                model: "openai/gpt-4.1".into(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    input: serde_json::json!({"path": "a"}),
                }],
                stop_reason: "tool_use".into(),
            },
            Entry::Reasoning { at: at.clone(), text: "hm".into(), signature: Some("sig".into()) },
            Entry::Tool {
                at: at.clone(),
                id: "c1".into(),
                name: "read".into(),
                input: serde_json::json!({}),
                result: "x".into(),
                is_error: false,
            },
            Entry::Usage {
                at: at.clone(),
                model: "m".into(),
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
                cost_usd: Some(0.5),
            },
            Entry::Turn {
                at: at.clone(),
                messages: vec![
                    TurnMessage::User { content: "hi".into() },
                    TurnMessage::Tool {
                        tool_call_id: "c1".into(),
                        name: "read".into(),
                        content: "x".into(),
                        is_error: true,
                    },
                ],
            },
            Entry::Notice { at: at.clone(), text: "n".into() },
            Entry::Error { at: at.clone(), text: "e".into(), kind: "io".into() },
            Entry::Cleared { at: at.clone() },
            Entry::Compacted {
                at: at.clone(),
                brief: "b".into(),
                first_kept: 3,
                tokens_before: 10,
                tokens_after: 2,
                model: "m".into(),
                artifact: "a.md".into(),
                instruction: None,
            },
            Entry::Custom {
                at: at.clone(),
                name: "memoryFlush".into(),
                data: serde_json::json!({"compactionCount": 1}),
            },
        ];
        for entry in all {
            let raw = entry.to_raw().unwrap();
            assert!(raw.get().starts_with(&format!("{{\"type\":\"{}\"", entry.kind())), "{}", raw.get());
            assert_eq!(Parsed::from_raw(&raw), Parsed::Known(entry));
        }
    }

    #[test]
    fn field_names_are_camel_case() {
        let raw = Entry::Tool {
            at: "t".into(),
            id: "c".into(),
            name: "n".into(),
            input: Value::Null,
            result: "r".into(),
            is_error: true,
        }
        .to_raw()
        .unwrap();
        assert!(raw.get().contains("\"isError\":true"), "{}", raw.get());
        let raw = Entry::Compacted {
            at: "t".into(),
            brief: "b".into(),
            first_kept: 3,
            tokens_before: 1,
            tokens_after: 1,
            model: "m".into(),
            artifact: "a".into(),
            instruction: None,
        }
        .to_raw()
        .unwrap();
        assert!(raw.get().contains("\"firstKept\":3"), "{}", raw.get());
    }

    #[test]
    fn turn_messages_keep_the_schema_shape() {
        let entry = Entry::Turn {
            at: "t".into(),
            messages: vec![
                TurnMessage::User { content: "u".into() },
                TurnMessage::Assistant {
                    content: "a".into(),
                    reasoning: vec![Reasoning { text: "r".into(), signature: Some("s".into()) }],
                    tool_calls: vec![ToolCall { id: "c".into(), name: "n".into(), input: serde_json::json!({}) }],
                },
                TurnMessage::Tool { tool_call_id: "c".into(), name: "n".into(), content: "x".into(), is_error: false },
            ],
        };
        assert_eq!(
            entry.to_raw().unwrap().get(),
            concat!(
                r#"{"type":"turn","at":"t","messages":[{"role":"user","content":"u"},"#,
                r#"{"role":"assistant","content":"a","reasoning":[{"text":"r","signature":"s"}],"toolCalls":[{"id":"c","name":"n","input":{}}]},"#,
                r#"{"role":"tool","toolCallId":"c","name":"n","content":"x","isError":false}]}"#
            )
        );
    }

    #[test]
    fn unknown_types_are_other() {
        let raw = RawValue::from_string(r#"{"type":"hologram","at":"t","x":1}"#.into()).unwrap();
        match Parsed::from_raw(&raw) {
            Parsed::Other { kind, at, value } => {
                assert_eq!((kind.as_str(), at.as_str()), ("hologram", "t"));
                assert_eq!(value["x"], 1);
            }
            other => panic!("{other:?}"),
        }
    }
}
