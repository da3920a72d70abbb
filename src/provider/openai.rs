//! OpenAI Chat Completions, streamed: OpenAI itself, Azure deployments,
//! Ollama and every OpenAI-compatible server (vLLM, llama.cpp, LM Studio,
//! OpenRouter, LiteLLM, Groq …).
//!
//! Real servers differ: tool-call ids like `0` or `name:0`, a tool call's
//! id and name repeated in later chunks, arguments `null` or whole in one
//! chunk, `reasoning_content`, a usage chunk after `finish_reason` that still
//! has `choices`. The decoder takes all of them.

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use super::cache::{self, CacheTtl, Mark};
use super::sse::Decoder;
use super::{Delta, Message, Reasoning, Request, Response, ToolSpec, Usage};
use crate::message::{StopReason, ToolCall};

/// The request body for a streamed call, thinking included (SPEC 16).
/// Nothing is built: the returned value borrows the messages and is
/// serialised straight into the buffer sent, so a 100 MB context is never
/// copied into an intermediate `Value`.
pub fn request_body<'a>(request: &Request<'a>) -> Body<'a> {
    Body { request: *request, mark: None }
}

/// A Chat Completions body, written from the borrowed request when
/// serialised. Its shape: `model`, `messages`, `stream`, `stream_options`,
/// then `tools` and the thinking parameter when there are any.
#[derive(Debug, Clone, Copy)]
pub struct Body<'a> {
    request: Request<'a>,
    /// The cache mark, for a Claude model behind an OpenAI-compatible
    /// server only (`cache` explains the placement).
    mark: Option<Mark>,
}

impl<'a> Body<'a> {
    /// The same body with prompt-cache marks (SPEC 16) when the model is a
    /// Claude model: the system prompt and the newest two user or tool
    /// messages with text become one text part carrying the mark.
    pub fn cached(mut self, ttl: CacheTtl) -> Body<'a> {
        self.mark = ttl.mark().filter(|_| cache::is_claude(self.request.model));
        self
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = &self.request;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", r.model)?;
        map.serialize_entry("messages", &Messages(self))?;
        map.serialize_entry("stream", &true)?;
        map.serialize_entry("stream_options", &StreamOptions { include_usage: true })?;
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(r.tools))?;
        }
        // Only models known to take a thinking parameter get one: others
        // refuse the request.
        if let Some(effort) = r.thinking.reasoning_effort()
            && cache::is_openai_reasoning(r.model)
        {
            map.serialize_entry("reasoning_effort", effort)?;
        } else if cache::is_claude(r.model)
            && let Some(max_tokens) = r.thinking.budget()
        {
            map.serialize_entry("reasoning", &ReasoningBudget { max_tokens })?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ReasoningBudget {
    max_tokens: u64,
}

/// The `messages` array: the system prompt first, then the conversation.
struct Messages<'b, 'a>(&'b Body<'a>);

impl Serialize for Messages<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Body { request: r, mark } = *self.0;
        let marked = mark.map(|_| newest_with_text(r.messages)).unwrap_or_default();
        let mark_at = |i: usize| mark.filter(|_| marked.contains(&Some(i)));
        let mut seq = serializer.serialize_seq(Some(r.messages.len() + usize::from(r.system.is_some())))?;
        if let Some(system) = r.system {
            seq.serialize_element(&Said { role: "system", content: Content::new(system, mark) })?;
        }
        for (i, message) in r.messages.iter().enumerate() {
            match message {
                Message::User { content } => {
                    seq.serialize_element(&Said { role: "user", content: Content::new(content, mark_at(i)) })?
                }
                Message::Assistant { content, tool_calls, .. } => seq.serialize_element(&Answer {
                    role: "assistant",
                    // With tool calls, empty text is sent as null.
                    content: Some(content.as_str()).filter(|c| tool_calls.is_empty() || !c.is_empty()),
                    tool_calls: Calls(tool_calls),
                })?,
                Message::Tool { tool_call_id, content, .. } => seq.serialize_element(&ToolResult {
                    role: "tool",
                    tool_call_id,
                    content: Content::new(content, mark_at(i)),
                })?,
            }
        }
        seq.end()
    }
}

/// Where the newest two cache marks go: the last two user or tool messages
/// whose text is not empty (an empty text cannot carry a mark).
fn newest_with_text(messages: &[Message]) -> [Option<usize>; 2] {
    let mut found = messages.iter().enumerate().rev().filter(|(_, m)| match m {
        Message::User { content } | Message::Tool { content, .. } => !content.is_empty(),
        Message::Assistant { .. } => false,
    });
    [found.next().map(|(i, _)| i), found.next().map(|(i, _)| i)]
}

#[derive(Serialize)]
struct Said<'a> {
    role: &'static str,
    content: Content<'a>,
}

#[derive(Serialize)]
struct ToolResult<'a> {
    role: &'static str,
    tool_call_id: &'a str,
    content: Content<'a>,
}

#[derive(Serialize)]
struct Answer<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Calls::is_empty")]
    tool_calls: Calls<'a>,
}

/// A message's text: a string, or (marked for the cache) one text part
/// carrying the mark.
enum Content<'a> {
    Text(&'a str),
    Marked(&'a str, Mark),
}

impl<'a> Content<'a> {
    fn new(text: &'a str, mark: Option<Mark>) -> Content<'a> {
        match mark {
            Some(mark) if !text.is_empty() => Content::Marked(text, mark),
            _ => Content::Text(text),
        }
    }
}

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Marked(text, cache_control) => {
                serializer.collect_seq([TextPart { kind: "text", text, cache_control }])
            }
        }
    }
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: Mark,
}

struct Calls<'a>(&'a [ToolCall]);

impl Calls<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|c| Call {
            id: &c.id,
            kind: "function",
            function: Function { name: &c.name, arguments: Arguments(&c.input) },
        }))
    }
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

/// Tool input as the `arguments` string: input that never parsed is kept
/// as the text the model sent; other input is its JSON text, escaped as it
/// is written (no intermediate string).
struct Arguments<'a>(&'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(raw) => serializer.serialize_str(raw),
            other => serializer.collect_str(other),
        }
    }
}

struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A `ToolSpec` serialises as `{name, description, parameters}`.
        serializer.collect_seq(self.0.iter().map(|function| Tool { kind: "function", function }))
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolSpec,
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
    finish: Option<StopReason>,
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
            self.finish = Some(StopReason::from(reason));
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
        stop_reason: choice.get("finish_reason").and_then(Value::as_str).map_or(StopReason::Stop, StopReason::from),
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
        assert_eq!(r.stop_reason, StopReason::ToolCalls);
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
        let body = serde_json::to_value(request_body(&Request {
            model: "m",
            system: Some("s"),
            messages: &messages,
            tools: &[],
            thinking: Default::default(),
        }))
        .unwrap();
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "s"}));
        assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], "{oops");
        assert!(body.get("tools").is_none());
    }
}
