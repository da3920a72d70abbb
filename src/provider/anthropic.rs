//! Anthropic Messages, streamed: text, thinking with its signature (sent
//! back so the model can continue its reasoning), tool use with input JSON
//! in pieces, usage from `message_start` and `message_delta`, `ping`s and
//! whitespace-padded events.

use serde_json::{Value, json};

use super::sse::Decoder;
use super::{Delta, Message, Reasoning, Request, Response, Usage, openai::parse_arguments};
use crate::store::ToolCall;

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
    blocks: Vec<Block>,
    stop: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamDecoder {
    fn block(&mut self, index: usize) -> &mut Block {
        if self.blocks.len() <= index {
            self.blocks.resize(index + 1, Block::Other);
        }
        &mut self.blocks[index]
    }
}

impl Decoder for StreamDecoder {
    fn event(&mut self, _name: &str, data: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<bool, String> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| format!("an event is not JSON ({e})"))?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    usage_into(self.usage.get_or_insert_with(Usage::default), u);
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                *self.block(index) = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text(text("text")),
                    Some("thinking") => Block::Thinking { text: text("thinking"), signature: None },
                    Some("tool_use") => Block::Tool { id: text("id"), name: text("name"), json: String::new() },
                    _ => Block::Other,
                };
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                match (delta.get("type").and_then(Value::as_str), self.block(index)) {
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

    fn response(&self) -> Response {
        let mut response =
            Response { usage: self.usage, stop_reason: self.stop.clone().unwrap_or_default(), ..Response::default() };
        for block in &self.blocks {
            match block {
                Block::Text(t) => response.text.push_str(t),
                Block::Thinking { text, signature } => {
                    response.reasoning.push(Reasoning { text: text.clone(), signature: signature.clone() })
                }
                Block::Tool { id, name, json } => response.tool_calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: parse_arguments(json),
                }),
                Block::Other => {}
            }
        }
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
        let r = d.response();
        assert_eq!(r.text, "Pouch");
        assert_eq!(r.usage.unwrap().cache_write_tokens, 3);
    }

    #[test]
    fn consecutive_roles_merge_and_unsigned_thinking_is_not_sent() {
        let messages = [
            Message::User { content: "q".into() },
            Message::Assistant {
                content: String::new(),
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
