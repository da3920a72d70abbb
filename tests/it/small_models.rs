//! Issue 33 items 1 and 2: a model with a small window (the README's
//! local-server example, 16k) compacts and keeps going, and a one-shot turn
//! that passes the compaction line compacts and goes on by itself.

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// The README's local-server shape: a provider of its own with a 16k window.
fn local_16k(server: &MockServer, extra: Value) -> Value {
    let mut config = json!({
        "model": "local/qwen2.5-coder-7b",
        "providers": {"local": {"type": "openai", "baseUrl": format!("{}/v1", server.url()),
                                "models": {"qwen2.5-coder-7b": {"metadata": {"context": 16384}}}}},
        "memoryFlush": {"enabled": false},
        "tools": {"enabled": false},
        "retry": {"attempts": 1},
    });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    config
}

/// A user message of about 3,000 tokens.
fn big(text: &str) -> String {
    format!("{text} {}", "lorem ipsum ".repeat(1000))
}

fn oneshot(ts: &TestStore, args: &[&str]) -> std::process::Output {
    ts.chat().args(args).output().unwrap()
}

fn content(r: &crate::support::mock::Captured, i: usize) -> String {
    r.body["messages"][i]["content"].as_str().unwrap_or("").to_string()
}

#[test]
fn a_16k_model_compacts_and_keeps_going() {
    let ts = TestStore::new();
    let server = MockServer::start();
    ts.config(local_16k(&server, json!({})));
    // Three turns of ~3k tokens; the third reports 13k, over 0.75 × 16k.
    for (n, prompt) in [(1, 3_100), (2, 6_200), (3, 13_000)] {
        server.push(text_reply(&format!("answer {n}"), prompt));
        if n == 3 {
            server.push(text_reply(BRIEF, 10));
        }
        let text = big(&format!("turn {n}"));
        let mut args = vec!["-p", &text];
        if n > 1 {
            args.insert(0, "--continue");
        }
        let out = oneshot(&ts, &args);
        assert!(out.status.success(), "turn {n}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(!err.contains("nothing to compact"), "turn {n}: {err}");
        assert!(!err.contains("keepRecentTokens"), "defaults scale with the window silently: {err}");
        if n == 3 {
            assert!(err.contains(": compacted, "), "the 16k model compacted: {err}");
        }
    }
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4, "three turns and the compaction");
    assert!(content(&requests[3], 1).contains("<conversation>"), "the fourth request is the compaction");
    // It keeps going on the brief, the recent turns kept verbatim.
    server.push(text_reply("four", 3_000));
    let out = oneshot(&ts, &["--continue", "-p", "and now?"]);
    assert_eq!(stdout_of(&out), "four\n", "{}", stderr_of(&out));
    let last = server.model_requests().pop().unwrap();
    assert!(content(&last, 0).starts_with("<earlier-conversation>\nworked on the parser"), "{}", content(&last, 0));
    assert!(content(&last, 3).starts_with("turn 3 "), "turn 3 is kept verbatim");
    // A configured value the window cannot honour is said, once, naming its key.
    ts.config(local_16k(&server, json!({"keepRecentTokens": 20000})));
    server.push(text_reply("five", 3_000));
    let out = oneshot(&ts, &["--continue", "-p", "five?"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert_eq!(err.matches("keepRecentTokens (20000)").count(), 1, "{err}");
    assert!(err.contains("4096"), "says what it keeps instead: {err}");
}

#[test]
fn a_one_shot_turn_passing_the_line_compacts_and_goes_on_by_itself() {
    let ts = TestStore::new();
    let server = MockServer::start();
    small_window(&ts, &server, false);
    server.push(text_reply("first answer", 500));
    assert!(oneshot(&ts, &["-m", "openai/gpt-4.1", "-p", &long("first")]).status.success());
    // The next turn asks for a tool; the call passes the line.
    let mut call = openai_tool_call("call_1", "read_file", &["{\"path\": \"src/parse.rs\"}"]);
    let at = call.len() - 2;
    call[at] = openai_usage(3500, 10, 0);
    server.push(Reply::sse(call));
    server.push(text_reply(BRIEF, 10));
    server.push(text_reply("the whole answer", 300));
    let out = oneshot(&ts, &["--continue", "-p", &long("second")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(!err.contains("send \"continue\""), "no one can send it in one-shot: {err}");
    assert!(err.contains("the turn goes on"), "{err}");
    assert_eq!(stdout_of(&out), "the whole answer\n", "the turn went on to its end: {err}");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4, "the step, the compaction, the next step");
    assert!(content(&requests[2], 1).contains("<conversation>"), "the third request is the compaction");
    let next = &requests[3];
    let messages = next.body["messages"].as_array().unwrap();
    assert!(content(next, 0).starts_with("<earlier-conversation>\nworked on the parser"), "{}", content(next, 0));
    assert!(messages.iter().any(|m| m["role"] == "tool"), "the call's result goes with it: {messages:?}");
    assert_eq!(messages.last().unwrap()["role"], "tool", "the turn went on from its tool result");
    // One turn: one user message, one turn entry.
    let (_, session) = ts.only_session();
    let types = entry_types(&session);
    assert_eq!(types.iter().filter(|t| *t == "user").count(), 2, "{types:?}");
    assert_eq!(types.iter().filter(|t| *t == "turn").count(), 2, "{types:?}");
}
