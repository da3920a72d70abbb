//! pi (and OpenClaw) sessions, after badlogic/pi-mono's `docs/session.md`
//! and `session-manager.ts`: a `session` header (`version` 1–3), then
//! entries that form a tree by `id`/`parentId` (version 1: a flat list,
//! its compactions keeping from `firstKeptEntryIndex`).
//!
//! The path from the root to the newest leaf is the session; every other
//! leaf's path, from where it left the paths already taken, is a session of
//! its own whose `parent` is that branch point. Messages map to entries as
//! pi's own `buildSessionContext` sends them (`custom_message`,
//! `branch_summary` and `bashExecution` as user messages, injected);
//! `custom`, `label`, `model_change`, `thinking_level_change` and
//! `session_info` are kept as `custom`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::build::{Builder, Mark, entries_before};
use super::{Parent, Read, Skipped, Unit, content_text, file_stem, text_of, time_of};
use crate::message::StopReason;
use crate::store::Entry;

/// What pi puts around a branch summary it sends (`messages.ts`).
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";

/// One entry of the tree.
struct Node {
    id: String,
    parent: Option<String>,
    line: usize,
    value: Value,
}

/// Read a pi session.
pub fn read(path: &Path, lines: Vec<(usize, Value)>) -> Read {
    let mut skipped = Vec::new();
    let mut header: Option<Value> = None;
    let mut nodes: Vec<Node> = Vec::new();
    // Version 1 has no ids: each entry is its index in the file (the
    // header is 0), and its parent the one before.
    let v1 = lines.first().is_some_and(|(_, l)| {
        l.get("type").and_then(Value::as_str) == Some("session")
            && l.get("version").and_then(Value::as_u64).unwrap_or(1) < 2
    });
    for (index, (n, line)) in lines.into_iter().enumerate() {
        if line.get("type").and_then(Value::as_str) == Some("session") && header.is_none() {
            header = Some(line);
            continue;
        }
        let id = if v1 { Some(format!("#{index}")) } else { text_of(&line, "id") };
        let Some(id) = id else {
            skipped.push(Skipped { line: n, why: "a pi entry without id".into() });
            continue;
        };
        let parent = if v1 { nodes.last().map(|p| p.id.clone()) } else { text_of(&line, "parentId") };
        nodes.push(Node { id, parent, line: n, value: line });
    }
    let header = header.unwrap_or(Value::Null);
    let source_id = text_of(&header, "id").unwrap_or_else(|| file_stem(path));
    let cwd = text_of(&header, "cwd").unwrap_or_default();
    let version = Some(header.get("version").map_or("1".to_string(), |v| v.to_string()));
    let created = time_of(header.get("timestamp"));
    let mut units: Vec<Unit> = Vec::new();
    // For each branch made, its unit and the entries it holds through
    // each of its nodes.
    let mut ends: HashMap<Option<String>, (usize, HashMap<usize, usize>)> = HashMap::new();
    // Where each node taken begins (its first entry's number): the same in
    // every fork that shares it.
    let mut starts: HashMap<String, usize> = HashMap::new();
    for branch in branches(&nodes) {
        // A fork holds what it shares with the branch it leaves (SPEC 8).
        let fork = branch.from.as_ref().map(|(key, node)| {
            let (made, through) =
                ends.get(key).map_or((None, 0), |(u, e)| (Some(*u), e.get(node).copied().unwrap_or(0)));
            (key.clone(), through, made.map(|u| units[u].entries[..through].to_vec()).unwrap_or_default())
        });
        let prefix = fork.as_ref().map(|(_, _, prefix)| prefix.clone()).unwrap_or_default();
        let (mut unit, through) = unit_of(&nodes, &branch, v1, prefix, &mut starts, &mut skipped);
        if let Some((key, entry, _)) = fork {
            if unit.model.is_none() {
                unit.model = ends.get(&key).and_then(|(u, _)| units[*u].model.clone());
            }
            unit.parent = Some(Parent::Fork { key, entry });
        }
        ends.insert(branch.key.clone(), (units.len(), through));
        unit.source_id = source_id.clone();
        unit.cwd = cwd.clone();
        if branch.key.is_none()
            && let Some(created) = &created
        {
            unit.created_at = created.clone();
        }
        units.push(unit);
    }
    Read { version, units, skipped }
}

/// A branch: its key, the nodes it holds (indices, root first), and where
/// it left its parent branch.
struct Branch {
    key: Option<String>,
    nodes: Vec<usize>,
    from: Option<(Option<String>, usize)>,
}

/// The branches of the tree: the newest leaf's path first, then every
/// other leaf's, from where it leaves the paths already taken.
fn branches(nodes: &[Node]) -> Vec<Branch> {
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let parents: HashSet<&str> = nodes.iter().filter_map(|n| n.parent.as_deref()).collect();
    let mut leaves: Vec<usize> = (0..nodes.len()).filter(|&i| !parents.contains(nodes[i].id.as_str())).collect();
    // The newest leaf (the last written) is the session.
    if let Some(last) = leaves.pop() {
        leaves.insert(0, last);
    }
    // Which branch holds each node taken.
    let mut owner: HashMap<usize, Option<String>> = HashMap::new();
    let mut out = Vec::new();
    for (n, leaf) in leaves.into_iter().enumerate() {
        let key = if n == 0 { None } else { Some(nodes[leaf].id.clone()) };
        let mut path = Vec::new();
        let mut at = Some(leaf);
        let mut from = None;
        let mut seen = HashSet::new();
        while let Some(i) = at {
            if let Some(k) = owner.get(&i) {
                from = Some((k.clone(), i));
                break;
            }
            if !seen.insert(i) {
                break; // a cycle: stop where it closes
            }
            path.push(i);
            at = nodes[i].parent.as_deref().and_then(|p| index.get(p).copied());
        }
        path.reverse();
        for &i in &path {
            owner.insert(i, key.clone());
        }
        out.push(Branch { key, nodes: path, from });
    }
    out
}

/// One branch's entries, and how many of them each of its nodes ends
/// (by node index: where a branch leaving at that node forks).
/// `prefix` is what a fork shares with its parent; `starts` where each
/// node taken so far begins, which this branch's nodes are added to.
fn unit_of(
    nodes: &[Node],
    branch: &Branch,
    v1: bool,
    prefix: Vec<Entry>,
    starts: &mut HashMap<String, usize>,
    skipped: &mut Vec<Skipped>,
) -> (Unit, HashMap<usize, usize>) {
    let mut b = Builder::default();
    b.share(prefix);
    let mut marks = Marks { own: HashMap::new(), shared: starts };
    let mut after: Vec<(usize, Mark, Mark)> = Vec::new();
    let mut name: Option<String> = None;
    for &i in &branch.nodes {
        let node = &nodes[i];
        let before = b.mark();
        marks.own.insert(node.id.as_str(), before);
        let at = time_of(node.value.get("timestamp")).unwrap_or_default();
        if !at.is_empty() {
            b.saw(&at);
        }
        if let Err(why) = entry(&mut b, &node.value, &at, &marks, v1, &mut name) {
            skipped.push(Skipped { line: node.line, why });
        }
        after.push((i, before, b.mark()));
    }
    let (title, model) = (name.or(b.title.clone()), b.model.clone());
    let created_at = b.first_at.clone().unwrap_or_else(crate::time::now);
    let updated_at = b.last_at.clone().unwrap_or_else(|| created_at.clone());
    let (entries, placed) = b.finish_placed();
    let total = entries.len();
    let mut through = HashMap::new();
    for (i, before, end) in after {
        starts.insert(nodes[i].id.clone(), entries_before(&placed, total, before) + 1);
        through.insert(i, entries_before(&placed, total, end));
    }
    let unit = Unit {
        key: branch.key.clone(),
        source_id: String::new(),
        entries,
        cwd: String::new(),
        created_at,
        updated_at,
        title,
        model,
        parent: None,
    };
    (unit, through)
}

/// Where a compaction can keep from: a node of the branch's own (a mark),
/// or one it shares with its parent (an entry number).
struct Marks<'a, 'n> {
    own: HashMap<&'n str, Mark>,
    shared: &'a HashMap<String, usize>,
}

/// Map one pi entry.
fn entry(
    b: &mut Builder,
    e: &Value,
    at: &str,
    marks: &Marks,
    v1: bool,
    name: &mut Option<String>,
) -> Result<(), String> {
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "message" => message(b, e, at)?,
        "compaction" => {
            let summary = text_of(e, "summary").ok_or("a compaction without summary")?;
            let tokens = e.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0);
            let kept = if v1 {
                e.get("firstKeptEntryIndex").and_then(Value::as_u64).map(|i| format!("#{i}"))
            } else {
                text_of(e, "firstKeptEntryId")
            };
            match kept.as_deref() {
                Some(id) if !marks.own.contains_key(id) && marks.shared.contains_key(id) => {
                    b.compacted_from_shared(at, summary, tokens, marks.shared[id]);
                }
                kept => b.compacted(at, summary, tokens, kept.and_then(|id| marks.own.get(id).copied())),
            }
        }
        "branch_summary" => {
            let summary = text_of(e, "summary").ok_or("a branch_summary without summary")?;
            b.user(at, format!("{BRANCH_PREFIX}{summary}</summary>"), true);
        }
        "custom_message" => b.user(at, content_text(e.get("content")), true),
        "session_info" => {
            if let Some(n) = text_of(e, "name") {
                *name = Some(n);
            }
            b.keep(at, kind, e.clone());
        }
        "model_change" => {
            if let (Some(p), Some(m)) = (text_of(e, "provider"), text_of(e, "modelId")) {
                b.model = Some(format!("{p}/{m}"));
            }
            b.keep(at, kind, e.clone());
        }
        _ => b.keep(at, if kind.is_empty() { "unknown" } else { kind }, e.clone()),
    }
    Ok(())
}

/// Map a `message` entry by its role.
fn message(b: &mut Builder, e: &Value, at: &str) -> Result<(), String> {
    let m = e.get("message").ok_or("a message entry without message")?;
    let role = m.get("role").and_then(Value::as_str).ok_or("a message without role")?;
    match role {
        "user" => b.user(at, content_text(m.get("content")), false),
        "assistant" => assistant(b, m, at),
        "toolResult" => {
            let id = text_of(m, "toolCallId").ok_or("a toolResult without toolCallId")?;
            let failed = m.get("isError").and_then(Value::as_bool).unwrap_or(false);
            b.result(&id, at, content_text(m.get("content")), failed, "toolResult:unanswered");
        }
        "bashExecution" if m.get("excludeFromContext").and_then(Value::as_bool) != Some(true) => {
            b.user(at, bash_text(m), true)
        }
        "custom" | "hookMessage" => b.user(at, content_text(m.get("content")), true),
        "branchSummary" => {
            b.user(at, format!("{BRANCH_PREFIX}{}</summary>", text_of(m, "summary").unwrap_or_default()), true)
        }
        _ => b.keep(at, &format!("message:{role}"), e.clone()),
    }
    Ok(())
}

/// An assistant message: thinking, text, tool calls, usage, an error.
fn assistant(b: &mut Builder, m: &Value, at: &str) {
    let provider = text_of(m, "provider").unwrap_or_default();
    let model = match text_of(m, "model") {
        Some(model) if !provider.is_empty() => format!("{provider}/{model}"),
        Some(model) => model,
        None => String::new(),
    };
    let stop = match m.get("stopReason").and_then(Value::as_str) {
        None => StopReason::Stop,
        Some("toolUse") => StopReason::ToolUse,
        Some(other) => StopReason::from(other),
    };
    let call = b.model_call(at, &model, stop);
    for block in m.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => b.text(call, block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => {
                // A signature goes back only to the provider that made it.
                let signature = text_of(block, "thinkingSignature").filter(|_| provider == "anthropic");
                b.reasoning(call, at, text_of(block, "thinking").unwrap_or_default(), signature);
            }
            Some("toolCall") => {
                let id = text_of(block, "id").unwrap_or_default();
                let name = text_of(block, "name").unwrap_or_default();
                let input =
                    block.get("arguments").cloned().filter(Value::is_object).unwrap_or_else(|| serde_json::json!({}));
                b.tool_call(call, &id, &name, input);
            }
            _ => b.keep(at, "assistant:block", block.clone()),
        }
    }
    if let Some(u) = m.get("usage") {
        let n = |name: &str| u.get(name).and_then(Value::as_u64).unwrap_or(0);
        let usage = Entry::Usage {
            at: at.to_string(),
            model: model.clone(),
            input_tokens: n("input"),
            output_tokens: n("output"),
            cache_read_tokens: n("cacheRead"),
            cache_write_tokens: n("cacheWrite"),
            cost_usd: u.pointer("/cost/total").and_then(Value::as_f64),
        };
        b.usage(call, usage);
    }
    if let Some(error) = text_of(m, "errorMessage") {
        b.entry(Entry::Error { at: at.to_string(), text: error, kind: "provider".into() });
    }
}

/// A `bashExecution` as pi sends it (`bashExecutionToText`).
fn bash_text(m: &Value) -> String {
    let command = text_of(m, "command").unwrap_or_default();
    let output = text_of(m, "output").unwrap_or_default();
    let mut text = format!("Ran `{command}`\n");
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.get("exitCode").and_then(Value::as_i64).filter(|&c| c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, text: &str) -> Value {
        let message = match role {
            "assistant" => json!({"role": role, "content": [{"type": "text", "text": text}], "model": "m"}),
            _ => json!({"role": role, "content": text}),
        };
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-11-22T14:00:00.000Z", "message": message})
    }

    #[test]
    fn a_fork_holds_what_it_shares_and_its_compaction_may_keep_from_there() {
        let lines = vec![
            json!({"type": "session", "version": 3, "id": "s", "cwd": "/w", "timestamp": "2026-11-22T14:00:00.000Z"}),
            node("u1", None, "user", "one"),
            node("a1", Some("u1"), "assistant", "answer one"),
            node("u3", Some("a1"), "user", "three"),
            json!({"type": "compaction", "id": "c1", "parentId": "u3", "summary": "brief",
                "firstKeptEntryId": "a1", "tokensBefore": 9, "timestamp": "2026-11-22T14:00:00.000Z"}),
            node("u4", Some("c1"), "user", "four"),
            node("u2", Some("a1"), "user", "two"),
            node("a2", Some("u2"), "assistant", "answer two"),
        ];
        let lines = lines.into_iter().enumerate().map(|(i, l)| (i + 1, l)).collect();
        let read = read(Path::new("s.jsonl"), lines);
        assert!(read.skipped.is_empty(), "{:?}", read.skipped);
        let [main, fork] = &read.units[..] else { panic!("{:?}", read.units) };
        let kinds = |u: &Unit| u.entries.iter().map(Entry::kind).collect::<Vec<_>>();
        assert_eq!(kinds(main), ["user", "assistant", "user", "assistant"]);
        assert_eq!(fork.parent, Some(Parent::Fork { key: None, entry: 2 }));
        assert_eq!(kinds(fork), ["user", "assistant", "user", "compacted", "user"]);
        assert_eq!(format!("{:?}", &fork.entries[..2]), format!("{:?}", &main.entries[..2]));
        match &fork.entries[3] {
            Entry::Compacted { first_kept: 2, brief, .. } => assert_eq!(brief, "brief"),
            other => panic!("keeps from the shared answer: {other:?}"),
        }
        assert_eq!(fork.title.as_deref(), Some("three"), "its own first prompt");
        assert_eq!(fork.model.as_deref(), Some("m"), "the model it went on with");
    }
}
