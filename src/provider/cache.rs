//! Prompt caching and thinking levels (SPEC 16): what they mean for a
//! request. The protocol modules write the marks and parameters as they
//! serialise a body.
//!
//! Caching: Anthropic reads a cached prefix when the request marks where it
//! ends (`cache_control`), at most four marks a request. glrs marks the
//! tools (the last tool definition caches them all), the system prompt, and
//! the last block of the newest two user-role messages: the newest one
//! writes this call's prefix, the one before it is where the previous call's
//! prefix ended, so each call re-reads what the one before wrote. Anthropic
//! models behind an OpenAI-compatible server (OpenRouter) take the same
//! marks on content parts of the system and user messages.

use serde::Serialize;

/// The API's limit on cache breakpoints in one request.
pub const MAX_BREAKPOINTS: usize = 4;

// The two settings are config values (config must not depend on this
// module); what they mean for a request is here.
pub use crate::config::{CacheTtl, Thinking};

/// A cache breakpoint as sent: `{"type": "ephemeral"}`, with `"ttl": "1h"`
/// for the longer lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mark {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheTtl {
    /// The mark this setting puts on a breakpoint; none when caching is off.
    pub fn mark(self) -> Option<Mark> {
        match self {
            CacheTtl::FiveMinutes => Some(Mark { kind: "ephemeral", ttl: None }),
            CacheTtl::OneHour => Some(Mark { kind: "ephemeral", ttl: Some("1h") }),
            CacheTtl::Off => None,
        }
    }
}

impl Thinking {
    /// Anthropic's `budget_tokens` for this level.
    pub fn budget(self) -> Option<u64> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some(4_000),
            Thinking::Medium => Some(12_000),
            Thinking::High => Some(32_000),
        }
    }

    /// OpenAI's `reasoning_effort` for this level (its words, which happen
    /// to be ours); none when off.
    pub fn reasoning_effort(self) -> Option<&'static str> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some("low"),
            Thinking::Medium => Some("medium"),
            Thinking::High => Some("high"),
        }
    }
}

/// True for a model id that names a Claude model (`claude-sonnet-4-5`,
/// `anthropic/claude-3.7-sonnet` on OpenRouter).
pub fn is_claude(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    lower.starts_with("anthropic/") || lower.contains("claude")
}

/// True for OpenAI reasoning models, which take `reasoning_effort`
/// (`o3`, `o4-mini`, `gpt-5`, `openai/o3` on OpenRouter). Others refuse it.
pub fn is_openai_reasoning(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    let id = lower.strip_prefix("openai/").unwrap_or(&lower);
    id.starts_with("gpt-5") || (id.starts_with('o') && id[1..].starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::provider::{Message, Request, ToolSpec, anthropic, openai};

    fn count_marks(v: &Value) -> usize {
        match v {
            Value::Object(m) => m.iter().map(|(k, v)| usize::from(k == "cache_control") + count_marks(v)).sum(),
            Value::Array(a) => a.iter().map(count_marks).sum(),
            _ => 0,
        }
    }

    fn value(body: impl Serialize) -> Value {
        serde_json::to_value(body).unwrap()
    }

    #[test]
    fn never_more_than_four_marks_and_none_when_off() {
        let tool = |name: &str| ToolSpec { name: name.into(), description: String::new(), parameters: json!({}) };
        let tools = [tool("a"), tool("b")];
        let messages = [
            Message::User { content: "1".into() },
            Message::Assistant { content: "2".into(), reasoning: vec![], tool_calls: vec![] },
            Message::User { content: "3".into() },
            Message::Assistant { content: "4".into(), reasoning: vec![], tool_calls: vec![] },
            Message::Tool { tool_call_id: "x".into(), name: "n".into(), content: "5".into(), is_error: false },
        ];
        let request = Request {
            model: "claude-x",
            system: Some("s"),
            messages: &messages,
            tools: &tools,
            thinking: Thinking::Off,
        };
        let off = value(anthropic::request_body(&request).cached(CacheTtl::Off));
        assert_eq!(count_marks(&off), 0);
        let body = value(anthropic::request_body(&request).cached(CacheTtl::OneHour));
        assert_eq!(count_marks(&body), MAX_BREAKPOINTS);
        assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["text"], "s");
        assert!(body["messages"][4]["content"][0].get("cache_control").is_some());
        assert!(body["messages"][2]["content"][0].get("cache_control").is_some());
        assert!(body["messages"][0]["content"][0].get("cache_control").is_none());
        let gpt = Request { model: "gpt-4.1", ..request };
        assert_eq!(count_marks(&value(openai::request_body(&gpt).cached(CacheTtl::OneHour))), 0, "not a Claude model");
    }

    #[test]
    fn levels_and_model_families() {
        assert_eq!(Thinking::parse("HIGH"), Ok(Thinking::High));
        assert!(Thinking::parse("max").is_err());
        assert_eq!(Thinking::Medium.to_string(), "medium");
        for m in ["o3", "o4-mini", "gpt-5.4-nano", "openai/o1"] {
            assert!(is_openai_reasoning(m), "{m}");
        }
        for m in ["gpt-4.1", "gpt-4o", "ollama3", "omni"] {
            assert!(!is_openai_reasoning(m), "{m}");
        }
        let request = Request { model: "m", system: None, messages: &[], tools: &[], thinking: Thinking::Low };
        let body = value(anthropic::request_body(&request));
        assert_eq!(
            (&body["max_tokens"], &body["thinking"]),
            (&json!(12192), &json!({"type": "enabled", "budget_tokens": 4000}))
        );
        let body = value(openai::request_body(&Request { model: "gpt-4.1", thinking: Thinking::High, ..request }));
        assert_eq!(body.as_object().unwrap().len(), 4, "a model that refuses the parameter never gets it: {body}");
    }
}
