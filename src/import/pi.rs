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
    let mut units = Vec::new();
    // For each branch made, the entries it holds through each of its nodes.
    let mut ends: HashMap<Option<String>, HashMap<usize, usize>> = HashMap::new();
    for branch in branches(&nodes) {
        let (mut unit, through) = unit_of(&nodes, &branch, v1, &mut skipped);
        if let Some((key, node)) = &branch.from {
            let entry = ends.get(key).and_then(|e| e.get(node)).copied().unwrap_or(0);
            unit.parent = Some(Parent::Unit { key: key.clone(), entry });
        }
        ends.insert(branch.key.clone(), through);
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
fn unit_of(nodes: &[Node], branch: &Branch, v1: bool, skipped: &mut Vec<Skipped>) -> (Unit, HashMap<usize, usize>) {
    let mut b = Builder::default();
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    let mut after: Vec<(usize, Mark)> = Vec::new();
    let mut name: Option<String> = None;
    for &i in &branch.nodes {
        let node = &nodes[i];
        marks.insert(node.id.as_str(), b.mark());
        let at = time_of(node.value.get("timestamp")).unwrap_or_default();
        if !at.is_empty() {
            b.saw(&at);
        }
        if let Err(why) = entry(&mut b, &node.value, &at, &marks, v1, &mut name) {
            skipped.push(Skipped { line: node.line, why });
        }
        after.push((i, b.mark()));
    }
    let (title, model) = (name.or(b.title.clone()), b.model.clone());
    let created_at = b.first_at.clone().unwrap_or_else(crate::time::now);
    let updated_at = b.last_at.clone().unwrap_or_else(|| created_at.clone());
    let (entries, placed) = b.finish_placed();
    let through = after.into_iter().map(|(i, mark)| (i, entries_before(&placed, entries.len(), mark))).collect();
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

/// Map one pi entry.
fn entry(
    b: &mut Builder,
    e: &Value,
    at: &str,
    marks: &HashMap<&str, Mark>,
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
            let keep = kept.and_then(|id| marks.get(id.as_str()).copied());
            b.compacted(at, summary, tokens, keep);
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
