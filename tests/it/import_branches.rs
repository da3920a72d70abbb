//! Claude Code's `uuid` tree (SPEC 18): a prompt the user edited (or
//! rewound to) leaves a branch; the path to the newest leaf is the session
//! and the other branch a fork of it, holding only its own entries, with
//! `parent` at the last entry they share; a subagent the branch started is
//! the branch's child. The fixture is the recorded Claude Code 2.1.197
//! session's first two prompts and a third line of the same shapes (see
//! `tests/fixtures/import/README.md`).

use crate::import::{
    calls_answered_once, check_calls, copy_tree, events, fixtures, from_source, import, sessions, shared_with_parent,
    texts_of,
};
use crate::support::*;

const SESSION: &str = "7c2d4e90-3a1b-4f6e-8d2c-5e9f0a1b2c3d.jsonl";

#[test]
fn an_edited_prompt_becomes_a_fork_and_its_subagent_the_forks_child() {
    let (ts, server) = store_and_server();
    let src = ts.dir.path().join("sources");
    copy_tree(&fixtures().join("branch/claude"), &src);
    let out = import(&ts, &["--from", "claude", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).lines().count(), 3, "the session, its fork, the subagent: {}", stdout_of(&out));
    let all = sessions(&ts);
    assert_eq!(all.len(), 3);
    assert_eq!(check_calls(&all).len(), 5, "every call in one session, answered once");
    let (main_id, main) = from_source(&all, SESSION);
    let (fork_id, fork) = all.iter().find(|(_, s)| !s["importedFrom"]["key"].is_null()).unwrap();
    let (_, agent) = from_source(&all, "agent-a65e512f81fd0f5e8.jsonl");
    // The newest leaf's path is the session: the first prompt, the edited one.
    assert_eq!(texts_of(main, "user"), ["What files are here?", "Instead, show me README.md"]);
    assert_eq!(texts_of(main, "assistant").last().unwrap(), "README.md says it is a two-file project.");
    assert_eq!(main["title"], "What files are here?");
    // The branch left holds the entries both share (through the answer's
    // usage, the last entry of that model call), then its own.
    assert_eq!(fork["importedFrom"]["key"], "a9a7d97d-5f31-4ca8-b59d-5c17ca19ba7a");
    assert_eq!(fork["importedFrom"]["id"], "7c2d4e90-3a1b-4f6e-8d2c-5e9f0a1b2c3d");
    assert_eq!(fork["parent"]["id"].as_str(), Some(main_id.as_str()));
    assert!(fork["subagent"].is_null(), "a fork, not a child");
    let at = fork["parent"]["entry"].as_u64().unwrap() as usize;
    assert_eq!(shared_with_parent(&all, fork), at, "entries 1..{at} are the session's");
    assert_eq!(events(main)[at - 1]["type"], "usage");
    assert_eq!(events(main)[at - 2]["text"], "There are two files: README.md and main.rs.");
    let next = events(main)[at..].iter().find(|e| e["type"] != "custom").unwrap();
    assert_eq!(next["text"], "Instead, show me README.md", "metadata lines aside, the edited prompt");
    assert_eq!(texts_of(fork, "user"), ["What files are here?", "SPAWN a helper to list the files"]);
    let own = events(fork)[at..].iter().find(|e| e["type"] != "custom").unwrap();
    assert_eq!(own["text"], "SPAWN a helper to list the files", "its own entries follow the shared ones");
    assert_eq!(fork["title"], "SPAWN a helper to list the files");
    assert_eq!(fork["cwd"], "/tmp/agents/work");
    // The subagent was started by the fork's Agent call: its child, there.
    assert_eq!(agent["parent"]["id"].as_str(), Some(fork_id.as_str()));
    let at = agent["parent"]["entry"].as_u64().unwrap() as usize;
    let spawner = &events(fork)[at - 1];
    assert_eq!((spawner["type"].as_str(), spawner["id"].as_str()), (Some("tool"), Some("toolu_mockAgent004")));
    // The subagent is a child with a context of its own.
    assert_eq!(agent["subagent"], true);
    assert_eq!(texts_of(agent, "user").len(), 1, "{:?}", texts_of(agent, "user"));
    // Both the session and its fork resume with the whole conversation:
    // the shared prompt and answer, then each one's own turns.
    let shared = ["What files are here?", "There are two files: README.md and main.rs."];
    let cases = [
        (main_id, &["Instead, show me README.md", "README.md says it is a two-file project."][..], "SPAWN a helper"),
        (fork_id, &["SPAWN a helper to list the files", "toolu_mockAgent004"][..], "Instead, show me"),
    ];
    for (id, own, other) in cases {
        server.push(text_reply("continuing", 100));
        let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
        assert!(out.status.success(), "{id}: {}", stderr_of(&out));
        let requests = server.model_requests();
        let body = &requests.last().unwrap().body;
        let text = body.to_string();
        for said in shared.iter().chain(own) {
            assert!(text.contains(said), "{id}: {said:?} is not in {text}");
        }
        assert!(!text.contains(other), "{id}: the other branch's {other:?} was sent: {text}");
        let calls = calls_answered_once(body);
        assert!(!calls.is_empty() || id == main_id, "{id}: the fork's calls are sent: {text}");
    }
    // Again: nothing changes.
    let before = ts.snapshot();
    let out = import(&ts, &["--from", "claude", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "");
    assert_eq!(ts.snapshot(), before, "importing again changed the store");
}

/// pi's tree: the branch left is a fork holding the shared entries; resumed,
/// it sends them and its own turns, every call with its one result.
#[test]
fn a_resumed_pi_branch_sends_the_shared_conversation_and_its_own() {
    let (ts, server) = store_and_server();
    let src = ts.dir.path().join("sources");
    copy_tree(&fixtures().join("pi"), &src);
    let out = import(&ts, &["--from", "pi", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = sessions(&ts);
    let (branch_id, branch) = all.iter().find(|(_, s)| s["importedFrom"]["key"] == "b1000010").unwrap();
    let at = shared_with_parent(&all, branch);
    assert!(at > 0);
    let calls = |entries: &[serde_json::Value]| -> Vec<String> {
        entries.iter().filter(|e| e["type"] == "tool").map(|e| e["id"].as_str().unwrap().to_string()).collect()
    };
    let (shared, own) = (calls(&events(branch)[..at]), calls(&events(branch)[at..]));
    assert!(!shared.is_empty() && !own.is_empty(), "calls in the shared part and its own");
    server.push(text_reply("continuing", 100));
    let out = ts.chat().args(["--resume", branch_id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let body = &server.model_requests()[0].body;
    let text = body.to_string();
    for said in
        ["Add a --verbose flag to the CLI in src/main.rs", "Added the --verbose flag.", "Actually call it -v only"]
    {
        assert!(text.contains(said), "{said:?} is not in {text}");
    }
    assert!(!text.contains("Now document it in README.md"), "the other branch's prompt was sent: {text}");
    assert_eq!(calls_answered_once(body), [shared, own].concat(), "every call, each with its one result");
}
