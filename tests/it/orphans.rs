//! `setsid` children outlive no chat (issue 20, item 17), replayed: a
//! hook, a `bash` command and an MCP server each start `setsid sleep 1000`
//! in the background, and the server also has a plain child; then the
//! chat is SIGKILLed in the middle of a later call. Within a few seconds
//! none of them is left (the chat adopted the orphans as a child subreaper
//! and told its watchdog of each; the server's group was guarded).

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::procs::Reap;
use crate::support::procs::{MARK, alive, mcp_test_server, wait_for_marked, wait_for_pids, wait_until_gone};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// A command that starts `setsid sleep 1000` in the background, writing
/// its pid to `file`, and returns only once it has escaped. The wait is the
/// point: every command and hook runs in a process group of its own, killed
/// when it ends, and a background child is in that group until its
/// `setsid()` runs; a shell that exited first had its child killed with the
/// group, correctly, before it could escape (the flake this test had, about
/// 1 run in 4). The pid is written after `setsid`, by the escaped process
/// itself, which then becomes the sleep; it is marked with the file's path
/// ([`MARK`]), which finds it from outside (a sandboxed command's `$$` is
/// its PID namespace's).
pub(crate) fn escape(file: &std::path::Path) -> String {
    let file = file.display();
    format!(
        "f='{file}' {MARK}='{file}' setsid sh -c 'echo $$ > \"$f\"; exec sleep 1000' > /dev/null 2>&1 < /dev/null &\n\
         i=0; while [ ! -s '{file}' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done"
    )
}

#[cfg(target_os = "linux")]
#[test]
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
        // Unsandboxed, as a hook and an MCP server are: a sandboxed
        // command's escapes end with its call (tests/it/sandbox_escape.rs).
        "sandbox": {"mode": "off"},
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
    server.push(bash(2, format!("echo $$ > '{0}'; {MARK}='{0}' exec sleep 300", last_pid.display())));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "escape"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("chat.stderr")).unwrap());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let limit = Duration::from_secs(30);
    let mut pids = Vec::new();
    let mut named = Vec::new();
    for (file, what, marked) in [
        (&hook_pid, "the hook's setsid sleep", true),
        (&bash_pid, "the bash command's setsid sleep", true),
        (&mcp_pid, "the MCP server's setsid sleep", true),
        (&server_pids, "the MCP server and its plain child", false),
        (&last_pid, "the last bash command", true),
    ] {
        let found = if marked { wait_for_marked(file, limit, what) } else { wait_for_pids(file, limit, what) };
        reap.0.extend(&found);
        named.extend(found.iter().map(|p| (*p, what)));
        pids.extend(found);
    }
    let gone: Vec<_> = named.iter().filter(|(p, _)| !alive(*p)).collect();
    assert!(
        gone.is_empty(),
        "all running while the chat is, but these are gone: {gone:?}; the chat's stderr: {}",
        std::fs::read_to_string(dir.join("chat.stderr")).unwrap_or_default()
    );
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(
        &pids,
        Duration::from_secs(10),
        "the setsid children, the server and its child of the SIGKILLed chat",
    );
}
