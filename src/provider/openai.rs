//! OpenAI Chat Completions, streamed: OpenAI itself, Azure deployments,
//! Ollama and every OpenAI-compatible server (vLLM, llama.cpp, LM Studio,
//! OpenRouter, LiteLLM, Groq …).
//!
//! Real servers differ: tool-call ids like `0` or `name:0`, a tool call's
//! id and name repeated in later chunks, arguments `null` or whole in one
//! chunk, `reasoning_content`, a usage chunk after `finish_reason` that still
//! has `choices`. The decoder takes all of them.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::sse::Decoder;
use super::{Delta, Message, Reasoning, Request, Response, ToolSpec, Usage};
use crate::message::ToolCall;

/// The request body for a streamed call.
pub fn request_body(request: &Request<'_>) -> Value {
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

/// Parse a tool call's arguments; empty is `{}`, invalid JSON stays text.
pub fn parse_arguments(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

fn usage_of(u: &Value) -> Option<Usage> {
    let prompt = u.get("prompt_tokens")?.as_u64().unwrap_or(0);
    let cached = u.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        cost_usd: u.get("cost").and_then(Value::as_f64),
    })
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Chunks of a streamed answer, assembled.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    /// Lookups into `calls`, so a stream of many calls stays linear.
    by_index: HashMap<u64, usize>,
    by_id: HashMap<String, usize>,
    finish: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamDecoder {
    fn call_slot(&mut self, index: Option<u64>, id: Option<&str>) -> &mut PartialCall {
        let found = match (index, id) {
            (Some(i), _) => self.by_index.get(&i).copied(),
            (None, Some(id)) if !id.is_empty() => self.by_id.get(id).copied(),
            // No index and no id: a continuation of the newest call.
            (None, _) => self.calls.len().checked_sub(1),
        };
        let at = match found {
            Some(at) => at,
            None => {
                let at = self.calls.len();
                self.calls.push(PartialCall::default());
                if let Some(i) = index {
                    self.by_index.insert(i, at);
                }
                at
            }
        };
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            self.by_id.entry(id.to_string()).or_insert(at);
        }
        &mut self.calls[at]
    }

    fn take_choice(&mut self, choice: &Value, on_delta: &mut (dyn FnMut(Delta) + Send)) {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            on_delta(Delta::Text(text.to_string()));
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.reasoning.push_str(text);
                on_delta(Delta::Reasoning(text.to_string()));
            }
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let id = call.get("id").and_then(Value::as_str);
            let slot = self.call_slot(call.get("index").and_then(Value::as_u64), id);
            if let Some(id) = id.filter(|id| !id.is_empty())
                && slot.id.is_empty()
            {
                slot.id = id.to_string();
            }
            let function = call.get("function").unwrap_or(&Value::Null);
            // Some servers repeat the name in every chunk: the first wins.
            if let Some(name) = function.get("name").and_then(Value::as_str).filter(|n| !n.is_empty())
                && slot.name.is_empty()
            {
                slot.name = name.to_string();
            }
            if let Some(args) = function.get("arguments").and_then(Value::as_str) {
                slot.arguments.push_str(args);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
    }
}

impl Decoder for StreamDecoder {
    fn event(&mut self, _name: &str, data: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<bool, String> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| format!("a chunk is not JSON ({e})"))?;
        if let Some(error) = chunk.get("error") {
            let message =
                error.get("message").and_then(Value::as_str).map_or_else(|| error.to_string(), str::to_string);
            return Err(format!("the server reported an error: {message}"));
        }
        if let Some(usage) = chunk.get("usage").and_then(usage_of) {
            self.usage = Some(usage);
        }
        for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
            self.take_choice(choice, on_delta);
        }
        Ok(false)
    }

    fn complete(&self) -> bool {
        self.done || self.finish.is_some()
    }

    fn take_response(&mut self) -> Response {
        let tool_calls = std::mem::take(&mut self.calls)
            .into_iter()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() { format!("call_{i}") } else { c.id },
                name: c.name,
                input: parse_arguments(&c.arguments),
            })
            .collect();
        self.by_index.clear();
        self.by_id.clear();
        // Moved, not copied: a 100 MB answer is held once.
        let reasoning = std::mem::take(&mut self.reasoning);
        let reasoning =
            if reasoning.is_empty() { Vec::new() } else { vec![Reasoning { text: reasoning, signature: None }] };
        Response {
            text: std::mem::take(&mut self.text),
            reasoning,
            tool_calls,
            stop_reason: self.finish.clone().unwrap_or_default(),
            usage: self.usage,
        }
    }
}

/// A whole (non-streamed) answer.
pub fn parse_body(body: &Value) -> Result<Response, String> {
    if let Some(error) = body.get("error") {
        return Err(format!("the server reported an error: {error}"));
    }
    let choice = body.pointer("/choices/0").ok_or("the answer has no choices")?;
    let message = choice.get("message").unwrap_or(&Value::Null);
    let text = message.get("content").and_then(Value::as_str).unwrap_or("").to_string();
    let reasoning = message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(|t| vec![Reasoning { text: t.to_string(), signature: None }])
        .unwrap_or_default();
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{i}"), str::to_string),
            name: c.pointer("/function/name").and_then(Value::as_str).unwrap_or("").to_string(),
            input: parse_arguments(c.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("")),
        })
        .collect();
    Ok(Response {
        text,
        reasoning,
        tool_calls,
        stop_reason: choice.get("finish_reason").and_then(Value::as_str).unwrap_or("stop").to_string(),
        usage: body.get("usage").and_then(usage_of),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(events: &[&str]) -> (StreamDecoder, String) {
        let mut decoder = StreamDecoder::default();
        let mut shown = String::new();
        let mut on = |d: Delta| {
            if let Delta::Text(t) = d {
                shown.push_str(&t)
            }
        };
        for e in events {
            if decoder.event("message", e, &mut on).unwrap() {
                break;
            }
        }
        (decoder, shown)
    }

    #[test]
    fn ids_names_and_arguments_arrive_in_every_shape() {
        // Id `name:0`, then a continuation with neither id nor index, then
        // a call whose arguments are null, then usage after finish_reason.
        let (mut decoder, _) = feed(&[
            r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"llm_version:0","type":"function","function":{"name":"llm_version"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"0","type":"function","function":{"name":"other","arguments":null}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}],"usage":{"prompt_tokens":57,"completion_tokens":17,"cost":0.00007}}"#,
            "[DONE]",
        ]);
        assert!(decoder.complete());
        let r = decoder.take_response();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!((r.tool_calls[0].id.as_str(), r.tool_calls[0].input.clone()), ("llm_version:0", json!({"a": 1})));
        assert_eq!((r.tool_calls[1].id.as_str(), r.tool_calls[1].input.clone()), ("0", json!({})));
        assert_eq!(r.stop_reason, "tool_calls");
        assert_eq!(r.usage.unwrap().cost_usd, Some(0.00007));
    }

    #[test]
    fn reasoning_content_is_reasoning_and_errors_end_the_stream() {
        let (mut decoder, shown) = feed(&[
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
        ]);
        assert_eq!(shown, "hi");
        assert!(!decoder.complete(), "no finish_reason yet: a cut stream");
        assert_eq!(decoder.take_response().reasoning[0].text, "hmm");
        let mut d = StreamDecoder::default();
        let err = d.event("message", r#"{"error":{"message":"upstream died"}}"#, &mut |_| {}).unwrap_err();
        assert!(err.contains("upstream died"));
    }

    #[test]
    fn request_bodies_keep_invalid_arguments_as_sent() {
        let messages = [Message::Assistant {
            content: Default::default(),
            reasoning: vec![],
            tool_calls: vec![ToolCall { id: "c".into(), name: "n".into(), input: Value::String("{oops".into()) }],
        }];
        let body = request_body(&Request {
            model: "m",
            system: Some("s"),
            messages: &messages,
            tools: &[],
            thinking: Default::default(),
        });
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "s"}));
        assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], "{oops");
        assert!(body.get("tools").is_none());
    }
}
