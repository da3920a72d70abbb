//! Test builds only: the request bodies as glrs built them before they
//! were serialised straight from the borrowed messages: a `serde_json::Value`
//! of the whole context built with `json!` (one more copy of every text),
//! then thinking and cache marks applied to it. Kept verbatim as the
//! reference the new serialisers must match byte for byte (`wire_tests`),
//! and to show the copy the memory guard there catches.

use serde_json::{Value, json};

use super::anthropic::MAX_TOKENS;
use super::cache::{CacheTtl, MAX_BREAKPOINTS, Thinking, is_claude, is_openai_reasoning};
use super::{Message, Protocol, Request, ToolSpec};

/// The whole body as the old `Provider::request_body` built it.
pub fn body(protocol: Protocol, request: &Request<'_>, ttl: CacheTtl) -> Value {
    match protocol {
        Protocol::OpenAi => {
            let mut body = openai_body(request);
            think_openai(&mut body, request.model, request.thinking);
            if is_claude(request.model) {
                mark_openai_compatible(&mut body, ttl);
            }
            body
        }
        Protocol::Anthropic => {
            let mut body = anthropic_body(request);
            think_anthropic(&mut body, request.thinking);
            mark_anthropic(&mut body, ttl);
            body
        }
    }
}

/// The mark as a `Value` (its shape is pinned by `wire_tests`' literal bodies).
fn mark(ttl: CacheTtl) -> Option<Value> {
    ttl.mark().map(|mark| json!(mark))
}

/// The request body for a streamed call.
pub fn openai_body(request: &Request<'_>) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages {
        messages.push(match message {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls, .. } => {
                let mut m = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    if content.is_empty() {
                        m["content"] = Value::Null;
                    }
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_text(&c.input)}}))
                        .collect();
                }
                m
            }
            Message::Tool { tool_call_id, content, .. } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})
            }
        });
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request.tools.iter().map(tool_json).collect();
    }
    body
}

fn tool_json(tool: &ToolSpec) -> Value {
    json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}})
}

/// Tool input as the `arguments` string: input that never parsed is kept
/// as the text the model sent.
fn arguments_text(input: &Value) -> String {
    match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// The request body: consecutive messages of one role merged (tool results
/// and a steer share one user message), empty text left out.
pub fn anthropic_body(request: &Request<'_>) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match messages.last_mut() {
        Some((last, blocks)) if *last == role => blocks.push(block),
        _ => messages.push((role, vec![block])),
    };
    for message in request.messages {
        match message {
            Message::User { content } => {
                if !content.trim().is_empty() {
                    push("user", json!({"type": "text", "text": content}));
                }
            }
            Message::Assistant { content, reasoning, tool_calls } => {
                for r in reasoning {
                    if let Some(signature) = &r.signature {
                        push("assistant", json!({"type": "thinking", "thinking": r.text, "signature": signature}));
                    }
                }
                if !content.trim().is_empty() {
                    push("assistant", json!({"type": "text", "text": content}));
                }
                for call in tool_calls {
                    let input = if call.input.is_object() { call.input.clone() } else { json!({}) };
                    push("assistant", json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
            }
            Message::Tool { tool_call_id, content, is_error, .. } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                push("user", block);
            }
        }
    }
    let messages: Vec<Value> =
        messages.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
    let mut body = json!({"model": request.model, "max_tokens": MAX_TOKENS, "messages": messages, "stream": true});
    if let Some(system) = request.system {
        body["system"] = json!(system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

/// Mark up to four breakpoints on an Anthropic Messages body.
pub fn mark_anthropic(body: &mut Value, ttl: CacheTtl) {
    let Some(mark) = mark(ttl) else { return };
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
    let Some(mark) = mark(ttl) else { return };
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
        body["reasoning_effort"] = json!(level.reasoning_effort());
    } else if is_claude(model)
        && let Some(budget) = level.budget()
    {
        body["reasoning"] = json!({"max_tokens": budget});
    }
}
