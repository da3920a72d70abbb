//! Anthropic Messages, streamed: text, thinking with its signature (sent
//! back so the model can continue its reasoning), tool use with input JSON
//! in pieces, usage from `message_start` and `message_delta`, `ping`s and
//! whitespace-padded events.

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use super::cache::{CacheTtl, Mark};
use super::sse::Decoder;
use super::{Delta, Message, Reasoning, Request, Response, ToolSpec, Usage, openai::parse_arguments};
use crate::message::{StopReason, ToolCall};

/// Output tokens asked for; the model stops earlier when it is done.
pub(super) const MAX_TOKENS: u64 = 8192;

/// The request body, thinking included (SPEC 16): consecutive messages of
/// one role merged (tool results and a steer share one user message), empty
/// text left out. Nothing is built: the returned value borrows the messages
/// and is serialised straight into the buffer sent, so a 100 MB context is
/// never copied into an intermediate `Value`.
pub fn request_body<'a>(request: &Request<'a>) -> Body<'a> {
    Body { request: *request, mark: None }
}

/// A Messages body, written from the borrowed request when serialised. Its
/// shape: `model`, `max_tokens`, `messages`, `stream`, then `system`,
/// `tools` and `thinking` when there are any.
#[derive(Debug, Clone, Copy)]
pub struct Body<'a> {
    request: Request<'a>,
    mark: Option<Mark>,
}

impl<'a> Body<'a> {
    /// The same body with prompt-cache marks (SPEC 16, placed as `cache`
    /// explains): the last tool, the system prompt, and the last block of
    /// the newest two user-role messages. At most four.
    pub fn cached(mut self, ttl: CacheTtl) -> Body<'a> {
        self.mark = ttl.mark();
        self
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = &self.request;
        let thinking = r.thinking.budget();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", r.model)?;
        // The answer must still fit after the thinking.
        map.serialize_entry("max_tokens", &thinking.map_or(MAX_TOKENS, |b| b.saturating_add(MAX_TOKENS)))?;
        map.serialize_entry("messages", &Messages { messages: r.messages, mark: self.mark })?;
        map.serialize_entry("stream", &true)?;
        if let Some(text) = r.system {
            match self.mark {
                None => map.serialize_entry("system", text)?,
                Some(mark) => map.serialize_entry(
                    "system",
                    &[Part { content: Content::Text { text }, cache_control: Some(mark) }],
                )?,
            }
        }
        if !r.tools.is_empty() {
            map.serialize_entry("tools", &Tools(r.tools, self.mark))?;
        }
        if let Some(budget_tokens) = thinking {
            map.serialize_entry("thinking", &Enabled { kind: "enabled", budget_tokens })?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Enabled {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

#[derive(Serialize)]
struct Part<'a> {
    #[serde(flatten)]
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Mark>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A tool call's input: an object as it is; anything else (input that
/// never parsed) as `{}`, the only input the API takes.
struct Input<'a>(&'a Value);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_object() { self.0.serialize(serializer) } else { serializer.serialize_map(Some(0))?.end() }
    }
}

/// The role of the message a message's blocks go to; none when it sends
/// nothing: blank user text, or an answer with no text, no tool call and
/// only unsigned reasoning (another provider's, which the API refuses).
fn role(message: &Message) -> Option<&'static str> {
    match message {
        Message::User { content } => (!content.trim().is_empty()).then_some("user"),
        Message::Assistant { content, reasoning, tool_calls } => {
            let sends =
                reasoning.iter().any(|r| r.signature.is_some()) || !content.trim().is_empty() || !tool_calls.is_empty();
            sends.then_some("assistant")
        }
        Message::Tool { .. } => Some("user"),
    }
}

/// Runs of consecutive messages whose blocks go to one role (messages that
/// send nothing included): one API message each, with where it starts.
fn runs(messages: &[Message]) -> impl Iterator<Item = (&'static str, usize, &[Message])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let (start, run_role) = messages.iter().enumerate().skip(at).find_map(|(i, m)| Some((i, role(m)?)))?;
        let mut end = start + 1;
        while messages.get(end).is_some_and(|m| role(m).is_none_or(|r| r == run_role)) {
            end += 1;
        }
        at = end;
        Some((run_role, start, &messages[start..end]))
    })
}

/// The messages whose block is the last of the newest two user-role API
/// messages, where the cache marks go: the newest writes this call's
/// prefix, the one before is where the previous call's ended. A user-role
/// message (user text, tool result) sends exactly one block.
fn newest_user_messages(messages: &[Message]) -> [Option<usize>; 2] {
    let mut found = [None, None];
    let mut next_role = None;
    let mut slots = found.iter_mut();
    for (i, message) in messages.iter().enumerate().rev() {
        let Some(role) = role(message) else { continue };
        if role == "user" && next_role != Some(role) {
            match slots.next() {
                Some(slot) => *slot = Some(i),
                None => break,
            }
        }
        next_role = Some(role);
    }
    found
}

/// The `messages` array, written from the conversation as it is: no list
/// of blocks is built.
struct Messages<'a> {
    messages: &'a [Message],
    mark: Option<Mark>,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let marked = self.mark.map(|_| newest_user_messages(self.messages)).unwrap_or_default();
        serializer.collect_seq(
            runs(self.messages).map(|(role, first, messages)| Merged {
                role,
                content: Run { messages, first, marked, mark: self.mark },
            }),
        )
    }
}

#[derive(Serialize)]
struct Merged<'a> {
    role: &'static str,
    content: Run<'a>,
}

/// One API message's blocks.
struct Run<'a> {
    messages: &'a [Message],
    /// The index of `messages[0]` in the conversation.
    first: usize,
    marked: [Option<usize>; 2],
    mark: Option<Mark>,
}

impl Serialize for Run<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for (i, message) in self.messages.iter().enumerate() {
            let cache_control = self.mark.filter(|_| self.marked.contains(&Some(self.first + i)));
            let part = |content| Part { content, cache_control: None };
            match message {
                Message::User { content } => {
                    if !content.trim().is_empty() {
                        seq.serialize_element(&Part { content: Content::Text { text: content }, cache_control })?;
                    }
                }
                Message::Assistant { content, reasoning, tool_calls } => {
                    for r in reasoning {
                        if let Some(signature) = &r.signature {
                            seq.serialize_element(&part(Content::Thinking { thinking: &r.text, signature }))?;
                        }
                    }
                    if !content.trim().is_empty() {
                        seq.serialize_element(&part(Content::Text { text: content }))?;
                    }
                    for call in tool_calls {
                        let input = Input(&call.input);
                        seq.serialize_element(&part(Content::ToolUse { id: &call.id, name: &call.name, input }))?;
                    }
                }
                Message::Tool { tool_call_id, content, is_error, .. } => {
                    let content = Content::ToolResult { tool_use_id: tool_call_id, content, is_error: *is_error };
                    seq.serialize_element(&Part { content, cache_control })?;
                }
            }
        }
        seq.end()
    }
}

/// The tools; the last carries the cache mark, which caches them all.
struct Tools<'a>(&'a [ToolSpec], Option<Mark>);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let last = self.0.len().saturating_sub(1);
        serializer.collect_seq(self.0.iter().enumerate().map(|(i, t)| Tool {
            name: &t.name,
            description: &t.description,
            input_schema: &t.parameters,
            cache_control: self.1.filter(|_| i == last),
        }))
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Mark>,
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
    stop: Option<StopReason>,
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
                    self.stop = Some(StopReason::from(reason));
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
        stop_reason: body.get("stop_reason").and_then(Value::as_str).map_or(StopReason::EndTurn, StopReason::from),
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
        let body = serde_json::to_value(request_body(&Request {
            model: "m",
            system: None,
            messages: &messages,
            tools: &[],
            thinking: Default::default(),
        }))
        .unwrap();
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"], json!([{"type": "tool_use", "id": "t1", "name": "n", "input": {}}]));
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][1], json!({"type": "text", "text": "steer"}));
    }
}
