//! Claude Code's `uuid` tree (SPEC 18): a prompt the user edited (or
//! rewound to) leaves a branch; the path to the newest leaf is the session
//! and the other branch a fork of it, holding only its own entries, with
//! `parent` at the last entry they share; a subagent the branch started is
//! the branch's child. The fixture is the recorded Claude Code 2.1.197
//! session's first two prompts and a third line of the same shapes (see
//! `tests/fixtures/import/README.md`).

use crate::import::{check_calls, copy_tree, events, fixtures, from_source, import, sessions, texts_of};
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
    // The branch left holds its own entries only, forked after the answer
    // both share (its usage is the last entry of that model call).
    assert_eq!(fork["importedFrom"]["key"], "a9a7d97d-5f31-4ca8-b59d-5c17ca19ba7a");
    assert_eq!(fork["importedFrom"]["id"], "7c2d4e90-3a1b-4f6e-8d2c-5e9f0a1b2c3d");
    assert_eq!(fork["parent"]["id"].as_str(), Some(main_id.as_str()));
    let at = fork["parent"]["entry"].as_u64().unwrap() as usize;
    assert_eq!(events(main)[at - 1]["type"], "usage");
    assert_eq!(events(main)[at - 2]["text"], "There are two files: README.md and main.rs.");
    let next = events(main)[at..].iter().find(|e| e["type"] != "custom").unwrap();
    assert_eq!(next["text"], "Instead, show me README.md", "metadata lines aside, the edited prompt");
    assert_eq!(texts_of(fork, "user"), ["SPAWN a helper to list the files"]);
    assert_eq!(fork["title"], "SPAWN a helper to list the files");
    assert_eq!(fork["cwd"], "/tmp/agents/work");
    // The subagent was started by the fork's Agent call: its child, there.
    assert_eq!(agent["parent"]["id"].as_str(), Some(fork_id.as_str()));
    let at = agent["parent"]["entry"].as_u64().unwrap() as usize;
    let spawner = &events(fork)[at - 1];
    assert_eq!((spawner["type"].as_str(), spawner["id"].as_str()), (Some("tool"), Some("toolu_mockAgent004")));
    // Both the session and its fork resume with a valid request.
    for (id, said) in [(main_id, "Instead, show me README.md"), (fork_id, "SPAWN a helper")] {
        server.push(text_reply("continuing", 100));
        let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let requests = server.model_requests();
        let body = requests.last().unwrap().body.to_string();
        assert!(body.contains(said), "{body}");
    }
    // Again: nothing changes.
    let before = ts.snapshot();
    let out = import(&ts, &["--from", "claude", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "");
    assert_eq!(ts.snapshot(), before, "importing again changed the store");
}
