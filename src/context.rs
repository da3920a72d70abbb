//! The context (SPEC section 3): what the model works from, rebuilt from
//! the session's log. From the newest boundary (`cleared` or `compacted`)
//! on, finished turns replay their recorded `turn.messages`, an unfinished
//! last turn is rebuilt from its entries, and a tool call without its result
//! (or a result without its call) is never sent.

use std::collections::HashSet;

use serde_json::value::RawValue;

use crate::provider::{Message, Reasoning};
use crate::store::{Entry, Parsed};

/// Wrap a compaction brief as the first message of the context.
pub fn wrap_brief(brief: &str) -> String {
    format!("<earlier-conversation>\n{brief}\n</earlier-conversation>")
}

/// The newest boundary: entries before `start` are not replayed; `brief`
/// is the wrapped brief of a `compacted` boundary.
struct Boundary {
    start: usize,
    brief: Option<String>,
}

fn last_boundary(events: &[Box<RawValue>]) -> Boundary {
    for (i, raw) in events.iter().enumerate().rev() {
        let text = raw.get();
        // Cheap test first: only boundary candidates are parsed.
        if !(text.contains("\"cleared\"") || text.contains("\"compacted\"")) {
            continue;
        }
        match Parsed::from_raw(raw) {
            Parsed::Known(Entry::Cleared { .. }) => return Boundary { start: i + 1, brief: None },
            Parsed::Known(Entry::Compacted { brief, first_kept, .. }) => {
                let start = (first_kept.max(1) as usize - 1).min(i + 1);
                return Boundary { start, brief: Some(wrap_brief(&brief)) };
            }
            _ => {}
        }
    }
    Boundary { start: 0, brief: None }
}

/// Rebuild the context messages from a session's entries.
pub fn replay(events: &[Box<RawValue>]) -> Vec<Message> {
    let boundary = last_boundary(events);
    let mut messages = Vec::new();
    if let Some(brief) = boundary.brief {
        messages.push(Message::User { content: brief });
    }
    // Messages rebuilt from entries since the last finished turn.
    let mut pending: Vec<Message> = Vec::new();
    let mut reasoning: Vec<Reasoning> = Vec::new();
    // A turn's recorded messages are used only when its first user entry is
    // inside the replayed range; otherwise the entries themselves are.
    let mut turn_began_in_range = false;
    for raw in &events[boundary.start.min(events.len())..] {
        let Parsed::Known(entry) = Parsed::from_raw(raw) else { continue };
        match entry {
            Entry::User { text, steer, .. } => {
                if !steer && pending.is_empty() {
                    turn_began_in_range = true;
                }
                pending.push(Message::User { content: text });
            }
            Entry::Reasoning { text, signature, .. } => reasoning.push(Reasoning { text, signature }),
            Entry::Assistant { text, tool_calls, .. } => pending.push(Message::Assistant {
                content: text,
                reasoning: std::mem::take(&mut reasoning),
                tool_calls,
            }),
            Entry::Tool { id, name, result, is_error, .. } => {
                pending.push(Message::Tool { tool_call_id: id, name, content: result, is_error })
            }
            Entry::Turn { messages: recorded, .. } => {
                let parsed: Option<Vec<Message>> =
                    recorded.into_iter().map(|m| serde_json::from_value(m).ok()).collect();
                match parsed {
                    Some(recorded) if turn_began_in_range => messages.extend(recorded),
                    _ => messages.append(&mut pending),
                }
                pending.clear();
                reasoning.clear();
                turn_began_in_range = false;
            }
            // Never sent: notices, errors, usage, custom data; and an older
            // boundary inside the kept range.
            _ => {}
        }
    }
    messages.append(&mut pending);
    drop_orphans(messages)
}

/// Remove tool calls that have no result and results that have no call;
/// an assistant message left with nothing is removed too.
pub fn drop_orphans(messages: Vec<Message>) -> Vec<Message> {
    let results: HashSet<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let mut called: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::Assistant { content, reasoning, mut tool_calls } => {
                tool_calls.retain(|c| results.contains(&c.id));
                called.extend(tool_calls.iter().map(|c| c.id.clone()));
                if !(content.is_empty() && tool_calls.is_empty() && reasoning.is_empty()) {
                    out.push(Message::Assistant { content, reasoning, tool_calls });
                }
            }
            Message::Tool { ref tool_call_id, .. } => {
                // Each result answers one call, once.
                if called.remove(tool_call_id) {
                    out.push(message);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The estimated size of messages, in tokens (SPEC section 5).
pub fn estimate(messages: &[Message]) -> u64 {
    messages.iter().map(Message::estimate_tokens).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ToolCall;
    use serde_json::json;

    fn raw(e: &Entry) -> Box<RawValue> {
        e.to_raw().unwrap()
    }
    fn user(t: &str) -> Entry {
        Entry::User { at: "t".into(), text: t.into(), steer: false }
    }
    fn assistant(t: &str, calls: &[&str]) -> Entry {
        Entry::Assistant {
            at: "t".into(),
            text: t.into(),
            model: "m".into(),
            tool_calls: calls
                .iter()
                .map(|id| ToolCall { id: (*id).into(), name: "read".into(), input: json!({}) })
                .collect(),
            stop_reason: "stop".into(),
        }
    }
    fn tool(id: &str) -> Entry {
        Entry::Tool {
            at: "t".into(),
            id: id.into(),
            name: "read".into(),
            input: json!({}),
            result: "r".into(),
            is_error: false,
        }
    }
    fn turn(messages: &[Message]) -> Entry {
        Entry::Turn { at: "t".into(), messages: messages.iter().map(|m| serde_json::to_value(m).unwrap()).collect() }
    }
    fn u(t: &str) -> Message {
        Message::User { content: t.into() }
    }
    fn a(t: &str) -> Message {
        Message::Assistant { content: t.into(), reasoning: vec![], tool_calls: vec![] }
    }

    #[test]
    fn finished_turns_replay_as_recorded_and_an_unfinished_one_from_entries() {
        let events: Vec<_> = [
            user("one"),
            assistant("first", &[]),
            Entry::Notice { at: "t".into(), text: "never sent".into() },
            turn(&[u("one"), a("first (as recorded)")]),
            user("two"),
            assistant("calling", &["c1"]),
            tool("c1"),
        ]
        .iter()
        .map(raw)
        .collect();
        let context = replay(&events);
        assert_eq!(context[0..2], [u("one"), a("first (as recorded)")]);
        assert_eq!(context.len(), 5);
        assert!(matches!(&context[4], Message::Tool { tool_call_id, .. } if tool_call_id == "c1"));
    }

    #[test]
    fn cleared_and_compacted_move_the_boundary() {
        let compacted = Entry::Compacted {
            at: "t".into(),
            brief: "did things".into(),
            first_kept: 3,
            tokens_before: 100,
            tokens_after: 10,
            model: "m".into(),
            artifact: "a.md".into(),
            instruction: None,
        };
        let events: Vec<_> =
            [user("old"), assistant("old", &[]), user("kept"), assistant("kept", &[]), compacted, user("new")]
                .iter()
                .map(raw)
                .collect();
        let context = replay(&events);
        assert_eq!(
            context,
            [u("<earlier-conversation>\ndid things\n</earlier-conversation>"), u("kept"), a("kept"), u("new")]
        );
        let mut events = events;
        events.push(raw(&Entry::Cleared { at: "t".into() }));
        assert!(replay(&events).is_empty());
        events.push(raw(&user("after")));
        assert_eq!(replay(&events), [u("after")]);
    }

    #[test]
    fn orphan_calls_and_results_are_never_sent() {
        let events: Vec<_> =
            [user("q"), assistant("", &["c1", "c2"]), tool("c1"), tool("zz")].iter().map(raw).collect();
        let context = replay(&events);
        assert_eq!(context.len(), 3);
        match &context[1] {
            Message::Assistant { tool_calls, .. } => assert_eq!(tool_calls.len(), 1),
            other => panic!("{other:?}"),
        }
    }
}
