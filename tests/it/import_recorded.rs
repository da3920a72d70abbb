//! Rollouts the real Codex wrote (0.171.0, `@openai/codex` from npm, driven
//! against `recorded/scripted_responses.py`, a scripted Responses API server:
//! see the fixtures' README): a session with shell calls, two automatic
//! compactions and a spawned subagent whose own rollout is beside it.

use crate::import::{
    calls_answered_once, check_calls, copy_tree, events, fixtures, from_source, import, sessions, texts_of,
};
use crate::support::*;

const MAIN: &str = "01a234a3-9cb3-77b2-934b-23a28a92e16c.jsonl";
const CHILD: &str = "01a234a3-abba-77f1-a635-7628fa1a8d76.jsonl";

#[test]
fn a_recorded_codex_rollout_and_its_spawned_subagent() {
    let (ts, server) = store_and_server();
    let src = ts.dir.path().join("sources");
    copy_tree(&fixtures().join("recorded/codex"), &src);
    let out = import(&ts, &["--from", "codex", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = sessions(&ts);
    assert_eq!(all.len(), 2, "the session and its subagent's");
    assert_eq!(check_calls(&all).len(), 6, "five calls of the session's, one of the subagent's");
    let (main_id, main) = from_source(&all, MAIN);
    let (child_id, child) = from_source(&all, CHILD);
    assert_eq!(main["title"], "LIST the files here");
    assert_eq!(main["cwd"], "/tmp/codexrec/work");
    assert_eq!(main["createdAt"], "2026-12-02T02:44:27.446Z", "the thread's own start");
    assert_eq!(main["updatedAt"], "2026-12-02T02:44:34.726Z");
    assert_eq!(main["model"], "mock/gpt-5-codex", "the rollout's provider id and model");
    assert_eq!(main["importedFrom"]["version"], "0.171.0");
    // Each answer is its own model call: the compaction's summary, which
    // Codex records as an answer of a turn of its own, joins none.
    let answers = texts_of(main, "assistant");
    for said in ["There are two files: README.md and main.rs.", "Fixed the typo in README.md.", "Done."] {
        assert!(answers.iter().any(|a| a == said), "{said:?} in {answers:?}");
    }
    let briefs = texts_of(main, "compacted");
    assert_eq!(briefs.len(), 2);
    assert!(briefs.iter().all(|b| b.contains("Summary: the user asked to LIST the files")), "{briefs:?}");
    for name in ["import:world_state", "import:token_usage_record", "import:turn_context", "import:event_msg"] {
        assert!(events(main).iter().any(|e| e["name"] == name), "{name} kept");
    }
    // The subagent's session is a child at the call that spawned it.
    assert_eq!(child["parent"]["id"].as_str(), Some(main_id.as_str()));
    assert_eq!(child["subagent"], true);
    let at = child["parent"]["entry"].as_u64().unwrap() as usize;
    let spawner = &events(main)[at - 1];
    assert_eq!((spawner["type"].as_str(), spawner["name"].as_str()), (Some("tool"), Some("spawn_agent")));
    assert_eq!(child["title"], "SUBTASK: LIST the files in this folder");
    // `ls --tree` shows it under its parent; `status` counts it as a subagent.
    let tree = stdout_of(&ts.sessions().args(["ls", "--tree"]).output().unwrap());
    let rows: Vec<&str> = tree.lines().collect();
    assert!(rows.len() == 2 && rows[0].starts_with(main_id.as_str()), "{tree}");
    assert!(rows[1].starts_with(child_id.as_str()) && rows[1].contains("└ SUBTASK"), "{tree}");
    let status = stdout_of(&ts.sessions().args(["status", main_id.as_str()]).output().unwrap());
    assert!(status.contains(&format!("subagents\t1, cost unknown ({child_id})")), "{status}");
    // Resumed, the session sends what its last compaction kept; the child its own.
    for (id, said, not) in [
        (main_id, &["Summary: the user asked to LIST", "What now?"][..], "Still two files"),
        (child_id, &["SUBTASK: LIST the files in this folder", "call_mockShell021"][..], "What now?"),
    ] {
        server.push(text_reply("continuing", 100));
        let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
        assert!(out.status.success(), "{id}: {}", stderr_of(&out));
        let requests = server.model_requests();
        let body = &requests.last().unwrap().body;
        calls_answered_once(body);
        let text = body.to_string();
        for s in said {
            assert!(text.contains(s), "{id}: {s:?} is not in {text}");
        }
        assert!(!text.contains(not), "{id}: {not:?} was sent: {text}");
    }
}
