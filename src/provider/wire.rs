//! A request body written once, straight into the buffer sent: the
//! protocol modules' bodies borrow the messages and serialise on demand, and
//! the buffer is sized up front from the messages' lengths, so sending a
//! 100 MB context holds one body of about that size and no other copy
//! (no intermediate `Value`, no doubling as the buffer grows).

use serde::Serialize;
use serde_json::Value;

use super::{Message, Request};

/// `body` (which borrows `request`) serialised into a buffer sized for it.
pub fn write(request: &Request<'_>, body: &impl Serialize) -> serde_json::Result<Vec<u8>> {
    let mut buffer = Vec::with_capacity(capacity(request));
    serde_json::to_writer(&mut buffer, body)?;
    Ok(buffer)
}

/// Room for fields and punctuation around each message.
const PER_MESSAGE: usize = 96;

/// About the size of the serialised body, a little over: the text sent plus
/// room for each message's fields, plus a sixteenth for escapes (a newline
/// or a quote takes two bytes). Reasoning that is not sent is counted too;
/// an over-estimate costs address space only, as pages never written are
/// never resident. Linear in the number of messages, not in their text.
fn capacity(request: &Request<'_>) -> usize {
    let mut n = 512 + request.model.len() + request.system.map_or(0, str::len);
    for tool in request.tools {
        n += PER_MESSAGE + tool.name.len() + tool.description.len() + value_len(&tool.parameters);
    }
    for message in request.messages {
        n += PER_MESSAGE
            + match message {
                Message::User { content } => content.len(),
                Message::Assistant { content, reasoning, tool_calls } => {
                    let reasoning: usize = reasoning
                        .iter()
                        .map(|r| PER_MESSAGE + r.text.len() + r.signature.as_ref().map_or(0, String::len))
                        .sum();
                    let calls: usize =
                        tool_calls.iter().map(|c| PER_MESSAGE + c.id.len() + c.name.len() + value_len(&c.input)).sum();
                    content.len() + reasoning + calls
                }
                Message::Tool { tool_call_id, content, .. } => tool_call_id.len() + content.len(),
            };
    }
    n.saturating_add(n / 16)
}

/// About the length of a value's JSON text: its strings plus a few bytes
/// for each node.
fn value_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| value_len(v) + 1).sum::<usize>(),
        Value::Object(map) => 2 + map.iter().map(|(k, v)| k.len() + 4 + value_len(v)).sum::<usize>(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 24,
    }
}
