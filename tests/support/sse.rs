//! Builders for the streams real providers send, with their quirks (see the
//! recorded wire fixtures): OpenAI-compatible chunks with a usage chunk that
//! still has `choices`, `finish_reason` before usage, tool-call ids like
//! `0`, ids and names repeated, `arguments: null`; Anthropic events with
//! `ping`s and whitespace padding inside the JSON.

use serde_json::{Value, json};

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "gen-1", "object": "chat.completion.chunk", "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}]})
}

/// A streamed text answer in `pieces`, with usage (prompt includes cached).
pub fn openai_text(pieces: &[&str], prompt: u64, completion: u64, cached: u64) -> Vec<String> {
    let mut out = vec![data(openai_chunk(json!({"role": "assistant", "content": ""}), None))];
    for p in pieces {
        out.push(data(openai_chunk(json!({"role": "assistant", "content": p}), None)));
    }
    out.push(data(openai_chunk(json!({"role": "assistant", "content": ""}), Some("stop"))));
    out.push(openai_usage(prompt, completion, cached));
    out.push("data: [DONE]\n\n".into());
    out
}

/// The usage chunk, which (like OpenRouter's) still carries `choices`.
pub fn openai_usage(prompt: u64, completion: u64, cached: u64) -> String {
    let mut chunk = openai_chunk(json!({"role": "assistant", "content": ""}), None);
    chunk["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}});
    data(chunk)
}

/// A tool call whose arguments arrive in `arg_pieces`; the id and name are
/// repeated in the second chunk, as some servers do.
pub fn openai_tool_call(id: &str, name: &str, arg_pieces: &[&str]) -> Vec<String> {
    let mut out = vec![data(openai_chunk(json!({"role": "assistant", "content": ""}), None))];
    for (i, piece) in arg_pieces.iter().enumerate() {
        let call = if i < 2 {
            json!({"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": piece}})
        } else {
            json!({"index": 0, "function": {"arguments": piece}})
        };
        out.push(data(openai_chunk(json!({"role": "assistant", "content": null, "tool_calls": [call]}), None)));
    }
    out.push(data(openai_chunk(json!({"role": "assistant", "content": ""}), Some("tool_calls"))));
    out.push(openai_usage(50, 10, 0));
    out.push("data: [DONE]\n\n".into());
    out
}

/// Several tool calls in one answer: `(id, name, arguments)` each.
pub fn openai_tool_calls(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut out = vec![data(openai_chunk(json!({"role": "assistant", "content": ""}), None))];
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let call =
            json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
        out.push(data(openai_chunk(json!({"role": "assistant", "content": null, "tool_calls": [call]}), None)));
    }
    out.push(data(openai_chunk(json!({"role": "assistant", "content": ""}), Some("tool_calls"))));
    out.push(openai_usage(50, 10, 0));
    out.push("data: [DONE]\n\n".into());
    out
}

fn anthropic_event(name: &str, v: Value) -> String {
    // Real streams pad the JSON with spaces before the line ends.
    format!("event: {name}\ndata: {v}      \n\n")
}

fn message_start(input: u64) -> String {
    anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "mock", "stop_reason": null, "usage": {"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
    )
}

fn message_end(stop: &str, output: u64) -> Vec<String> {
    vec![
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ]
}

/// Thinking (with a signature) and then text, as Claude streams it.
pub fn anthropic_thinking_text(thinking: &[&str], signature: &str, text: &[&str]) -> Vec<String> {
    let mut out = vec![message_start(40)];
    out.push(anthropic_event("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
    out.push(anthropic_event("ping", json!({"type": "ping"})));
    for t in thinking {
        out.push(anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": t}}),
        ));
    }
    out.push(anthropic_event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": signature}})));
    out.push(anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
    out.extend(anthropic_text_block(1, text));
    out.extend(message_end("end_turn", 30));
    out
}

fn anthropic_text_block(index: u64, text: &[&str]) -> Vec<String> {
    let mut out = vec![anthropic_event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )];
    for t in text {
        out.push(anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}}),
        ));
    }
    out.push(anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    out
}

/// Plain text.
pub fn anthropic_text(text: &[&str]) -> Vec<String> {
    let mut out = vec![message_start(20)];
    out.push(anthropic_event("ping", json!({"type": "ping"})));
    out.extend(anthropic_text_block(0, text));
    out.extend(message_end("end_turn", 8));
    out
}

/// A tool use whose input JSON arrives in pieces.
pub fn anthropic_tool_use(id: &str, name: &str, json_pieces: &[&str]) -> Vec<String> {
    let mut out = vec![message_start(30)];
    out.extend(anthropic_text_block(0, &["Checking."]));
    out.push(anthropic_event("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}, "caller": {"type": "direct"}}})));
    for p in json_pieces {
        out.push(anthropic_event("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}})));
    }
    out.push(anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": 1})));
    out.extend(message_end("tool_use", 12));
    out
}
