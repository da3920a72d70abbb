//! `setsid` children outlive no chat (issue 20, item 17), replayed: a
//! hook, a `bash` command and an MCP server each start `setsid sleep 1000`
//! in the background, and the server also has a plain child; then the
//! chat is SIGKILLed in the middle of a later call. Within a few seconds
//! none of them is left (the chat adopted the orphans as a child subreaper
//! and told its watchdog of each; the server's group was guarded).

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::procs::{alive, mcp_test_server, wait_for_pids, wait_until_gone};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// Kills whatever is left at the end, pass or fail.
struct Reap(Vec<i32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: a plain kill(2) of a pid this test learned.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
    }
}

/// A command that starts `setsid sleep 1000` in the background, writing
/// its pid to `file` (`setsid` in a background job is no group leader, so
/// it execs the sleep itself: `$!` is the sleep).
fn escape(file: &std::path::Path) -> String {
    format!("setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo $! > '{}'", file.display())
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "flaky, about 1 run in 4 since the sandbox and subagents landed: one of the six processes is already gone before the chat is killed (the precondition below); run with --ignored, see the closing note"]
fn setsid_children_of_a_hook_a_command_and_an_mcp_server_die_with_a_sigkilled_chat() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let dir = ts.dir.path();
    let (hook_pid, bash_pid, mcp_pid, server_pids, last_pid) =
        (dir.join("hook"), dir.join("bash"), dir.join("mcp"), dir.join("server"), dir.join("last"));
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
        "hooks": {"user_prompt": [{"command": escape(&hook_pid)}]},
        "mcpServers": {"h": {
            "command": mcp_test_server(), "args": ["--hostile", "--spawn-child"],
            "env": {"MCP_TEST_PIDS": server_pids},
        }},
    }));
    let bash = |n: usize, command: String| {
        Reply::sse(openai_tool_call(&format!("call_{n}"), "bash", &[&json!({"command": command}).to_string()]))
    };
    server.push(bash(0, escape(&bash_pid)));
    let run = json!({"command": escape(&mcp_pid)}).to_string();
    server.push(Reply::sse(openai_tool_call("call_1", "mcp__h__run", &[&run])));
    // The call the chat is SIGKILLed in.
    server.push(bash(2, format!("echo $$ > '{}'; exec sleep 300", last_pid.display())));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "escape"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let limit = Duration::from_secs(30);
    let mut pids = Vec::new();
    for (file, what) in [
        (&hook_pid, "the hook's setsid sleep"),
        (&bash_pid, "the bash command's setsid sleep"),
        (&mcp_pid, "the MCP server's setsid sleep"),
        (&server_pids, "the MCP server and its plain child"),
        (&last_pid, "the last bash command"),
    ] {
        let found = wait_for_pids(file, limit, what);
        reap.0.extend(&found);
        pids.extend(found);
    }
    assert!(pids.iter().all(|p| alive(*p)), "all running while the chat is: {pids:?}");
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(
        &pids,
        Duration::from_secs(10),
        "the setsid children, the server and its child of the SIGKILLed chat",
    );
}
