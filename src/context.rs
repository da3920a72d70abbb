//! The context (SPEC section 3): what the model works from, rebuilt from
//! the session's log. From the newest boundary (`cleared` or `compacted`)
//! on, finished turns replay their recorded `turn.messages`, an unfinished
//! last turn is rebuilt from its entries, and a tool call without its result
//! (or a result without its call) is never sent.

use std::collections::HashMap;

use crate::message::{Message, Reasoning};
use crate::store::{Entry, EntryText, Parsed};

/// Wrap a compaction brief as the first message of the context.
pub fn wrap_brief(brief: &str) -> String {
    format!("<earlier-conversation>\n{brief}\n</earlier-conversation>")
}

/// The newest replay boundary (SPEC 3): entries before `start` are not
/// replayed; `brief` is the brief of a `compacted` boundary (unwrapped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    /// The index of the first entry after the boundary.
    pub start: usize,
    /// The brief the boundary holds, for a `compacted` one.
    pub brief: Option<String>,
}

/// Find the newest `cleared` or `compacted` entry. Only candidates whose
/// text names one of those types are parsed.
pub fn last_boundary<E: EntryText>(events: &[E]) -> Boundary {
    last_boundary_in(events.iter().enumerate().map(|(i, e)| (i, e.text())))
}

/// [`last_boundary`] over some of a session's entries, each with its index
/// in the session (those a cheap scan picked out, newest last): `start` is
/// an index in the session.
pub fn last_boundary_in<'a>(entries: impl DoubleEndedIterator<Item = (usize, &'a str)>) -> Boundary {
    for (i, text) in entries.rev() {
        let candidate = match crate::store::entry::quick_type(text) {
            Some(kind) => kind == "cleared" || kind == "compacted",
            None => text.contains("\"cleared\"") || text.contains("\"compacted\""),
        };
        if !candidate {
            continue;
        }
        match Parsed::from_text(text) {
            Parsed::Known(Entry::Cleared { .. }) => return Boundary { start: i + 1, brief: None },
            Parsed::Known(Entry::Compacted { brief, first_kept, .. }) => {
                // `firstKept` points before the brief itself.
                let start = (first_kept.max(1) as usize - 1).min(i);
                return Boundary { start, brief: Some(brief) };
            }
            _ => {}
        }
    }
    Boundary { start: 0, brief: None }
}

use crate::store::entry::quick_type;

/// True when a raw `user` entry is a steer. Inside JSON strings quotes are
/// escaped, so this field text cannot come from a message's words.
fn is_steer(raw: &str) -> bool {
    raw.contains("\"steer\":true")
}

/// Messages rebuilt from the entries of an unfinished (or foreign) turn.
fn rebuild(raws: &[&str], out: &mut Vec<Message>) {
    let mut reasoning: Vec<Reasoning> = Vec::new();
    for raw in raws {
        match Parsed::from_text(raw) {
            Parsed::Known(Entry::User { text, .. }) => out.push(Message::User { content: text }),
            Parsed::Known(Entry::Reasoning { text, signature, .. }) => reasoning.push(Reasoning { text, signature }),
            Parsed::Known(Entry::Assistant { text, tool_calls, .. }) => {
                out.push(Message::Assistant { content: text, reasoning: std::mem::take(&mut reasoning), tool_calls })
            }
            Parsed::Known(Entry::Tool { id, name, result, is_error, .. }) => {
                out.push(Message::Tool { tool_call_id: id, name, content: result, is_error })
            }
            _ => {}
        }
    }
}

/// Rebuild the context messages from a session's entries.
///
/// Only what is sent is parsed: entries of a finished turn are replaced by
/// its recorded `turn.messages` without being read, and entries that are
/// never sent (usage, notices, errors, custom data) are skipped by their
/// first bytes, so replaying a 100 MB session stays quick.
pub fn replay<E: EntryText>(events: &[E]) -> Vec<Message> {
    replay_from(events, 0)
}

/// [`replay`] of a session's entries from index `first` on (the others were
/// not read): `events` must reach back to the last boundary's start.
pub fn replay_from<E: EntryText>(events: &[E], first: usize) -> Vec<Message> {
    drop_orphans(replay_raw(events, first))
}

/// [`replay_from`] for a writer in the middle of a step (issue 24): the
/// tool calls of the last assistant message, with nothing after them, are
/// kept, since their results are on their way (the file then describes a
/// turn that is running, not one cut off). Everything else is as there.
pub fn replay_awaiting<E: EntryText>(events: &[E], first: usize) -> Vec<Message> {
    let mut messages = replay_raw(events, first);
    let awaiting = match messages.last() {
        Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty() => messages.pop(),
        _ => None,
    };
    let mut messages = drop_orphans(messages);
    messages.extend(awaiting);
    messages
}

/// The messages the entries hold, orphans not yet dropped.
fn replay_raw<E: EntryText>(events: &[E], first: usize) -> Vec<Message> {
    let mut boundary = last_boundary_in(events.iter().enumerate().map(|(i, e)| (first + i, e.text())));
    boundary.start = boundary.start.saturating_sub(first);
    let mut messages = Vec::new();
    if let Some(brief) = &boundary.brief {
        messages.push(Message::User { content: wrap_brief(brief) });
    }
    // Entries since the last finished turn, not parsed yet.
    let mut pending: Vec<&str> = Vec::new();
    // A turn's recorded messages are used only when its first user entry is
    // inside the replayed range; otherwise the entries themselves are.
    let mut turn_began_in_range = false;
    for raw in events[boundary.start.min(events.len())..].iter().map(EntryText::text) {
        let kind = match quick_type(raw) {
            Some(kind) => kind.to_string(),
            None => Parsed::from_text(raw).kind().to_string(),
        };
        match kind.as_str() {
            "user" | "assistant" | "reasoning" | "tool" => {
                if kind == "user" && !is_steer(raw) {
                    // A new turn. Entries of one that never finished (a
                    // crash) are replayed from what they recorded.
                    rebuild(&pending, &mut messages);
                    pending.clear();
                    turn_began_in_range = true;
                }
                pending.push(raw);
            }
            "turn" => {
                let recorded = match Parsed::from_text(raw) {
                    Parsed::Known(Entry::Turn { messages: recorded, .. }) if turn_began_in_range => {
                        Some(recorded.into_iter().map(Message::from).collect::<Vec<Message>>())
                    }
                    _ => None,
                };
                match recorded {
                    Some(recorded) => messages.extend(recorded),
                    None => rebuild(&pending, &mut messages),
                }
                pending.clear();
                turn_began_in_range = false;
            }
            // Never sent: notices, errors, usage, custom data; and an older
            // boundary inside the kept range.
            _ => {}
        }
    }
    rebuild(&pending, &mut messages);
    messages
}

/// Remove tool calls that have no result and results that have no call;
/// an assistant message left with nothing is removed too.
///
/// Calls are matched only with the tool results right after their assistant
/// message, which is where every provider expects them: ids repeat across
/// turns (`call_0`, `0`), so a result from an earlier turn must never
/// vouch for a later call that was cut off by a crash.
pub fn drop_orphans(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut rest = messages.into_iter().peekable();
    while let Some(message) = rest.next() {
        match message {
            Message::Assistant { content, reasoning, mut tool_calls } => {
                let mut results = Vec::new();
                while let Some(Message::Tool { .. }) = rest.peek() {
                    results.extend(rest.next());
                }
                // How many results each id has: a call is kept while one is left.
                let mut answered: HashMap<String, usize> = HashMap::new();
                for result in &results {
                    if let Message::Tool { tool_call_id, .. } = result {
                        *answered.entry(tool_call_id.clone()).or_default() += 1;
                    }
                }
                tool_calls.retain(|c| match answered.get_mut(&c.id) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                });
                let mut open: HashMap<String, usize> = HashMap::new();
                for call in &tool_calls {
                    *open.entry(call.id.clone()).or_default() += 1;
                }
                if !(content.is_empty() && tool_calls.is_empty() && reasoning.is_empty()) {
                    out.push(Message::Assistant { content, reasoning, tool_calls });
                }
                // Each result answers one call, once.
                for result in results {
                    if let Message::Tool { tool_call_id, .. } = &result
                        && let Some(n) = open.get_mut(tool_call_id)
                        && *n > 0
                    {
                        *n -= 1;
                        out.push(result);
                    }
                }
            }
            // A result with no call right before it.
            Message::Tool { .. } => {}
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
    use crate::message::ToolCall;
    use crate::store::TurnMessage;
    use serde_json::json;
    use serde_json::value::RawValue;

    fn raw(e: &Entry) -> Box<RawValue> {
        e.to_raw().unwrap()
    }
    fn user(t: &str) -> Entry {
        Entry::User { at: "t".into(), text: t.into(), steer: false, internal: None }
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
    fn custom() -> Entry {
        Entry::Custom { at: "t".into(), name: "race".into(), data: json!({"n": 1}) }
    }
    fn turn(messages: &[Message]) -> Entry {
        Entry::Turn { at: "t".into(), messages: messages.iter().map(TurnMessage::from).collect() }
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
    fn foreign_layouts_and_steers_replay_like_ours() {
        // Pretty-printed entries with `type` last: no quick type, parsed.
        let foreign: Vec<Box<RawValue>> = [
            r#"{ "at": "t", "text": "q", "type": "user" }"#,
            r#"{ "at": "t", "text": "a", "model": "m", "toolCalls": [], "stopReason": "stop", "type": "assistant" }"#,
            r#"{ "at": "t", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a (recorded)"}], "type": "turn" }"#,
        ]
        .iter()
        .map(|t| RawValue::from_string(t.to_string()).unwrap())
        .collect();
        assert_eq!(replay(&foreign), [u("q"), a("a (recorded)")]);
        // A range that starts with a steer mid-turn replays its entries.
        let steer = Entry::User { at: "t".into(), text: "and cats".into(), steer: true, internal: None };
        let events: Vec<_> =
            [steer, assistant("cats", &[]), turn(&[u("dogs"), u("and cats"), a("cats")])].iter().map(raw).collect();
        assert_eq!(replay(&events), [u("and cats"), a("cats")]);
        // A user message that quotes the steer field is still a turn start.
        let quoting = Entry::User { at: "t".into(), text: "\"steer\":true".into(), steer: false, internal: None };
        let events: Vec<_> = [quoting, assistant("ok", &[]), turn(&[u("recorded")])].iter().map(raw).collect();
        assert_eq!(replay(&events), [u("recorded")]);
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

    #[test]
    fn a_step_awaiting_its_results_keeps_its_calls_and_only_those() {
        // A writer between a step's calls and their results (issue 24): the
        // last assistant's calls stay; an earlier cut-off call still goes.
        let events: Vec<_> =
            [user("one"), assistant("", &["c0"]), user("two"), custom(), assistant("", &["c1"]), custom()]
                .iter()
                .map(raw)
                .collect();
        let context = replay_awaiting(&events, 0);
        assert_eq!(context.len(), 3, "{context:?}");
        assert!(matches!(&context[2], Message::Assistant { tool_calls, .. } if tool_calls.len() == 1));
        assert_eq!(replay(&events).len(), 2, "a plain replay drops the open call");
    }

    #[test]
    fn a_call_cut_off_by_a_crash_is_dropped_though_its_id_was_answered_in_an_earlier_turn() {
        // Turn 1 calls `call_0` and gets its result; turn 2 calls `call_0`
        // again and is killed before the result is saved; turn 3 follows.
        let events: Vec<_> = [
            user("one"),
            assistant("", &["call_0"]),
            tool("call_0"),
            assistant("done", &[]),
            turn(&[u("one"), a("done (recorded)")]),
            user("two"),
            assistant("looking", &["call_0"]),
            user("three"),
            assistant("ok", &[]),
            turn(&[u("three"), a("ok")]),
        ]
        .iter()
        .map(raw)
        .collect();
        let context = replay(&events);
        assert_eq!(context, [u("one"), a("done (recorded)"), u("two"), a("looking"), u("three"), a("ok")]);
    }

    #[test]
    fn results_must_follow_their_call() {
        let result = |id: &str| Message::Tool {
            tool_call_id: id.into(),
            name: "read".into(),
            content: "r".into(),
            is_error: false,
        };
        let call = |ids: &[&str]| Message::Assistant {
            content: Default::default(),
            reasoning: vec![],
            tool_calls: ids
                .iter()
                .map(|id| ToolCall { id: (*id).into(), name: "read".into(), input: json!({}) })
                .collect(),
        };
        // A result of an earlier call that turns up later is dropped, and so
        // is the later call it cannot answer.
        let messages = vec![u("q"), call(&["0"]), result("0"), u("r"), call(&["0"]), u("s"), result("0")];
        assert_eq!(drop_orphans(messages), [u("q"), call(&["0"]), result("0"), u("r"), u("s")]);
        // Two calls with one id need two results.
        let messages = vec![call(&["0", "0"]), result("0")];
        assert_eq!(drop_orphans(messages), [call(&["0"]), result("0")]);
    }
}
