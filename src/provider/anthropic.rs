//! Anthropic Messages, streamed: text, thinking with its signature (sent
//! back so the model can continue its reasoning), tool use with input JSON
//! in pieces, usage from `message_start` and `message_delta`, `ping`s and
//! whitespace-padded events.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::sse::Decoder;
use super::{Delta, Message, Reasoning, Request, Response, Usage, openai::parse_arguments};
use crate::message::ToolCall;

/// Output tokens asked for; the model stops earlier when it is done.
const MAX_TOKENS: u64 = 8192;

/// The request body: consecutive messages of one role merged (tool results
/// and a steer share one user message), empty text left out.
pub fn request_body(request: &Request<'_>) -> Value {
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

#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Thinking { text: String, signature: Option<String> },
    Tool { id: String, name: String, json: String },
    Other,
}

fn usage_into(usage: &mut Usage, u: &Value) {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    // message_delta repeats some counts; the latest non-zero value wins.
    if let Some(n) = get("input_tokens").filter(|n| *n > 0) {
        usage.input_tokens = n;
    }
    if let Some(n) = get("output_tokens").filter(|n| *n > 0) {
        usage.output_tokens = n;
    }
    if let Some(n) = get("cache_read_input_tokens").filter(|n| *n > 0) {
        usage.cache_read_tokens = n;
    }
    if let Some(n) = get("cache_creation_input_tokens").filter(|n| *n > 0) {
        usage.cache_write_tokens = n;
    }
}

/// Events of a streamed answer, assembled.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    /// Blocks in the order the stream opened them.
    blocks: Vec<Block>,
    /// The stream's block index → position in `blocks`. Indexes are the
    /// server's to choose (any u64): only those it opened exist, so memory
    /// follows what arrived, never the size of an index.
    opened: HashMap<u64, usize>,
    stop: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamDecoder {
    /// Open (or reopen) the block at stream index `index`.
    fn open(&mut self, index: u64, block: Block) {
        match self.opened.get(&index) {
            Some(&at) => self.blocks[at] = block,
            None => {
                self.opened.insert(index, self.blocks.len());
                self.blocks.push(block);
            }
        }
    }

    /// The block at stream index `index`, if the stream opened it.
    fn block(&mut self, index: u64) -> Option<&mut Block> {
        let at = *self.opened.get(&index)?;
        self.blocks.get_mut(at)
    }
}

impl Decoder for StreamDecoder {
    fn event(&mut self, _name: &str, data: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<bool, String> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| format!("an event is not JSON ({e})"))?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    usage_into(self.usage.get_or_insert_with(Usage::default), u);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text(text("text")),
                    Some("thinking") => Block::Thinking { text: text("thinking"), signature: None },
                    Some("tool_use") => Block::Tool { id: text("id"), name: text("name"), json: String::new() },
                    _ => Block::Other,
                };
                self.open(index, block);
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                // A delta for a block the stream never opened is dropped.
                let Some(block) = self.block(index) else { return Ok(false) };
                match (delta.get("type").and_then(Value::as_str), block) {
                    (Some("text_delta"), Block::Text(t)) => {
                        let piece = text("text");
                        t.push_str(&piece);
                        if !piece.is_empty() {
                            on_delta(Delta::Text(piece));
                        }
                    }
                    (Some("thinking_delta"), Block::Thinking { text: t, .. }) => {
                        let piece = text("thinking");
                        t.push_str(&piece);
                        if !piece.is_empty() {
                            on_delta(Delta::Reasoning(piece));
                        }
                    }
                    (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                        signature.get_or_insert_with(String::new).push_str(&text("signature"));
                    }
                    (Some("input_json_delta"), Block::Tool { json, .. }) => json.push_str(&text("partial_json")),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(reason.to_string());
                }
                if let Some(u) = event.get("usage") {
                    usage_into(self.usage.get_or_insert_with(Usage::default), u);
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => {
                let message = event.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                return Err(format!("the server reported an error: {message}"));
            }
            _ => {} // ping, content_block_stop, and events added later
        }
        Ok(false)
    }

    fn complete(&self) -> bool {
        self.done || self.stop.is_some()
    }

    fn take_response(&mut self) -> Response {
        let mut response =
            Response { usage: self.usage, stop_reason: self.stop.clone().unwrap_or_default(), ..Response::default() };
        // Moved, not copied: a 100 MB answer is held once.
        for block in std::mem::take(&mut self.blocks) {
            match block {
                Block::Text(t) if response.text.is_empty() => response.text = t,
                Block::Text(t) => response.text.push_str(&t),
                Block::Thinking { text, signature } => response.reasoning.push(Reasoning { text, signature }),
                Block::Tool { id, name, json } => {
                    response.tool_calls.push(ToolCall { id, name, input: parse_arguments(&json) })
                }
                Block::Other => {}
            }
        }
        self.opened.clear();
        response
    }
}

/// A whole (non-streamed) answer.
pub fn parse_body(body: &Value) -> Result<Response, String> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        let message = body.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
        return Err(format!("the server reported an error: {message}"));
    }
    let mut response = Response {
        stop_reason: body.get("stop_reason").and_then(Value::as_str).unwrap_or("end_turn").to_string(),
        ..Response::default()
    };
    if let Some(u) = body.get("usage") {
        let mut usage = Usage::default();
        usage_into(&mut usage, u);
        response.usage = Some(usage);
    }
    for block in body.get("content").and_then(Value::as_array).into_iter().flatten() {
        let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match block.get("type").and_then(Value::as_str) {
            Some("text") => response.text.push_str(&text("text")),
            Some("thinking") => response.reasoning.push(Reasoning {
                text: text("thinking"),
                signature: block.get("signature").and_then(Value::as_str).map(str::to_string),
            }),
            Some("tool_use") => response.tool_calls.push(ToolCall {
                id: text("id"),
                name: text("name"),
                input: block.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_events_pings_and_errors() {
        let mut d = StreamDecoder::default();
        let text = std::sync::Mutex::new(String::new());
        let mut on = |delta: Delta| {
            if let Delta::Text(t) = delta {
                text.lock().unwrap().push_str(&t)
            }
        };
        for e in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":46,"cache_creation_input_tokens":3,"cache_read_input_tokens":0,"output_tokens":3}}}   "#,
            r#"{"type": "ping"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}         }"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Pou"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ch"}}"#,
        ] {
            assert!(!d.event("x", e, &mut on).unwrap());
        }
        assert_eq!(*text.lock().unwrap(), "Pouch");
        assert!(!d.complete());
        let err =
            d.event("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, &mut on);
        assert_eq!(err.unwrap_err(), "the server reported an error: Overloaded");
        let r = d.take_response();
        assert_eq!(r.text, "Pouch");
        assert_eq!(r.usage.unwrap().cache_write_tokens, 3);
    }

    #[test]
    fn block_indexes_are_bounded_by_what_the_stream_opened() {
        let mut d = StreamDecoder::default();
        let mut on = |_: Delta| {};
        for index in [u64::MAX, 1 << 40, 30_000_000] {
            let start = format!(
                r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
            );
            let delta = format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"a"}}}}"#
            );
            d.event("x", &start, &mut on).unwrap();
            d.event("x", &delta, &mut on).unwrap();
        }
        // Never opened: ignored, nothing allocated for it.
        let stray = r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"zz"}}"#;
        d.event("x", stray, &mut on).unwrap();
        assert_eq!(d.blocks.len(), 3);
        assert_eq!(d.take_response().text, "aaa");
    }

    #[test]
    fn consecutive_roles_merge_and_unsigned_thinking_is_not_sent() {
        let messages = [
            Message::User { content: "q".into() },
            Message::Assistant {
                content: Default::default(),
                reasoning: vec![Reasoning { text: "from another provider".into(), signature: None }],
                tool_calls: vec![ToolCall { id: "t1".into(), name: "n".into(), input: json!({}) }],
            },
            Message::Tool { tool_call_id: "t1".into(), name: "n".into(), content: "r".into(), is_error: false },
            Message::User { content: "steer".into() },
        ];
        let body = request_body(&Request {
            model: "m",
            system: None,
            messages: &messages,
            tools: &[],
            thinking: Default::default(),
        });
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"], json!([{"type": "tool_use", "id": "t1", "name": "n", "input": {}}]));
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][1], json!({"type": "text", "text": "steer"}));
    }
}
