//! `/rewind` in the REPL (SPEC 19), through a pseudo-terminal: two turns
//! that change files, then back to before the second message, conversation
//! and files: the files are as they were, the chat continues in a fork with
//! the message in the input line, Enter sends it there (the old session
//! stays as the rewind left it), and the old session is still listed.

use crate::support::mock::{MockServer, Reply};
use crate::support::pty::{prompt, spawn};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// A REPL in a project folder of its own, against the mock, at its prompt.
fn repl() -> (TestStore, MockServer, std::path::PathBuf, rexpect::session::PtySession) {
    let (ts, server) = store_and_server();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
    }));
    let proj = ts.dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.current_dir(&proj)
        .args(["-m", "openai/gpt-4.1", "--allow-all"])
        .env("TERM", "xterm-256color")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"));
    let mut p = spawn(cmd, false);
    prompt(&mut p);
    (ts, server, proj, p)
}

#[test]
fn rewind_in_the_repl_continues_in_a_fork_with_the_message_in_the_input_line() {
    let (ts, server, proj, mut p) = repl();
    std::fs::write(proj.join("keep.txt"), "keep\n").unwrap();

    let write = json!({"path": "new.txt", "content": "new\n"}).to_string();
    server.push(Reply::sse(openai_tool_call("call_1", "write", &[&write])));
    server.push(Reply::sse(openai_text(&["wrote it"], 10, 2, 0)));
    p.send_line("make a file").unwrap();
    p.exp_string("wrote it").unwrap();
    prompt(&mut p);
    let edit = json!({"path": "keep.txt", "oldText": "keep", "newText": "changed"}).to_string();
    server.push(Reply::sse(openai_tool_call("call_2", "edit", &[&edit])));
    server.push(Reply::sse(openai_text(&["edited it"], 10, 2, 0)));
    p.send_line("change keep").unwrap();
    p.exp_string("edited it").unwrap();
    prompt(&mut p);
    let (old, session) = ts.only_session();
    assert_eq!(std::fs::read_to_string(proj.join("keep.txt")).unwrap(), "changed\n", "{session}");

    p.send_line("/rewind").unwrap();
    p.exp_string("make a file  (2 files changed after it)").unwrap();
    p.exp_string("change keep  (1 file changed after it)").unwrap();
    p.exp_string("rewind to before which message").unwrap();
    p.send_line("2").unwrap();
    p.exp_string("take back what").unwrap();
    p.send_line("1").unwrap();
    p.exp_string("M keep.txt").unwrap();
    let (_, line) = p.exp_regex(r"continuing in [0-9a-f]{8}").unwrap();
    let fork = line.trim_start_matches("continuing in ").to_string();
    p.exp_string(&format!("{old} stays as it was")).unwrap();
    p.exp_regex(&format!(r"{fork} gpt-4\.1 \d+% > change keep")).unwrap();
    let old_file = ts.sessions_dir().join(format!("{old}.json"));
    let old_before = std::fs::read(&old_file).unwrap();
    assert_eq!(std::fs::read_to_string(proj.join("keep.txt")).unwrap(), "keep\n", "the files went back");
    assert!(proj.join("new.txt").exists(), "what the first turn made stays");

    // Enter sends the message put back, in the fork.
    server.push(Reply::sse(openai_text(&["again"], 10, 2, 0)));
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string("again").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();

    // The message went in the fork; the old session is as the rewind left it.
    assert!(std::fs::read(&old_file).unwrap() == old_before, "the old session {old} changed after the rewind");
    let forked = json_of(&ts.sessions().args(["show", &fork, "--json"]).output().unwrap());
    let kinds: Vec<(&str, &str)> = forked["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "user" || e["type"] == "assistant")
        .map(|e| (e["type"].as_str().unwrap(), e["text"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(kinds.last(), Some(&("assistant", "again")), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|(k, t)| *k == "user" && *t == "change keep").count(), 1, "{kinds:?}");

    let sent = &server.model_requests()[4].body["messages"];
    let text = sent.to_string();
    assert!(text.contains("make a file") && text.contains("change keep") && !text.contains("edited it"), "{text}");
    let listed = json_of(&ts.sessions().args(["ls", "--json"]).output().unwrap());
    let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&old.as_str()) && ids.contains(&fork.as_str()), "{ids:?}");
    let forked = json_of(&ts.sessions().args(["show", &fork, "--json"]).output().unwrap());
    assert_eq!(forked["parent"]["id"], old.as_str());
}

/// Back to before the first message, the conversation only: the fork holds
/// nothing yet, and Enter still sends the message there, not in the old
/// session (issue 32).
#[test]
fn rewind_to_the_first_message_continues_in_an_empty_fork() {
    let (ts, server, _proj, mut p) = repl();
    for (said, reply) in [("first thing", "one"), ("second thing", "two")] {
        server.push(Reply::sse(openai_text(&[reply], 10, 2, 0)));
        p.send_line(said).unwrap();
        p.exp_string(reply).unwrap();
        prompt(&mut p);
    }
    let (old, _) = ts.only_session();
    let old_file = ts.sessions_dir().join(format!("{old}.json"));
    p.send_line("/rewind").unwrap();
    p.exp_string("rewind to before which message").unwrap();
    p.send_line("1").unwrap();
    p.exp_string("take back what").unwrap();
    p.send_line("2").unwrap();
    let (_, line) = p.exp_regex(r"continuing in [0-9a-f]{8}").unwrap();
    let fork = line.trim_start_matches("continuing in ").to_string();
    p.exp_regex(&format!(r"{fork} gpt-4\.1 \d+% > first thing")).unwrap();
    let old_before = std::fs::read(&old_file).unwrap();
    server.push(Reply::sse(openai_text(&["again"], 10, 2, 0)));
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string("again").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();

    let sent = server.model_requests()[2].body["messages"].to_string();
    assert!(sent.contains("first thing") && !sent.contains("second thing"), "{sent}");
    assert!(std::fs::read(&old_file).unwrap() == old_before, "the old session {old} changed after the rewind");
    let forked = json_of(&ts.sessions().args(["show", &fork, "--json"]).output().unwrap());
    let users: Vec<&str> = forked["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "user")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first thing"], "{forked}");
}
