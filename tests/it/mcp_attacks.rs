//! Hostile MCP servers (issue 20, items 11, 15, 16), replayed against the
//! chat: one flooding its stderr without newlines, one answering a call
//! with more than the SDK's 16 MB line limit, one announcing
//! `tools/list_changed` every few milliseconds. The chat's memory stays
//! bounded, the call fails at once saying why, the model calls do not wait
//! the storm out.

use std::time::{Duration, Instant};

use crate::support::mock::Reply;
use crate::support::procs::{alive, mcp_test_server, wait_for_pids};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// A number field of `/proc/PID/FILE` (`VmRSS:` of `status`, `wchar:` of
/// `io`), in the file's unit.
fn proc_field(pid: i32, file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(target_os = "linux")]
#[test]
fn a_server_flooding_stderr_without_newlines_leaves_the_chat_memory_bounded() {
    let (ts, server) = store_and_server();
    let dir = ts.dir.path();
    let flood_pid = dir.join("flood-pid");
    let go = dir.join("go");
    // The server's stderr gets endless NULs, no newline ever.
    let start = format!("cat /dev/zero >&2 & echo $! > '{}'; exec \"$0\"", flood_pid.display());
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
        "mcpServers": {"flood": {"command": "sh", "args": ["-c", start, mcp_test_server().display().to_string()]}},
    }));
    // The turn lasts until the test has measured.
    let command = format!("while [ ! -e '{}' ]; do sleep 0.05; done", go.display());
    server.push(Reply::sse(openai_tool_call("call_0", "bash", &[&json!({"command": command}).to_string()])));
    server.push(Reply::sse(openai_text(&["done"], 10, 1, 0)));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "wait"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let chat_pid = chat.id() as i32;
    let flood = wait_for_pids(&flood_pid, Duration::from_secs(30), "the flooding server")[0];
    // Until 200 MB of one endless line have been written (and so read by
    // the chat: a pipe holds 64 KB), the chat's resident memory is sampled.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut largest = 0;
    while proc_field(flood, "io", "wchar:") < 200 << 20 {
        largest = largest.max(proc_field(chat_pid, "status", "VmRSS:"));
        let written = proc_field(flood, "io", "wchar:");
        if Instant::now() > deadline || !alive(flood) {
            let _ = chat.kill();
            panic!("the flood wrote only {written} bytes within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    largest = largest.max(proc_field(chat_pid, "status", "VmRSS:"));
    std::fs::write(&go, "").unwrap();
    let status = wait_bounded(&mut chat, Duration::from_secs(30), "the chat");
    assert!(largest < 100 << 10, "the chat grew to {largest} kB while the server wrote 200 MB of stderr");
    assert!(status.success(), "the chat ends normally");
    assert!(!alive(flood), "the flood stopped with its server");
}

/// Wait for `child` to exit (at most `limit`), killing it and failing the
/// test if it does not.
fn wait_bounded(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
