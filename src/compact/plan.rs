//! The cut (SPEC 6, "The cut"): walk back from the newest entry summing
//! estimated tokens until the kept part reaches `keepRecentTokens`, then
//! back to the newest user message at or before that point. Everything from
//! there on is kept verbatim; everything before it, back to the previous
//! boundary (the previous brief included), is summarised. A cut on a user
//! message never separates a tool call from its result.

use std::hash::{Hash, Hasher};

use serde_json::value::RawValue;

use crate::store::{Entry, Parsed};

/// What a block is: written `[user]`, `[tool-call NAME]`, … in artifacts
/// and summary requests. A type, so code asks `tag == Tag::Brief` rather
/// than comparing text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// `user`
    User,
    /// `assistant`
    Assistant,
    /// `reasoning`
    Reasoning,
    /// `tool-call NAME`
    ToolCall(String),
    /// `tool-result NAME`
    ToolResult(String),
    /// `brief`: a previous compaction's brief, folded in.
    Brief,
}

impl std::fmt::Display for Tag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tag::User => f.write_str("user"),
            Tag::Assistant => f.write_str("assistant"),
            Tag::Reasoning => f.write_str("reasoning"),
            Tag::ToolCall(name) => write!(f, "tool-call {name}"),
            Tag::ToolResult(name) => write!(f, "tool-result {name}"),
            Tag::Brief => f.write_str("brief"),
        }
    }
}

/// A tag as written (`"tool-call read"`); text no tag reads as is taken as
/// a user block, the safe default for what is only shown.
impl From<&str> for Tag {
    fn from(text: &str) -> Tag {
        match text.split_once(' ') {
            Some(("tool-call", name)) => Tag::ToolCall(name.to_string()),
            Some(("tool-result", name)) => Tag::ToolResult(name.to_string()),
            _ => match text {
                "assistant" => Tag::Assistant,
                "reasoning" => Tag::Reasoning,
                "brief" => Tag::Brief,
                _ => Tag::User,
            },
        }
    }
}

/// One replaced message, as the artifact and the summary request show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// What it is.
    pub tag: Tag,
    /// The block's text.
    pub text: String,
}

/// What a compaction will replace, and the snapshot it was computed on.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Index of the first entry of the replaced range (0-based).
    pub start: usize,
    /// Index of the first kept entry (0-based): `firstKept` is `cut + 1`.
    pub cut: usize,
    /// The brief of the previous compaction, folded into this one.
    pub previous_brief: Option<String>,
    /// The replaced messages, previous brief first.
    pub blocks: Vec<Block>,
    /// How many entries the snapshot had, and a hash of them: the landing
    /// refuses a file that no longer starts with them.
    pub snapshot_len: usize,
    /// A hash of the summarised entries, to notice the file changing under the compaction.
    pub snapshot_hash: u64,
}

impl Plan {
    /// Replaced messages, not counting a folded-in previous brief.
    pub fn message_count(&self) -> usize {
        self.blocks.iter().filter(|b| b.tag != Tag::Brief).count()
    }
}

/// A hash of the first `n` entries.
pub fn hash_prefix(events: &[Box<RawValue>], n: usize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for raw in &events[..n.min(events.len())] {
        raw.get().hash(&mut h);
    }
    h.finish()
}

/// The estimated tokens of an entry as the model sees it (SPEC 5).
fn entry_tokens(entry: &Parsed) -> u64 {
    let chars = match entry {
        Parsed::Known(Entry::User { text, .. }) | Parsed::Known(Entry::Reasoning { text, .. }) => text.chars().count(),
        Parsed::Known(Entry::Assistant { text, tool_calls, .. }) => {
            text.chars().count()
                + tool_calls.iter().map(|c| c.name.chars().count() + c.input.to_string().chars().count()).sum::<usize>()
        }
        Parsed::Known(Entry::Tool { result, .. }) => result.chars().count(),
        _ => 0,
    };
    crate::message::tokens_of_chars(chars)
}

/// The artifact blocks of one entry.
fn blocks_of(entry: &Parsed) -> Vec<Block> {
    let block = |tag: Tag, text: &str| Block { tag, text: text.to_string() };
    match entry {
        Parsed::Known(Entry::User { text, .. }) => vec![block(Tag::User, text)],
        Parsed::Known(Entry::Reasoning { text, .. }) => vec![block(Tag::Reasoning, text)],
        Parsed::Known(Entry::Assistant { text, tool_calls, .. }) => {
            let mut out = Vec::new();
            if !text.is_empty() {
                out.push(block(Tag::Assistant, text));
            }
            for call in tool_calls {
                out.push(block(Tag::ToolCall(call.name.clone()), &call.input.to_string()));
            }
            out
        }
        Parsed::Known(Entry::Tool { name, result, .. }) => vec![block(Tag::ToolResult(name.clone()), result)],
        _ => Vec::new(),
    }
}

/// Plan a compaction of `events`, keeping about `keep_recent` tokens.
/// `None` means there is nothing to compact.
pub fn plan(events: &[Box<RawValue>], keep_recent: u64) -> Option<Plan> {
    // Counting starts at the previous boundary; its brief is folded in.
    let crate::context::Boundary { start, brief: previous_brief } = crate::context::last_boundary(events);
    let parsed: Vec<Parsed> = events[start..].iter().map(|r| Parsed::from_raw(r)).collect();
    // Walk back until the kept part is big enough.
    let mut kept = 0u64;
    let mut reached = None;
    for (j, entry) in parsed.iter().enumerate().rev() {
        kept += entry_tokens(entry);
        if kept >= keep_recent {
            reached = Some(j);
            break;
        }
    }
    let reached = reached?;
    // Then back to the newest user message at or before it (a steer sits
    // inside a turn, so it is no place to cut).
    let cut = (1..=reached).rev().find(|&j| matches!(&parsed[j], Parsed::Known(Entry::User { steer: false, .. })))?;
    let mut blocks: Vec<Block> = Vec::new();
    if let Some(brief) = &previous_brief {
        blocks.push(Block { tag: Tag::Brief, text: brief.clone() });
    }
    for entry in &parsed[..cut] {
        if let Parsed::Known(Entry::Compacted { .. }) = entry {
            continue;
        }
        blocks.extend(blocks_of(entry));
    }
    if blocks.iter().all(|b| b.tag == Tag::Brief) {
        return None;
    }
    Some(Plan {
        start,
        cut: start + cut,
        previous_brief,
        blocks,
        snapshot_len: events.len(),
        snapshot_hash: hash_prefix(events, events.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ToolCall;
    use serde_json::json;

    fn raw(e: Entry) -> Box<RawValue> {
        e.to_raw().unwrap()
    }
    fn user(t: &str) -> Entry {
        Entry::User { at: "t".into(), text: t.into(), steer: false, internal: None }
    }

    /// A generated session: turns of a user message, assistant text, and
    /// sometimes a tool call and its result, of random sizes.
    fn generate(seed: u64, turns: usize) -> Vec<Box<RawValue>> {
        let mut s = seed | 1;
        let mut next = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        let mut out = Vec::new();
        for t in 0..turns {
            out.push(raw(Entry::User {
                at: "t".into(),
                text: "u".repeat(1 + next(4000) as usize),
                steer: next(10) == 0 && t > 0,
                internal: None,
            }));
            let calls = next(3) as usize;
            for c in 0..calls {
                let id = format!("c{t}-{c}");
                out.push(raw(Entry::Assistant {
                    at: "t".into(),
                    text: "a".repeat(next(500) as usize).into(),
                    model: "m".into(),
                    tool_calls: vec![ToolCall { id: id.clone(), name: "read".into(), input: json!({"p": "x"}) }],
                    stop_reason: "tool_use".into(),
                }));
                out.push(raw(Entry::Tool {
                    at: "t".into(),
                    id,
                    name: "read".into(),
                    input: json!({}),
                    result: "r".repeat(next(20_000) as usize),
                    is_error: false,
                }));
            }
            out.push(raw(Entry::Assistant {
                at: "t".into(),
                text: "done".repeat(next(300) as usize).into(),
                model: "m".into(),
                tool_calls: vec![],
                stop_reason: "stop".into(),
            }));
            out.push(raw(Entry::Turn { at: "t".into(), messages: vec![] }));
        }
        out
    }

    #[test]
    fn the_cut_is_always_on_a_user_message_and_never_splits_a_tool_pair() {
        for seed in 1..120u64 {
            let events = generate(seed * 7919, 2 + (seed % 40) as usize);
            let Some(plan) = plan(&events, 20_000) else { continue };
            match Parsed::from_raw(&events[plan.cut]) {
                Parsed::Known(Entry::User { steer: false, .. }) => {}
                other => panic!("seed {seed}: cut on {other:?}"),
            }
            // Every call before the cut has its result before the cut.
            let calls: Vec<String> = events[..plan.cut]
                .iter()
                .filter_map(|r| match Parsed::from_raw(r) {
                    Parsed::Known(Entry::Assistant { tool_calls, .. }) => Some(tool_calls.into_iter().map(|c| c.id)),
                    _ => None,
                })
                .flatten()
                .collect();
            for id in calls {
                let answered_before = events[..plan.cut]
                    .iter()
                    .any(|r| matches!(Parsed::from_raw(r), Parsed::Known(Entry::Tool { id: ref i, .. }) if *i == id));
                assert!(answered_before, "seed {seed}: call {id} split from its result");
            }
            // The kept part holds at least keepRecentTokens.
            let kept: u64 = events[plan.cut..].iter().map(|r| entry_tokens(&Parsed::from_raw(r))).sum();
            assert!(kept >= 20_000, "seed {seed}: kept only {kept}");
            assert!(plan.message_count() > 0);
        }
    }

    #[test]
    fn nothing_to_compact_when_everything_fits_or_no_user_message_helps() {
        let small = vec![raw(user("hi")), raw(Entry::Notice { at: "t".into(), text: "n".into() })];
        assert!(plan(&small, 20_000).is_none());
        // One huge user message: the only cut point is the first entry.
        let one = vec![raw(user(&"x".repeat(200_000)))];
        assert!(plan(&one, 20_000).is_none());
    }

    #[test]
    fn counting_starts_at_the_previous_boundary_and_folds_in_its_brief() {
        let big = "w".repeat(100_000);
        let mut events = vec![raw(user("ancient")), raw(user(&big)), raw(user(&big))];
        events.push(raw(Entry::Compacted {
            at: "t".into(),
            brief: "old brief".into(),
            first_kept: 2,
            tokens_before: 1,
            tokens_after: 1,
            model: "m".into(),
            artifact: "a.md".into(),
            instruction: None,
        }));
        events.push(raw(user(&big)));
        let plan = plan(&events, 20_000).unwrap();
        assert_eq!(plan.start, 1);
        assert_eq!(plan.cut, 4);
        let tags: Vec<String> = plan.blocks.iter().map(|b| b.tag.to_string()).collect();
        assert_eq!(tags, ["brief", "user", "user"]);
        assert_eq!(plan.blocks[0].text, "old brief");
        assert_eq!(plan.message_count(), 2);
    }
}
