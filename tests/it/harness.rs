//! The test harness fails loudly: a request the mock has no reply for, a
//! scripted reply never used, and a request that breaks tool call/result
//! pairing (in either protocol) are reported, and fail the test on drop.

use std::io::{Read, Write};

use serde_json::json;

use crate::support::mock::{MockServer, Reply, pairing_problem};
use crate::support::sse::*;
use crate::support::*;

/// The panic message of dropping `server`, if dropping it panicked.
fn drop_panic(server: MockServer) -> Option<String> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(server)));
    let payload = result.err()?;
    Some(payload.downcast_ref::<String>().cloned().unwrap_or_default())
}

#[test]
fn one_reply_too_few_is_reported_and_not_retried() {
    let (ts, server) = store_and_server();
    // A tool turn takes two model calls; only the first is scripted.
    server.push(Reply::sse(openai_tool_call("c1", "no_such_tool", &["", "{}"])));
    let out = ts.chat().args(["-p", "go", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "the turn fails: {}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("request 2 (POST /v1/chat/completions) has no reply scripted"),
        "{}",
        stderr_of(&out)
    );
    // Answered with a 400, which glrs does not retry (a 599 would be).
    assert_eq!(server.model_requests().len(), 2);
    let message = drop_panic(server).expect("dropping the server fails the test");
    assert!(message.contains("request 2 (POST /v1/chat/completions) has no reply scripted"), "{message}");
}

#[test]
fn a_reply_never_used_is_reported_by_number() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["one"], 1, 1, 0)));
    server.push(Reply::sse(openai_text(&["never asked for"], 1, 1, 0)));
    ts.chat().args(["-p", "go", "-m", "openai/gpt-4.1"]).assert().success().stdout("one\n");
    let report = server.take_report();
    assert_eq!(report.len(), 1, "{report:?}");
    assert_eq!(report, ["scripted reply 2 was never used: SSE of 5 events: \"never asked for\""]);
    // Taken, the report is empty: dropping no longer fails.
    assert_eq!(drop_panic(server), None);
}

#[test]
fn a_clean_run_reports_nothing() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(anthropic_tool_use("toolu_1", "no_such_tool", &["{}"])));
    server.push(Reply::sse(anthropic_text(&["done"])));
    let out = ts.chat().args(["-p", "go", "-m", "anthropic/claude-sonnet-4-5"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).ends_with("done\n"), "{}", stdout_of(&out));
    assert_eq!(server.model_requests().len(), 2);
    assert_eq!(server.take_report(), Vec::<String>::new());
}

#[test]
fn openai_pairing_is_checked() {
    let path = "/v1/chat/completions";
    let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "r"});
    let user = json!({"role": "user", "content": "u"});
    let ok = json!({"messages": [user, call("a"), result("a"), user]});
    assert_eq!(pairing_problem(path, &ok), None);
    let orphan_call = json!({"messages": [user, call("a"), user]});
    assert_eq!(
        pairing_problem(path, &orphan_call).as_deref(),
        Some("message 2 (Some(\"user\")): tool calls without results before it: [\"a\"]")
    );
    let orphan_result = json!({"messages": [user, call("a"), result("a"), result("b")]});
    assert_eq!(pairing_problem(path, &orphan_result).as_deref(), Some("message 3: tool result \"b\" without its call"));
    let trailing = json!({"messages": [user, call("a")]});
    assert_eq!(pairing_problem(path, &trailing).as_deref(), Some("tool calls without results at the end: [\"a\"]"));
    // Azure's path carries a query and is the same protocol.
    assert!(pairing_problem("/openai/deployments/m/chat/completions?api-version=1", &trailing).is_some());
}

#[test]
fn anthropic_pairing_is_checked() {
    let path = "/v1/messages";
    let call = |id: &str| json!({"role": "assistant", "content": [{"type": "text", "text": "t"}, {"type": "tool_use", "id": id, "name": "f", "input": {}}]});
    let result =
        |id: &str| json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "r"}]});
    let user = json!({"role": "user", "content": "u"});
    let ok = json!({"messages": [user, call("a"), result("a")]});
    assert_eq!(pairing_problem(path, &ok), None);
    let orphan_call = json!({"messages": [user, call("a"), user]});
    assert_eq!(
        pairing_problem(path, &orphan_call).as_deref(),
        Some("message 2: tool_use without tool_result: [\"a\"]")
    );
    let orphan_result = json!({"messages": [user, call("a"), result("b")]});
    assert_eq!(
        pairing_problem(path, &orphan_result).as_deref(),
        Some("message 2: tool_result \"b\" without its tool_use in the message before")
    );
    // The result must follow at once, not a message later.
    let late = json!({"messages": [user, call("a"), user, result("a")]});
    assert!(pairing_problem(path, &late).is_some());
    // OpenAI's rule would accept Anthropic's shape, so the path decides.
    assert_eq!(pairing_problem("/v1/chat/completions", &orphan_call), None);
}

#[test]
fn an_invalid_request_uses_no_reply_and_fails_the_test() {
    let server = MockServer::start();
    server.push(Reply::sse(openai_text(&["not for an invalid request"], 1, 1, 0)));
    let body = json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]}).to_string();
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    write!(
        conn,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("read the answer");
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    let message = drop_panic(server).expect("dropping the server fails the test");
    assert!(
        message.contains(
            "request 1 (POST /v1/chat/completions) is invalid: message 0: tool result \"x\" without its call"
        ),
        "{message}"
    );
    assert!(message.contains("scripted reply 1 was never used"), "{message}");
}

#[test]
fn a_test_whose_program_is_missing_fails_instead_of_passing() {
    // Issue 24.6: chromium, the shells, jq and man are required, not skipped.
    let missing = std::panic::catch_unwind(|| require("glrs-no-such-program"));
    let message = missing.err().and_then(|p| p.downcast_ref::<String>().cloned()).unwrap_or_default();
    assert!(message.contains("glrs-no-such-program, which is not on PATH"), "{message:?}");
    let missing = std::panic::catch_unwind(|| require_file("/nonexistent/bash_completion", "bash-completion"));
    assert!(missing.is_err(), "a missing file fails too");
    require("sh");
}
