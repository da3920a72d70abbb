//! Prompt caching and thinking levels (SPEC 16), applied to a request body
//! once the protocol module has built it.
//!
//! Caching: Anthropic reads a cached prefix when the request marks where it
//! ends (`cache_control`), at most four marks a request. glrs marks the
//! tools (the last tool definition caches them all), the system prompt, and
//! the last block of the newest two user-role messages: the newest one
//! writes this call's prefix, the one before it is where the previous call's
//! prefix ended, so each call re-reads what the one before wrote. Anthropic
//! models behind an OpenAI-compatible server (OpenRouter) take the same
//! marks on content parts of the system and user messages.

use serde_json::{Value, json};

/// The API's limit on cache breakpoints in one request.
pub const MAX_BREAKPOINTS: usize = 4;

// The two settings are config values (config must not depend on this
// module); what they mean for a request is here.
pub use crate::config::{CacheTtl, Thinking};

impl CacheTtl {
    fn mark(self) -> Option<Value> {
        match self {
            CacheTtl::FiveMinutes => Some(json!({"type": "ephemeral"})),
            CacheTtl::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
            CacheTtl::Off => None,
        }
    }
}

impl Thinking {
    /// The levels' names, for arguments and completion.
    pub const NAMES: &[&str] = &["off", "low", "medium", "high"];

    /// Read a level's name (any case).
    pub fn parse(text: &str) -> Result<Thinking, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Thinking::Off),
            "low" => Ok(Thinking::Low),
            "medium" => Ok(Thinking::Medium),
            "high" => Ok(Thinking::High),
            other => Err(format!("unknown thinking level {other:?}: use off, low, medium or high")),
        }
    }

    /// The level's name.
    pub fn name(self) -> &'static str {
        Thinking::NAMES[self as usize]
    }

    /// Anthropic's `budget_tokens` for this level.
    pub fn budget(self) -> Option<u64> {
        match self {
            Thinking::Off => None,
            Thinking::Low => Some(4_000),
            Thinking::Medium => Some(12_000),
            Thinking::High => Some(32_000),
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

/// Mark up to four breakpoints on an Anthropic Messages body.
pub fn mark_anthropic(body: &mut Value, ttl: CacheTtl) {
    let Some(mark) = ttl.mark() else { return };
    let mut used = 0;
    if let Some(last) = body.get_mut("tools").and_then(Value::as_array_mut).and_then(|t| t.last_mut()) {
        last["cache_control"] = mark.clone();
        used += 1;
    }
    if let Some(system) = body.get("system").and_then(Value::as_str).map(str::to_string) {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": mark.clone()}]);
        used += 1;
    }
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else { return };
    let budget = (MAX_BREAKPOINTS - used).min(2);
    let mut marked = 0;
    for message in messages.iter_mut().rev() {
        if marked == budget {
            break;
        }
        if message["role"] != "user" {
            continue;
        }
        if let Some(block) = message.get_mut("content").and_then(Value::as_array_mut).and_then(|c| c.last_mut()) {
            block["cache_control"] = mark.clone();
            marked += 1;
        }
    }
}

/// The same marks on an OpenAI-format body for a Claude model behind an
/// OpenAI-compatible server: string contents of the system message and the
/// newest two user messages become one text part carrying the mark.
pub fn mark_openai_compatible(body: &mut Value, ttl: CacheTtl) {
    let Some(mark) = ttl.mark() else { return };
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else { return };
    let part = |message: &mut Value| {
        let Some(text) = message.get("content").and_then(Value::as_str).map(str::to_string) else { return false };
        if text.is_empty() {
            return false;
        }
        message["content"] = json!([{"type": "text", "text": text, "cache_control": mark.clone()}]);
        true
    };
    let mut used = 0;
    if let Some(system) = messages.first_mut().filter(|m| m["role"] == "system")
        && part(system)
    {
        used += 1;
    }
    let budget = (MAX_BREAKPOINTS - used).min(2);
    let mut marked = 0;
    for message in messages.iter_mut().rev() {
        if marked == budget {
            break;
        }
        if (message["role"] == "user" || message["role"] == "tool") && part(message) {
            marked += 1;
        }
    }
}

/// Thinking on an Anthropic body: `thinking` with the level's budget, and
/// `max_tokens` raised so the answer still fits after the thinking.
pub fn think_anthropic(body: &mut Value, level: Thinking) {
    let Some(budget) = level.budget() else { return };
    let answer = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(8192);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    body["max_tokens"] = json!(budget.saturating_add(answer));
}

/// Thinking on an OpenAI-format body: `reasoning_effort` for OpenAI
/// reasoning models; a Claude model behind OpenRouter gets its unified
/// `reasoning.max_tokens`. Other models take no thinking parameter.
pub fn think_openai(body: &mut Value, model: &str, level: Thinking) {
    if level == Thinking::Off {
        return;
    }
    if is_openai_reasoning(model) {
        body["reasoning_effort"] = json!(level.name());
    } else if is_claude(model)
        && let Some(budget) = level.budget()
    {
        body["reasoning"] = json!({"max_tokens": budget});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_marks(v: &Value) -> usize {
        match v {
            Value::Object(m) => m.iter().map(|(k, v)| usize::from(k == "cache_control") + count_marks(v)).sum(),
            Value::Array(a) => a.iter().map(count_marks).sum(),
            _ => 0,
        }
    }

    #[test]
    fn never_more_than_four_marks_and_none_when_off() {
        let mut body = json!({
            "system": "s",
            "tools": [{"name": "a"}, {"name": "b"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "1"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "2"}]},
                {"role": "user", "content": [{"type": "text", "text": "3"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "4"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "5"}]},
            ],
        });
        let mut off = body.clone();
        mark_anthropic(&mut off, CacheTtl::Off);
        assert_eq!(count_marks(&off), 0);
        mark_anthropic(&mut body, CacheTtl::OneHour);
        assert_eq!(count_marks(&body), 4);
        assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["system"][0]["text"], "s");
        assert!(body["messages"][4]["content"][0].get("cache_control").is_some());
        assert!(body["messages"][2]["content"][0].get("cache_control").is_some());
        assert!(body["messages"][0]["content"][0].get("cache_control").is_none());
    }

    #[test]
    fn levels_and_model_families() {
        assert_eq!(Thinking::parse("HIGH"), Ok(Thinking::High));
        assert!(Thinking::parse("max").is_err());
        assert_eq!(Thinking::Medium.name(), "medium");
        for m in ["o3", "o4-mini", "gpt-5.4-nano", "openai/o1"] {
            assert!(is_openai_reasoning(m), "{m}");
        }
        for m in ["gpt-4.1", "gpt-4o", "ollama3", "omni"] {
            assert!(!is_openai_reasoning(m), "{m}");
        }
        let mut body = json!({"max_tokens": 8192});
        think_anthropic(&mut body, Thinking::Low);
        assert_eq!(body, json!({"max_tokens": 12192, "thinking": {"type": "enabled", "budget_tokens": 4000}}));
        let mut body = json!({});
        think_openai(&mut body, "gpt-4.1", Thinking::High);
        assert_eq!(body, json!({}), "a model that refuses the parameter never gets it");
    }
}
