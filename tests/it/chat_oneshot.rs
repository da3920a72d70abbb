//! `glrs-chat -p` against the mock model server: both protocols, tool calls
//! split across chunks, usage, retries, overflow, cut streams, plain JSON
//! answers, resume, and what reaches disk (never a key).

use std::time::Instant;

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

#[test]
fn openai_text_streams_to_stdout_and_is_recorded() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["Hel", "lo, ", "world"], 120, 7, 100)));
    let out = ts.chat().args(["-p", "say hello", "--model", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "Hello, world\n");
    let (id, session) = ts.only_session();
    assert_eq!(stderr_of(&out), format!("{id}\n"));

    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "turn"]);
    let events = &session["events"];
    assert_eq!(events[0]["text"], "say hello");
    assert_eq!(events[1]["text"], "Hello, world");
    assert_eq!(events[1]["model"], "openai/gpt-4.1");
    assert_eq!(events[1]["stopReason"], "stop");
    assert_eq!(events[1]["toolCalls"], json!([]));
    assert_eq!(
        (events[2]["inputTokens"].clone(), events[2]["outputTokens"].clone(), events[2]["cacheReadTokens"].clone()),
        (json!(20), json!(7), json!(100))
    );
    assert_eq!(
        events[3]["messages"],
        json!([{"role": "user", "content": "say hello"}, {"role": "assistant", "content": "Hello, world"}])
    );
    assert_eq!(session["contextTokens"], 127);
    assert_eq!(session["model"], "openai/gpt-4.1");
    assert_eq!(session["title"], "say hello");

    let requests = server.model_requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some(format!("Bearer {OPENAI_KEY}").as_str()));
    assert_eq!(
        r.body,
        json!({"model": "gpt-4.1", "messages": [{"role": "user", "content": "say hello"}], "stream": true, "stream_options": {"include_usage": true}})
    );
    assert!(!ts.all_data_text().contains("SECRET"), "a key reached a file");
}

#[test]
fn tool_calls_split_across_chunks_get_a_result_and_no_orphans() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_tool_call("0", "read_file", &["", "{\"pa", "th\": \"src/", "main.rs\"}"])));
    server.push(Reply::sse(openai_text(&["No such tool."], 80, 4, 0)));
    let out = ts.chat().args(["-p", "read src/main.rs", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "No such tool.\n");
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "tool", "assistant", "usage", "turn"]);
    let call = &session["events"][1]["toolCalls"][0];
    assert_eq!(call, &json!({"id": "0", "name": "read_file", "input": {"path": "src/main.rs"}}));
    let tool = &session["events"][3];
    assert_eq!(tool["isError"], true);
    assert!(tool["result"].as_str().unwrap().contains("unknown tool \"read_file\""), "{tool}");

    let requests = server.model_requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].body;
    assert_eq!(
        second["messages"][1],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "0", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/main.rs\"}"}}]})
    );
    assert_eq!(second["messages"][2]["role"], "tool");
    assert_eq!(second["messages"][2]["tool_call_id"], "0");
}

#[test]
fn resume_replays_the_history_and_json_output_is_whole() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["first answer"], 10, 2, 0)));
    let out = ts.chat().args(["-p", "one", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success());
    let (id, _) = ts.only_session();

    server.push(Reply::sse(openai_text(&["second ", "answer"], 30, 3, 0)));
    let out = ts.chat().args(["--resume", &id[..5], "-p", "two", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        json_of(&out),
        json!({"id": id, "reply": "second answer", "usage": {"inputTokens": 30, "outputTokens": 3, "cacheReadTokens": 0, "cacheWriteTokens": 0, "costUsd": null}})
    );
    let second = &server.model_requests()[1].body;
    assert_eq!(second["model"], "gpt-4.1", "the session's model is kept");
    assert_eq!(
        second["messages"],
        json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "first answer"}, {"role": "user", "content": "two"}])
    );
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "turn", "user", "assistant", "usage", "turn"]);
}

#[test]
fn continue_picks_the_newest_session_here_and_stdin_is_a_prompt() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["a"], 1, 1, 0)));
    ts.chat().args(["-m", "openai/gpt-4.1"]).write_stdin("from stdin\n").assert().success().stdout("a\n");
    server.push(Reply::sse(openai_text(&["b"], 1, 1, 0)));
    ts.chat().args(["--continue", "-p", "again"]).assert().success().stdout("b\n");
    let (_, session) = ts.only_session();
    assert_eq!(session["events"][0]["text"], "from stdin\n");
    assert_eq!(session["events"][4]["text"], "again");
    let other = tempfile::tempdir().unwrap();
    let out = ts.chat().current_dir(other.path()).args(["--continue", "-p", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("nothing to continue"), "{}", stderr_of(&out));
}

#[test]
fn a_positional_prompt_works_like_p_and_stdin_is_attached_after_it() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["short"], 1, 1, 0)));
    ts.chat()
        .args(["-m", "openai/gpt-4.1", "summarise this"])
        .write_stdin("line one\nline two\n")
        .assert()
        .success()
        .stdout("short\n");
    let (id, session) = ts.only_session();
    assert_eq!(session["events"][0]["text"], "summarise this\n\nline one\nline two");
    assert_eq!(session["title"], "summarise this");
    let body = &server.model_requests()[0].body;
    assert_eq!(body["messages"][0]["content"], "summarise this\n\nline one\nline two");
    // With -p the same; an empty stdin adds nothing.
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    ts.chat().args(["--resume", &id, "-p", "and this"]).write_stdin("more").assert().success();
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    ts.chat().args(["--resume", &id, "plain"]).assert().success();
    let requests = server.model_requests();
    let last_user = |i: usize| {
        let messages = requests[i].body["messages"].as_array().unwrap().clone();
        messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
    };
    assert_eq!(last_user(1), "and this\n\nmore");
    assert_eq!(last_user(2), "plain");
    let out = ts.chat().args(["-p", "a", "b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "-p and a positional prompt: {}", stderr_of(&out));
}

#[test]
fn a_429_is_retried_after_retry_after_and_a_500_with_backoff() {
    let (ts, server) = store_and_server();
    server.push(Reply::json(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "1"));
    server.push(Reply::json(500, r#"{"error":{"message":"oops"}}"#));
    server.push(Reply::sse(openai_text(&["finally"], 1, 1, 0)));
    let start = Instant::now();
    let out = ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "finally\n");
    assert!(start.elapsed().as_millis() >= 900, "Retry-After: 1 was not honoured");
    assert_eq!(server.model_requests().len(), 3);
    // Each wait is said, with the attempt to come (issue 24.8): no silence.
    let err = stderr_of(&out);
    assert!(err.contains("(HTTP 429: slow down: retrying in 1 s (attempt 2 of 3))\n"), "{err}");
    assert!(err.contains("(HTTP 500: oops: retrying in 0.02 s (attempt 3 of 3))\n"), "{err}");
}

#[test]
fn a_down_server_is_retried_aloud() {
    // Issue 24.8: a server that is down (nothing listens on its port) is
    // retried with each wait said, not seconds of silence.
    let (ts, _server) = store_and_server();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    ts.config(json!({
        "providers": {"openai": {"baseUrl": format!("http://127.0.0.1:{port}/v1")}},
        "retry": {"attempts": 3, "baseDelayMs": 10},
    }));
    let out = ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    for attempt in [2, 3] {
        let said =
            err.lines().filter(|l| l.starts_with("glrs-chat: (cannot reach openai") && l.contains(": retrying in "));
        assert_eq!(said.filter(|l| l.ends_with(&format!("(attempt {attempt} of 3))"))).count(), 1, "{err}");
    }
    assert!(err.contains("(gave up after 3 attempts)"), "{err}");
}

#[test]
fn one_attempt_is_said_in_the_singular() {
    let (ts, server) = store_and_server();
    let url = server.url();
    ts.config(json!({"providers": {"openai": {"baseUrl": format!("{url}/v1")}}, "retry": {"attempts": 1}}));
    server.push(Reply::json(503, r#"{"error":{"message":"overloaded"}}"#));
    let out = ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    let err = stderr_of(&out);
    assert!(err.contains("HTTP 503: overloaded (gave up after 1 attempt)\n"), "{err}");
}

#[test]
fn a_provider_that_keeps_failing_ends_with_a_clear_error_and_a_valid_session() {
    let (ts, server) = store_and_server();
    for _ in 0..3 {
        server.push(Reply::json(503, r#"{"error":{"message":"overloaded"}}"#));
    }
    let out = ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(
        err.contains("glrs-chat: error: openai/gpt-4.1: HTTP 503: overloaded (gave up after 3 attempts)"),
        "the error names the model: {err}"
    );
    // A new session whose first call failed is not kept, and says so.
    assert!(err.contains("the new session was not kept"), "{err}");
    let sessions = std::fs::read_dir(ts.sessions_dir()).map_or(0, |dir| {
        let names = dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned());
        names.filter(|n| n.len() == 13 && n.ends_with(".json")).count()
    });
    assert_eq!(sessions, 0, "no session holding only an error");

    // A session already saved keeps the error entry.
    server.push(Reply::sse(openai_text(&["hello"], 1, 1, 0)));
    ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).assert().success();
    let (id, _) = ts.only_session();
    for _ in 0..3 {
        server.push(Reply::json(503, r#"{"error":{"message":"overloaded"}}"#));
    }
    let out = ts.chat().args(["--resume", &id, "-p", "again"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.ends_with(&format!("{id}\n")) && !err.contains("not kept"), "{err}");
    let (_, session) = ts.only_session();
    let types = entry_types(&session);
    assert_eq!(types[types.len() - 3..], ["user", "error", "turn"]);
    assert_eq!(session["events"][types.len() - 2]["kind"], "provider");

    server.push(Reply::json(401, r#"{"error":{"message":"invalid key sk-test-0penai-SECRET-7f3a"}}"#));
    let out = ts.chat().args(["--resume", &id, "-p", "again"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("HTTP 401: invalid key [redacted]") && !err.contains("SECRET"), "{err}");
    assert_eq!(server.model_requests().len(), 8, "a 401 is not retried");
    assert!(!ts.all_data_text().contains("SECRET"), "a key reached a file");
}

#[test]
fn a_context_overflow_is_its_own_kind_of_error() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    ts.chat().args(["-p", "small", "-m", "openai/gpt-4o"]).assert().success();
    let (id, _) = ts.only_session();
    server.push(Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ));
    let out = ts.chat().args(["--resume", &id, "-p", "huge"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("context overflow: HTTP 400: This model's maximum context length"),
        "{}",
        stderr_of(&out)
    );
    let (_, session) = ts.only_session();
    let events = session["events"].as_array().unwrap();
    assert_eq!(events[events.len() - 2]["kind"], "overflow");
    assert_eq!(server.model_requests().len(), 2, "an overflow is not retried as is");
}

#[test]
fn a_cut_stream_keeps_what_arrived() {
    let (ts, server) = store_and_server();
    let events = openai_text(&["The answer ", "is forty", "-two"], 10, 5, 0);
    server.push(Reply::cut_sse(events, 3));
    let out = ts.chat().args(["-p", "q", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_of(&out), "The answer is forty\n");
    assert!(stderr_of(&out).contains("the answer was cut off"), "{}", stderr_of(&out));
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "error", "turn"]);
    assert_eq!(session["events"][1]["text"], "The answer is forty");
    assert_eq!(session["events"][1]["stopReason"], "error");
    assert_eq!(session["events"][2]["kind"], "provider");
    // The next turn sends the partial answer back, and nothing invalid.
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    let (id, _) = ts.only_session();
    ts.chat().args(["--resume", &id, "-p", "go on"]).assert().success();
    let body = &server.model_requests()[1].body;
    assert_eq!(body["messages"][1], json!({"role": "assistant", "content": "The answer is forty"}));
}

#[test]
fn a_plain_json_answer_to_a_streaming_request_works() {
    let (ts, server) = store_and_server();
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_TTY8", "type": "function", "function": {"name": "lookup_population", "arguments": "{\"country\":\"Crumpet\"}"}}], "refusal": null}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 92, "completion_tokens": 17, "total_tokens": 109, "prompt_tokens_details": {"cached_tokens": 0}}
    });
    server.push(Reply::json(200, &body.to_string()));
    let done = json!({"id": "chatcmpl-2", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "YES"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 146, "completion_tokens": 3}});
    server.push(Reply::json(200, &done.to_string()));
    ts.chat().args(["-p", "dragons?", "-m", "openai/gpt-4o-mini"]).assert().success().stdout("YES\n");
    let (_, session) = ts.only_session();
    assert_eq!(session["events"][1]["toolCalls"][0]["input"], json!({"country": "Crumpet"}));
    assert_eq!(session["contextTokens"], 149);
}

#[test]
fn anthropic_thinking_and_tool_use_round_trip() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(anthropic_tool_use("toolu_01", "fixed_version", &["{\"for", "mat\": \"short\"}"])));
    server.push(Reply::sse(anthropic_thinking_text(
        &["The tool ", "failed."],
        "EuYDCmMIDBgC==",
        &["It is ", "**0.32a0**."],
    )));
    let out = ts
        .chat()
        .args(["-p", "version?", "-m", "anthropic/claude-sonnet-4-5", "--system", "be brief"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "Checking.\nIt is **0.32a0**.\n");
    let (id, session) = ts.only_session();
    assert_eq!(
        entry_types(&session),
        ["user", "assistant", "usage", "tool", "reasoning", "assistant", "usage", "turn"]
    );
    assert_eq!(
        session["events"][1]["toolCalls"][0],
        json!({"id": "toolu_01", "name": "fixed_version", "input": {"format": "short"}})
    );
    assert_eq!(session["events"][4]["text"], "The tool failed.");
    assert_eq!(session["events"][4]["signature"], "EuYDCmMIDBgC==");
    assert_eq!(session["events"][2]["cacheReadTokens"], 5);

    let requests = server.model_requests();
    let first = &requests[0];
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    // Prompt caching (SPEC 16) marks the system prompt and the newest message.
    let mark = json!({"type": "ephemeral"});
    assert_eq!(first.body["system"], json!([{"type": "text", "text": "be brief", "cache_control": mark}]));
    assert_eq!(
        first.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "version?", "cache_control": mark}]}])
    );
    let second = &requests[1].body["messages"];
    assert_eq!(
        second[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_01", "name": "fixed_version", "input": {"format": "short"}})
    );
    assert_eq!(second[2]["role"], "user");
    assert_eq!(second[2]["content"][0]["tool_use_id"], "toolu_01");
    assert_eq!(second[2]["content"][0]["is_error"], true);
    assert_eq!(second[2]["content"][0]["cache_control"], json!({"type": "ephemeral"}));

    // The next turn sends the thinking back with its signature.
    server.push(Reply::sse(anthropic_text(&["sure"])));
    ts.chat().args(["--resume", &id, "-p", "thanks"]).assert().success();
    let third = &server.model_requests()[2].body["messages"];
    assert_eq!(
        third[3]["content"][0],
        json!({"type": "thinking", "thinking": "The tool failed.", "signature": "EuYDCmMIDBgC=="})
    );
    assert!(!ts.all_data_text().contains("SECRET"));
}

#[test]
fn a_session_open_elsewhere_is_refused_with_the_holder_and_a_hint() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["a"], 1, 1, 0)));
    ts.chat().args(["-p", "x", "-m", "openai/gpt-4.1"]).assert().success();
    let (id, _) = ts.only_session();
    let lock = ts.store.open_lock(&glrs::SessionId::parse(&id).unwrap()).unwrap();
    let out = ts.chat().args(["--resume", &id, "-p", "y"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("session {id} is open in another program (pid {})", std::process::id())), "{err}");
    assert!(err.contains(&format!("glrs-fork {id}")), "{err}");
    drop(lock);
}

#[test]
fn keys_can_come_from_a_command() {
    let (ts, server) = store_and_server();
    ts.config(json!({"providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "apiKeyCommand": "echo sk-from-a-command"}}}));
    server.push(Reply::sse(openai_text(&["ok"], 1, 1, 0)));
    ts.cmd("glrs-chat").args(["-p", "x", "-m", "openai/gpt-4.1"]).assert().success();
    assert_eq!(server.model_requests()[0].header("authorization"), Some("Bearer sk-from-a-command"));
}

#[test]
fn custom_openai_compatible_providers_and_the_ollama_auto_pick() {
    let (ts, server) = store_and_server();
    ts.config(json!({
        "providers": {
            "local": {"type": "openai", "baseUrl": format!("{}/v1", server.url())},
            "ollama": {"baseUrl": format!("{}/v1", server.url())},
        }
    }));
    server.push(Reply::sse(openai_text(&["local!"], 1, 1, 0)));
    ts.cmd("glrs-chat").args(["-p", "x", "-m", "local/qwen2.5-7b"]).assert().success().stdout("local!\n");
    assert_eq!(server.model_requests()[0].header("authorization"), None, "a keyless local server");

    // No model and no keys: Ollama answers with its models.
    server.push(Reply::json(200, r#"{"models":[{"name":"llama3.2:latest"}]}"#));
    server.push(Reply::sse(openai_text(&["from ollama"], 1, 1, 0)));
    ts.cmd("glrs-chat").args(["-p", "hi"]).assert().success().stdout("from ollama\n");
    let requests = server.requests();
    assert_eq!(requests[1].path, "/api/tags");
    assert_eq!(requests[2].body["model"], "llama3.2:latest");
}

#[test]
fn no_model_and_nothing_to_pick_says_how_to_configure_one() {
    let ts = TestStore::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    ts.config(json!({"providers": {"ollama": {"baseUrl": format!("http://127.0.0.1:{port}/v1")}}}));
    let out = ts.cmd("glrs-chat").args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("no model configured") && err.contains("OPENAI_API_KEY") && err.contains("--model"), "{err}");
    assert!(err.contains("config.json"), "{err}");
    assert!(err.contains("providers.<id>.baseUrl"), "a local server's way is named: {err}");
}

#[test]
fn config_and_argument_errors_name_what_is_wrong() {
    let ts = TestStore::new();
    ts.config(json!({"memoryFlush": {"enabled": "yes"}}));
    let out = ts.chat().args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("config.json") && err.contains("memoryFlush.enabled: invalid type"), "{err}");
    // A syntax error names the file, the line and the column.
    let file = ts.dir.path().join("config/glrs/config.json");
    std::fs::write(&file, "{\"model\": \n").unwrap();
    let err = stderr_of(&ts.chat().args(["-p", "hi"]).output().unwrap());
    assert!(err.contains(&format!("{}: ", file.display())) && err.contains("line 2 column 0"), "{err}");

    ts.config(json!({}));
    let out = ts.chat().args(["-p", "hi", "-m", "gpt-4.1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(stderr_of(&out).contains("did you mean openai/gpt-4.1?"), "{}", stderr_of(&out));
    let out = ts.chat().args(["-p", "hi", "-m", "nosuch/model"]).output().unwrap();
    assert!(stderr_of(&out).contains("unknown provider \"nosuch\""), "{}", stderr_of(&out));
    let out =
        ts.cmd("glrs-chat").env("OPENAI_API_KEY", "").args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(stderr_of(&out).contains("no API key: set OPENAI_API_KEY"), "{}", stderr_of(&out));
    let out = ts.chat().args(["--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "stdin is not a terminal and empty: {}", stderr_of(&out));
    for empty in [["-p", ""], ["-p", "  "]] {
        let out = ts.chat().args(empty).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "an empty prompt is refused: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("the prompt is empty"), "{}", stderr_of(&out));
    }
    let out = ts.chat().args(["--resume", "../x", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        ts.snapshot().iter().filter(|(p, _)| p.to_string_lossy().contains("/sessions/")).count(),
        0,
        "nothing written"
    );
}

#[test]
fn glrs_is_the_front_door() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["via glrs"], 1, 1, 0)));
    ts.cmd("glrs")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["-p", "hi", "-m", "openai/gpt-4.1"])
        .assert()
        .success()
        .stdout("via glrs\n");
    let (id, _) = ts.only_session();
    let out = ts.cmd("glrs").args(["sessions", "ls"]).output().unwrap();
    assert!(stdout_of(&out).starts_with(&id), "{}", stdout_of(&out));
    // A first argument that is no program's name is a prompt for the chat.
    server.push(Reply::sse(openai_text(&["four"], 1, 1, 0)));
    ts.cmd("glrs").env("OPENAI_API_KEY", OPENAI_KEY).arg("what is 2+2?").assert().success().stdout("four\n");
    let out = ts.cmd("glrs").args(["nonesuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("no program glrs-nonesuch"), "{}", stderr_of(&out));
}

#[test]
fn azure_uses_its_deployment_url_and_key_header() {
    let (ts, server) = store_and_server();
    ts.config(json!({"providers": {"azure": {"endpoint": server.url(), "apiVersion": "2024-10-21"}}}));
    server.push(Reply::sse(openai_text(&["from azure"], 1, 1, 0)));
    ts.cmd("glrs-chat")
        .env("AZURE_OPENAI_API_KEY", "azure-SECRET-key")
        .args(["-p", "hi", "-m", "azure/gpt-5.4-nano"])
        .assert()
        .success()
        .stdout("from azure\n");
    let r = &server.model_requests()[0];
    assert_eq!(r.path, "/openai/deployments/gpt-5.4-nano/chat/completions?api-version=2024-10-21");
    assert_eq!(r.header("api-key"), Some("azure-SECRET-key"));
    assert_eq!(r.header("authorization"), None);
    assert!(!ts.all_data_text().contains("SECRET"));
}

#[test]
fn ctrl_c_cancels_a_retry_wait_and_keeps_the_session_valid() {
    let (ts, server) = store_and_server();
    server.push(Reply::json(429, r#"{"error":{"message":"busy"}}"#).with_header("retry-after", "30"));
    let child = ts
        .std_cmd(env!("CARGO_BIN_EXE_glrs-chat"))
        .args(["-p", "hi", "-m", "openai/gpt-4.1"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for_answered(1, "the 429 with Retry-After: 30 that starts the wait");
    let start = Instant::now();
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed().as_secs() < 10, "the 30 s wait was not cancelled");
    assert_eq!(out.status.code(), Some(130), "{}", stderr_of(&out));
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "notice", "turn"]);
}

#[test]
fn glrs_finds_programs_on_path_when_they_are_not_beside_it() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[]);
    // A copy of glrs alone in a folder: glrs-sessions is only on PATH.
    let lonely = tempfile::tempdir().unwrap();
    let glrs = lonely.path().join("glrs");
    install_exe(std::path::Path::new(env!("CARGO_BIN_EXE_glrs")), &glrs);
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_glrs-sessions")).parent().unwrap().to_path_buf();
    let mut cmd = ts.std_cmd(&glrs.to_string_lossy());
    cmd.env("PATH", &bin_dir).args(["sessions", "ls"]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).starts_with("aaaa0001\t"), "{}", stdout_of(&out));
    let out = ts.std_cmd(&glrs.to_string_lossy()).env("PATH", lonely.path()).args(["sessions", "ls"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("no program glrs-sessions (looked beside glrs and on PATH)"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_model_that_always_calls_a_tool_is_stopped_at_max_steps_per_turn() {
    // Issue 14: a server that always calls a tool gave 913 model calls in 15 s.
    let (ts, server) = store_and_server();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
        "maxStepsPerTurn": 3,
    }));
    // Three scripted calls: a fourth request would be unscripted, which the mock reports.
    for i in 0..3 {
        server.push(Reply::sse(openai_tool_call(&format!("call_{i}"), "again", &["{}"])));
    }
    let out = ts.chat().args(["-p", "loop", "--model", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(server.model_requests().len(), 3, "three model calls, then the turn ends");
    let notice = "the turn stopped after 3 model calls (maxStepsPerTurn)";
    assert!(stderr_of(&out).contains(notice), "{}", stderr_of(&out));
    let (_, session) = ts.only_session();
    let types = entry_types(&session);
    // Every call answered: three tool results, then the notice, then the turn.
    assert_eq!(types.iter().filter(|t| *t == "tool").count(), 3, "{types:?}");
    assert_eq!(&types[types.len() - 2..], ["notice", "turn"]);
    assert!(session["events"][types.len() - 2]["text"].as_str().unwrap().contains(notice));
}

#[test]
fn an_untitled_legacy_session_keeps_its_own_title_when_resumed() {
    let (ts, server) = store_and_server();
    let first = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"\nplan the migration\nin detail"}"#;
    let reply = r#"{"type":"assistant","at":"2026-11-01T10:00:02.000Z","text":"ok","model":"openai/gpt-4.1","toolCalls":[],"stopReason":"stop"}"#;
    let legacy = ts.write_fixed_in(&ts.legacy_dir(), "abcd0001", "2026-11-01T10:00:02.000Z", "/w", &[first, reply]);
    let before = std::fs::read(&legacy).unwrap();
    server.push(Reply::sse(openai_text(&["sure"], 1, 1, 0)));
    ts.chat().args(["--resume", "abcd0001", "-p", "a new question"]).assert().success();
    let (id, session) = ts.only_session();
    assert_eq!(id, "abcd0001");
    assert_eq!(session["title"], "plan the migration", "its own first user message, not the new one");
    assert_eq!(std::fs::read(&legacy).unwrap(), before, "the legacy file is untouched");
}
