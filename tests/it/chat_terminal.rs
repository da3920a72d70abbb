//! The REPL and its terminal (issue 20 item 7, issue 26 section 1):
//! closing the terminal in the middle of a turn ends the chat like SIGHUP
//! (exit 129) promptly, whatever the turn was doing, releases the session
//! and leaves nothing running; and a line typed the moment the prompt is
//! back is never lost to the hand-over between the turn and the line
//! editor.

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::procs::{MARK, mcp_test_server, wait_for_marked, wait_for_pids, wait_until_gone};
use crate::support::pty::{Hangable, hangable_chat, prompt};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// How long a chat may take to exit once its terminal is closed.
const PROMPTLY: Duration = Duration::from_secs(10);

/// A store whose config points at a new mock server, with the tools on
/// and `mcp` as its `mcpServers`.
fn store_and_server_with(mcp: serde_json::Value) -> (TestStore, MockServer) {
    let ts = TestStore::new();
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
        "mcpServers": mcp,
    }));
    (ts, server)
}

fn store_and_server() -> (TestStore, MockServer) {
    store_and_server_with(json!({}))
}

fn call(server: &MockServer, id: &str, command: &str) {
    server.push(Reply::sse(openai_tool_call(id, "bash", &[&json!({ "command": command }).to_string()])));
}

/// Close the terminal now: the chat exits 129 within [`PROMPTLY`], and the
/// session it had open takes a one-shot turn (it was released, and what it
/// holds is a valid conversation).
fn hang_up_and_resume(mut chat: Hangable, ts: &TestStore, server: &MockServer) {
    chat.hang_up();
    let status = chat.wait_exit(PROMPTLY);
    assert_eq!(status.code(), Some(129), "{status:?}");
    let (id, _) = ts.only_session();
    server.push(text_reply("back again", 20));
    let out = ts.chat().args(["--resume", &id, "-p", "still there?"]).output().unwrap();
    assert!(out.status.success(), "--resume after the hang-up: {}", stderr_of(&out));
    assert!(stdout_of(&out).contains("back again"), "{}", stdout_of(&out));
}

#[test]
fn closing_the_terminal_while_a_reply_streams_ends_the_chat_like_sighup() {
    let pids = tempfile::tempdir().unwrap();
    let pids = pids.path().join("mcp-pids");
    let mcp = json!({"command": mcp_test_server(), "args": ["--spawn-child"], "env": {"MCP_TEST_PIDS": &pids}});
    let (ts, server) = store_and_server_with(json!({ "t": mcp }));
    server.push(slow_words("word", 400, 10, 50));
    let mut chat = hangable_chat(&ts, &["-m", "openai/gpt-4.1"], &[]);
    chat.expect("% > ");
    chat.send("count slowly\r");
    chat.expect("word3 ");
    let servers = wait_for_pids(&pids, Duration::from_secs(20), "the MCP test server and its child");
    std::fs::remove_file(&pids).unwrap();
    hang_up_and_resume(chat, &ts, &server);
    wait_until_gone(&servers, PROMPTLY, "the MCP server of a chat whose terminal closed, and its child");
    let (_, session) = ts.only_session();
    let assistant = session["events"].as_array().unwrap().iter().find(|e| e["type"] == "assistant").cloned();
    let assistant = assistant.expect("what arrived is kept");
    assert_eq!(assistant["stopReason"], "aborted", "{assistant}");
}

#[test]
fn closing_the_terminal_at_a_permission_prompt_ends_the_chat_like_sighup() {
    let (ts, server) = store_and_server();
    call(&server, "call_1", "echo never");
    // The sandbox off, so `bash` asks (inside it, it would not).
    let mut chat = hangable_chat(&ts, &["-m", "openai/gpt-4.1", "--sandbox", "off"], &[]);
    chat.expect("% > ");
    chat.send("run it\r");
    chat.expect("allow bash?");
    hang_up_and_resume(chat, &ts, &server);
}

#[test]
fn closing_the_terminal_while_bash_runs_ends_the_chat_and_the_command() {
    let (ts, server) = store_and_server();
    let pids = ts.dir.path().join("bash-pids");
    // Marked with the file's path: a sandboxed command's `$$` is its PID namespace's.
    call(&server, "call_1", &format!("echo $$ > '{0}'; {MARK}='{0}' exec sleep 60", pids.display()));
    let mut chat = hangable_chat(&ts, &["-m", "openai/gpt-4.1", "--allow", "bash"], &[]);
    chat.expect("% > ");
    chat.send("run it\r");
    let running = wait_for_marked(&pids, Duration::from_secs(20), "the bash command");
    hang_up_and_resume(chat, &ts, &server);
    wait_until_gone(&running, PROMPTLY, "the bash command of a chat whose terminal closed");
}

/// Twenty turns, each next line typed the moment the prompt is back (one
/// of them after a permission prompt answered `a`): every line reaches the
/// model, none is lost or cut.
#[test]
fn a_line_typed_the_moment_the_prompt_is_back_is_never_lost() {
    let (ts, server) = store_and_server();
    const TURNS: usize = 20;
    for n in 0..TURNS {
        if n == 7 {
            call(&server, "call_7", "echo allowed");
        }
        server.push(text_reply(&format!("reply-{n}-done"), 20));
    }
    // The sandbox off, so `bash` asks (inside it, it would not).
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1", "--sandbox", "off"], &[], false);
    prompt(&mut p);
    p.send_line("turn 0").unwrap();
    for n in 0..TURNS {
        if n == 7 {
            p.exp_string("allow bash?").unwrap();
            p.send("a\r").unwrap();
            p.flush().unwrap();
        }
        p.exp_string(&format!("reply-{n}-done")).unwrap();
        prompt(&mut p);
        if n + 1 < TURNS {
            p.send_line(&format!("turn {}", n + 1)).unwrap();
        }
    }
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let sent: Vec<String> = server
        .model_requests()
        .iter()
        .filter_map(|r| r.body["messages"].as_array()?.iter().rev().find(|m| m["role"] == "user").cloned())
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    let mut expected: Vec<String> = (0..TURNS).map(|n| format!("turn {n}")).collect();
    expected.insert(8, "turn 7".to_string()); // the call's result goes back in the same turn
    assert_eq!(sent, expected);
}
