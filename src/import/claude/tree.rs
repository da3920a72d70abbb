//! The `uuid`/`parentUuid` tree of a Claude Code transcript, cut into the
//! sessions SPEC 18 asks for: the path from the root to the newest leaf is
//! the session; every other leaf's path, from where it leaves the paths
//! already taken, is a fork of its own (the user edited an earlier prompt,
//! or rewound).
//!
//! Not every fork in the tree is a branch. Claude Code writes each block of
//! an answer on its own line, chained one after the other, and a tool's
//! result hangs off the line of its own call, so parallel calls fan out:
//! the result of the second call is a leaf beside the line that goes on.
//! Attachments and progress lines can hang off a call too. A leaf's path
//! is a branch only when it holds something the conversation could have
//! gone on with instead: a prompt of the user's, or an answer of the model
//! that no path taken holds. Anything else (the other blocks of an answer
//! taken, results, attachments) belongs to the path it hangs off.
//!
//! A line whose parent is missing (a compaction's boundary names it as
//! `logicalParentUuid`; a line may name one the file does not hold) goes
//! on from the line before it, so the file is one tree.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::super::text_of;

/// One session cut from the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// `None` for the file's session, else its leaf's `uuid`.
    pub key: Option<String>,
    /// Where it leaves the branch it forks from: that branch (an index in
    /// [`Tree::branches`]) and the `uuid` of the last line they share.
    pub from: Option<(usize, String)>,
}

/// Which branch each line belongs to.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The branches, the file's session first.
    pub branches: Vec<Branch>,
    /// For each line (by its index in the lines read), its branch, or
    /// `None` for a line off the tree (no `uuid`, or not a node).
    pub owner: Vec<Option<usize>>,
}

/// Cut the tree of `lines`: those that `is_node` accepts and have a `uuid`.
pub fn cut(lines: &[(usize, Value)], is_node: impl Fn(&Value) -> bool) -> Tree {
    let nodes: Vec<usize> = (0..lines.len()).filter(|&i| is_node(&lines[i].1) && uuid(&lines[i].1).is_some()).collect();
    let mut tree = Tree { branches: Vec::new(), owner: vec![None; lines.len()] };
    if nodes.is_empty() {
        return tree;
    }
    let parent = parents(lines, &nodes);
    let mut has_child = vec![false; nodes.len()];
    for p in parent.iter().flatten() {
        has_child[*p] = true;
    }
    // Each node's branch (by node position).
    let mut owner: Vec<Option<usize>> = vec![None; nodes.len()];
    // The answers (`message.id`) the branches taken hold.
    let mut answers: HashSet<String> = HashSet::new();
    // The newest leaf first: the file's session. A leaf is as new as the
    // newest prompt or answer on its path (an attachment written late off
    // an old answer does not make that answer's path the session).
    let said = |k: usize| matches!(lines[nodes[k]].1.get("type").and_then(Value::as_str), Some("user" | "assistant"));
    let mut leaves: Vec<(usize, usize)> =
        (0..nodes.len()).filter(|&k| !has_child[k]).map(|k| (newest_said(k, &parent, said), k)).collect();
    leaves.sort_unstable_by(|a, b| b.cmp(a));
    for (_, leaf) in leaves {
        let (segment, attach) = walk(leaf, &parent, &owner);
        let line = |k: usize| &lines[nodes[k]].1;
        let to = if tree.branches.is_empty() {
            tree.branches.push(Branch { key: None, from: None });
            0
        } else if segment.iter().any(|&k| goes_elsewhere(line(k), &answers)) {
            let from = attach.and_then(|a| Some((owner[a]?, uuid(line(a))?.to_string())));
            tree.branches.push(Branch { key: uuid(line(leaf)).map(str::to_string), from });
            tree.branches.len() - 1
        } else {
            attach.and_then(|a| owner[a]).unwrap_or(0)
        };
        for &k in &segment {
            owner[k] = Some(to);
            answers.extend(answer_id(line(k)));
        }
    }
    for (k, &i) in nodes.iter().enumerate() {
        tree.owner[i] = owner[k];
    }
    tree
}

/// Each node's parent node (by position): its `parentUuid`, else its
/// `logicalParentUuid`, else the node before it.
fn parents(lines: &[(usize, Value)], nodes: &[usize]) -> Vec<Option<usize>> {
    let index: HashMap<&str, usize> =
        nodes.iter().enumerate().filter_map(|(k, &i)| Some((uuid(&lines[i].1)?, k))).collect();
    nodes
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let line = &lines[i].1;
            let named = ["parentUuid", "logicalParentUuid"]
                .iter()
                .find_map(|field| line.get(*field).and_then(Value::as_str).and_then(|u| index.get(u)).copied());
            named.filter(|&p| p != k).or_else(|| k.checked_sub(1))
        })
        .collect()
}

/// The first node from `k` up that is a prompt or an answer (`k` when
/// none is).
fn newest_said(k: usize, parent: &[Option<usize>], said: impl Fn(usize) -> bool) -> usize {
    let mut seen = HashSet::new();
    let mut at = Some(k);
    while let Some(node) = at {
        if said(node) {
            return node;
        }
        if !seen.insert(node) {
            break;
        }
        at = parent[node];
    }
    k
}

/// The nodes from `leaf` up to (not including) the first one a branch
/// holds already, leaf first, and that one (`None`: the root was reached).
fn walk(leaf: usize, parent: &[Option<usize>], owner: &[Option<usize>]) -> (Vec<usize>, Option<usize>) {
    let mut segment = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf);
    while let Some(k) = at {
        if owner[k].is_some() {
            return (segment, Some(k));
        }
        if !seen.insert(k) {
            break; // a cycle: stop where it closes
        }
        segment.push(k);
        at = parent[k];
    }
    (segment, None)
}

/// Whether a line is something the conversation could have gone on with
/// instead of the path it leaves: a prompt of the user's (not a result,
/// not injected context, not a compaction's summary), or an answer that
/// no branch taken holds (not Claude Code's stand-in for a failed call).
fn goes_elsewhere(line: &Value, answers: &HashSet<String>) -> bool {
    let flag = |name: &str| line.get(name).and_then(Value::as_bool) == Some(true);
    match line.get("type").and_then(Value::as_str) {
        Some("user") if !flag("isMeta") && !flag("isCompactSummary") => match line.pointer("/message/content") {
            Some(Value::String(_)) => true,
            Some(Value::Array(blocks)) => {
                blocks.iter().any(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"))
            }
            _ => false,
        },
        Some("assistant") if !flag("isApiErrorMessage") => answer_id(line).is_none_or(|id| !answers.contains(&id)),
        _ => false,
    }
}

fn uuid(line: &Value) -> Option<&str> {
    line.get("uuid").and_then(Value::as_str)
}

fn answer_id(line: &Value) -> Option<String> {
    if line.get("type").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    line.get("message").and_then(|m| text_of(m, "id"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A line: `kind` `uuid` under `parent`, with `content` (user) or the
    /// answer `id` (assistant).
    fn line(kind: &str, uuid: &str, parent: Option<&str>, what: Value) -> Value {
        let message = match kind {
            "assistant" => json!({"id": what, "role": "assistant", "content": [{"type": "text", "text": "x"}]}),
            _ => json!({"role": "user", "content": what}),
        };
        json!({"parentUuid": parent, "isSidechain": false, "type": kind, "uuid": uuid, "message": message})
    }

    fn result(uuid: &str, parent: &str) -> Value {
        line("user", uuid, Some(parent), json!([{"type": "tool_result", "tool_use_id": "t", "content": "r"}]))
    }

    fn cut_of(lines: Vec<Value>) -> (Vec<Branch>, Vec<Option<usize>>) {
        let lines: Vec<(usize, Value)> = lines.into_iter().enumerate().map(|(i, l)| (i + 1, l)).collect();
        let tree = cut(&lines, |_| true);
        (tree.branches, tree.owner)
    }

    #[test]
    fn parallel_calls_fan_out_without_making_a_branch() {
        // Two call lines of one answer, the second call's result hanging off
        // it (a leaf), the first's off the first, the session going on there.
        let (branches, owner) = cut_of(vec![
            line("user", "u1", None, json!("go")),
            line("assistant", "a1", Some("u1"), json!("msg_1")),
            line("assistant", "a2", Some("a1"), json!("msg_1")),
            result("r2", "a2"),
            result("r1", "a1"),
            line("assistant", "a3", Some("r1"), json!("msg_2")),
        ]);
        assert_eq!(branches, [Branch { key: None, from: None }]);
        assert_eq!(owner, [Some(0); 6]);
    }

    #[test]
    fn an_edited_prompt_forks_where_it_left_and_the_newest_leaf_is_the_session() {
        let (branches, owner) = cut_of(vec![
            line("user", "u1", None, json!("first")),
            line("assistant", "a1", Some("u1"), json!("msg_1")),
            line("user", "u2", Some("a1"), json!("second")),
            line("assistant", "a2", Some("u2"), json!("msg_2")),
            // The user edited "second": the new prompt hangs off a1.
            line("user", "u3", Some("a1"), json!("second, edited")),
            line("assistant", "a3", Some("u3"), json!("msg_3")),
            // An attachment left hanging off the old answer is no branch.
            json!({"parentUuid": "a2", "type": "attachment", "uuid": "x1", "attachment": {}}),
        ]);
        assert_eq!(branches[0], Branch { key: None, from: None });
        assert_eq!(branches[1], Branch { key: Some("x1".into()), from: Some((0, "a1".into())) });
        assert_eq!(branches.len(), 2);
        assert_eq!(owner, [Some(0), Some(0), Some(1), Some(1), Some(0), Some(0), Some(1)]);
    }

    #[test]
    fn a_compaction_boundary_goes_on_from_its_logical_parent() {
        let boundary = json!({"parentUuid": null, "logicalParentUuid": "a1", "type": "system",
            "subtype": "compact_boundary", "uuid": "c1"});
        let (branches, owner) = cut_of(vec![
            line("user", "u1", None, json!("first")),
            line("assistant", "a1", Some("u1"), json!("msg_1")),
            json!({"type": "summary", "summary": "t", "leafUuid": "a1"}),
            boundary,
            line("user", "u2", Some("c1"), json!("next")),
        ]);
        assert_eq!(branches.len(), 1);
        assert_eq!(owner, [Some(0), Some(0), None, Some(0), Some(0)]);
    }
}
