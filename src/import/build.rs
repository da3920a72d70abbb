//! Building one session's entries from a source read in order: tool calls
//! and results paired by the source's call ids (not by where they stand:
//! parallel calls fan out, results come late), each call's `tool` entry
//! laid out right after its `assistant` entry, where every provider wants
//! it; a call never answered gets an error result, so the context is valid.

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};

use crate::message::{StopReason, Text};
use crate::store::{Entry, ToolCall};

/// The result given to a call the source never answered.
pub const NO_RESULT: &str = "no result was recorded";

/// A tool's result as the source recorded it.
#[derive(Debug, Clone)]
struct Answer {
    at: String,
    result: String,
    is_error: bool,
}

/// One model call: its reasoning, text, calls and their results.
#[derive(Debug, Clone)]
struct Call {
    at: String,
    model: String,
    text: String,
    stop: StopReason,
    reasoning: Vec<Entry>,
    calls: Vec<ToolCall>,
    answers: Vec<Option<Answer>>,
    usage: Option<Entry>,
}

#[derive(Debug, Clone)]
enum Item {
    Entry(Entry),
    Model(Box<Call>),
    /// A compaction: its brief stands for everything before what it keeps.
    Compacted {
        at: String,
        brief: String,
        tokens_before: u64,
        model: String,
        keep: Keep,
    },
}

/// Where what a compaction kept begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Right after the compaction.
    Here,
    /// At an item of the session's own (an index in `items`).
    Item(usize),
    /// At an entry of those it shares with its parent (numbered from 1).
    Shared(usize),
}

/// A model call being built (see [`Builder::model_call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRef(usize);

/// A place among the items (see [`Builder::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(usize);

/// The entries of one session, built in source order.
#[derive(Debug, Default)]
pub struct Builder {
    /// The entries a fork shares with its parent (SPEC 8: a fork holds its
    /// parent's entries 1..N, then its own), laid out first.
    shared: Vec<Entry>,
    items: Vec<Item>,
    /// Calls not answered yet, by id: (item, call) in the order made.
    open: HashMap<String, VecDeque<(usize, usize)>>,
    /// The first real prompt's title.
    pub title: Option<String>,
    /// The last model used.
    pub model: Option<String>,
    /// The first and last times seen.
    pub first_at: Option<String>,
    /// See `first_at`.
    pub last_at: Option<String>,
}

impl Builder {
    /// Note a time of the source (for `createdAt`, `updatedAt`).
    pub fn saw(&mut self, at: &str) {
        if self.first_at.is_none() {
            self.first_at = Some(at.to_string());
        }
        self.last_at = Some(at.to_string());
    }

    /// Where the next item goes, for a compaction that keeps from here.
    pub fn mark(&self) -> Mark {
        Mark(self.items.len())
    }

    /// A user message; `injected` context (environment, instructions, meta
    /// lines) is kept but never the title.
    pub fn user(&mut self, at: &str, text: String, injected: bool) {
        if !injected && self.title.is_none() && !text.trim().is_empty() {
            self.title = Some(crate::store::format::title_from(&text));
        }
        self.items.push(Item::Entry(Entry::User { at: at.to_string(), text, steer: false, internal: None }));
    }

    /// Any other entry (notice, error, usage, custom), as it is.
    pub fn entry(&mut self, entry: Entry) {
        self.items.push(Item::Entry(entry));
    }

    /// A source line glrs has no entry for: `custom` `import:<kind>`,
    /// holding the whole line.
    pub fn keep(&mut self, at: &str, kind: &str, line: Value) {
        self.entry(Entry::Custom { at: at.to_string(), name: format!("import:{kind}"), data: line });
    }

    /// Start a model call (text, reasoning and calls are added after).
    pub fn model_call(&mut self, at: &str, model: &str, stop: StopReason) -> CallRef {
        if !model.is_empty() {
            self.model = Some(model.to_string());
        }
        self.items.push(Item::Model(Box::new(Call {
            at: at.to_string(),
            model: model.to_string(),
            text: String::new(),
            stop,
            reasoning: Vec::new(),
            calls: Vec::new(),
            answers: Vec::new(),
            usage: None,
        })));
        CallRef(self.items.len() - 1)
    }

    fn call_mut(&mut self, call: CallRef) -> Option<&mut Call> {
        match self.items.get_mut(call.0) {
            Some(Item::Model(c)) => Some(c),
            _ => None,
        }
    }

    /// Add answer text to a model call (parts joined by a blank line).
    pub fn text(&mut self, call: CallRef, text: &str) {
        if let Some(c) = self.call_mut(call) {
            if !c.text.is_empty() && !text.is_empty() {
                c.text.push_str("\n\n");
            }
            c.text.push_str(text);
        }
    }

    /// Add reasoning to a model call.
    pub fn reasoning(&mut self, call: CallRef, at: &str, text: String, signature: Option<String>) {
        if let Some(c) = self.call_mut(call) {
            c.reasoning.push(Entry::Reasoning { at: at.to_string(), text, signature });
        }
    }

    /// Set a model call's stop reason.
    pub fn stop(&mut self, call: CallRef, stop: StopReason) {
        if let Some(c) = self.call_mut(call) {
            c.stop = stop;
        }
    }

    /// Set a model call's usage (a later one replaces it).
    pub fn usage(&mut self, call: CallRef, usage: Entry) {
        if let Some(c) = self.call_mut(call) {
            c.usage = Some(usage);
        }
    }

    /// Add a tool call to a model call.
    pub fn tool_call(&mut self, call: CallRef, id: &str, name: &str, input: Value) {
        if let Some(c) = self.call_mut(call) {
            c.calls.push(ToolCall { id: id.to_string(), name: name.to_string(), input });
            c.answers.push(None);
            let index = c.calls.len() - 1;
            self.open.entry(id.to_string()).or_default().push_back((call.0, index));
        }
    }

    /// A tool's result, paired with the oldest open call of that id; one
    /// with no call is kept as `custom` `import:<kind>`.
    pub fn result(&mut self, id: &str, at: &str, result: String, is_error: bool, kind: &str) {
        let slot = self.open.get_mut(id).and_then(VecDeque::pop_front);
        let answer = Answer { at: at.to_string(), result, is_error };
        match slot {
            Some((item, index)) => {
                if let Some(Item::Model(c)) = self.items.get_mut(item) {
                    c.answers[index] = Some(answer);
                }
            }
            None => self.keep(
                at,
                kind,
                json!({"id": id, "result": answer.result, "isError": answer.is_error, "why": "no call of this id"}),
            ),
        }
    }

    /// A compaction whose brief stands for everything before `keep` (its
    /// own place when `None`).
    pub fn compacted(&mut self, at: &str, brief: String, tokens_before: u64, keep: Option<Mark>) {
        self.compaction(at, brief, tokens_before, keep.map_or(Keep::Here, |m| Keep::Item(m.0)));
    }

    /// A compaction that keeps from entry `entry` of those shared with the
    /// parent (see [`Builder::share`]); from its own place when the parent
    /// shares fewer.
    pub fn compacted_from_shared(&mut self, at: &str, brief: String, tokens_before: u64, entry: usize) {
        let keep = if (1..=self.shared.len()).contains(&entry) { Keep::Shared(entry) } else { Keep::Here };
        self.compaction(at, brief, tokens_before, keep);
    }

    fn compaction(&mut self, at: &str, brief: String, tokens_before: u64, keep: Keep) {
        let model = self.model.clone().unwrap_or_default();
        self.items.push(Item::Compacted { at: at.to_string(), brief, tokens_before, model, keep });
    }

    /// Make this session a fork holding `prefix` (its parent's entries
    /// 1..N) before its own entries, as `glrs-fork` writes one: its context
    /// is then the whole conversation. Marks and numbers stay right: the
    /// own entries are numbered after the prefix.
    pub fn share(&mut self, prefix: Vec<Entry>) {
        self.shared = prefix;
    }

    /// The entries, laid out.
    pub fn finish(self) -> Vec<Entry> {
        self.finish_placed().0
    }

    /// [`Builder::finish`], with where each item's first entry landed
    /// (numbered from 1, after the shared entries; see [`entries_before`]).
    pub fn finish_placed(self) -> (Vec<Entry>, Vec<usize>) {
        let mut out = self.shared;
        out.reserve(self.items.len() + 8);
        // Where each item's first entry landed (numbered from 1).
        let mut placed = Vec::with_capacity(self.items.len());
        for item in self.items {
            placed.push(out.len() + 1);
            match item {
                Item::Entry(entry) => out.push(entry),
                Item::Model(call) => lay_out(*call, &mut out),
                Item::Compacted { at, brief, tokens_before, model, keep } => {
                    let own = out.len() + 1;
                    // What the compaction kept begins at that item's first
                    // entry; by default, right after the compaction.
                    let first_kept = match keep {
                        Keep::Here => own + 1,
                        Keep::Item(k) => placed.get(k).copied().unwrap_or(own + 1),
                        Keep::Shared(entry) => entry,
                    };
                    let tokens_after = crate::message::estimate_text(&brief);
                    // A source that did not say: the context it replaced,
                    // estimated as glrs estimates any context (SPEC 5).
                    let tokens_before = if tokens_before > 0 { tokens_before } else { estimate(&out) };
                    out.push(Entry::Compacted {
                        at,
                        brief,
                        first_kept: first_kept as u64,
                        tokens_before,
                        tokens_after,
                        model,
                        artifact: String::new(),
                        instruction: None,
                    });
                }
            }
        }
        fill_times(&mut out);
        (out, placed)
    }
}

/// The estimated context of `entries` (SPEC 5), as replay would send it.
fn estimate(entries: &[Entry]) -> u64 {
    let raws: Vec<_> = entries.iter().filter_map(|e| e.to_raw().ok()).collect();
    crate::context::estimate(&crate::context::replay(&raws))
}

/// Give an entry from a source line without a time (Claude Code's
/// `summary` lines) the time of the entry after it, else before it.
fn fill_times(entries: &mut [Entry]) {
    let mut next: Option<String> = entries.last().map(|e| e.at().to_string()).filter(|a| !a.is_empty());
    for entry in entries.iter_mut().rev() {
        if entry.at().is_empty() {
            if let (Some(at), Entry::Custom { at: slot, .. }) = (&next, &mut *entry) {
                *slot = at.clone();
            }
        } else {
            next = Some(entry.at().to_string());
        }
    }
    // Those at the end take the time of the entry before them.
    let mut last: Option<String> = None;
    for entry in entries.iter_mut() {
        if !entry.at().is_empty() {
            last = Some(entry.at().to_string());
        } else if let (Some(at), Entry::Custom { at: slot, .. }) = (&last, &mut *entry) {
            *slot = at.clone();
        }
    }
}

/// How many entries come before the item at `mark` (all when it is past
/// the last item).
pub fn entries_before(placed: &[usize], total: usize, mark: Mark) -> usize {
    placed.get(mark.0).map_or(total, |&at| at - 1)
}

/// One model call's entries: reasoning, the answer, each call's result.
fn lay_out(call: Call, out: &mut Vec<Entry>) {
    let Call { at, model, text, stop, reasoning, calls, answers, usage } = call;
    out.extend(reasoning);
    out.push(Entry::Assistant {
        at: at.clone(),
        text: Text::from(text),
        model,
        tool_calls: calls.clone(),
        stop_reason: stop,
    });
    for (call, answer) in calls.into_iter().zip(answers) {
        let answer = answer.unwrap_or_else(|| Answer { at: at.clone(), result: NO_RESULT.into(), is_error: true });
        out.push(Entry::Tool {
            at: answer.at,
            id: call.id,
            name: call.name,
            input: call.input,
            result: answer.result,
            is_error: answer.is_error,
        });
    }
    out.extend(usage);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_pair_by_id_after_their_call_and_a_missing_one_is_an_error() {
        let mut b = Builder::default();
        b.user("t1", "go".into(), false);
        let call = b.model_call("t2", "openai/m", StopReason::ToolUse);
        b.tool_call(call, "a", "read", json!({"path": "x"}));
        b.tool_call(call, "b", "bash", json!({"command": "ls"}));
        b.tool_call(call, "c", "bash", json!({}));
        b.result("b", "t3", "B".into(), false, "orphan");
        b.result("a", "t4", "A".into(), true, "orphan");
        b.result("zz", "t5", "?".into(), false, "orphan");
        let entries = b.finish();
        let kinds: Vec<&str> = entries.iter().map(Entry::kind).collect();
        assert_eq!(kinds, ["user", "assistant", "tool", "tool", "tool", "custom"]);
        match (&entries[2], &entries[3], &entries[4]) {
            (
                Entry::Tool { id: a, result: ra, is_error: true, .. },
                Entry::Tool { id: b, result: rb, .. },
                Entry::Tool { id: c, result: rc, is_error: true, .. },
            ) => {
                assert_eq!((a.as_str(), ra.as_str()), ("a", "A"));
                assert_eq!((b.as_str(), rb.as_str()), ("b", "B"));
                assert_eq!((c.as_str(), rc.as_str()), ("c", NO_RESULT));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_compaction_the_source_gave_no_size_is_estimated_from_what_it_replaced() {
        let mut b = Builder::default();
        b.user("t", "x".repeat(4000), false);
        b.compacted("t", "brief".into(), 0, None);
        b.compacted("t", "brief 2".into(), 77, None);
        let entries = b.finish();
        let before = |e: &Entry| match e {
            Entry::Compacted { tokens_before, .. } => *tokens_before,
            other => panic!("{other:?}"),
        };
        let expected = crate::context::estimate(&crate::context::replay(&[entries[0].to_raw().unwrap()]));
        assert!(expected >= 1000, "{expected}");
        assert_eq!((before(&entries[1]), before(&entries[2])), (expected, 77));
    }

    #[test]
    fn a_compaction_keeps_from_its_mark() {
        let mut b = Builder::default();
        b.user("t", "one".into(), false);
        let keep = b.mark();
        b.user("t", "two".into(), false);
        b.compacted("t", "brief".into(), 10, Some(keep));
        b.compacted("t", "brief 2".into(), 10, None);
        let entries = b.finish();
        match (&entries[2], &entries[3]) {
            (Entry::Compacted { first_kept: 2, .. }, Entry::Compacted { first_kept: 5, .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}
