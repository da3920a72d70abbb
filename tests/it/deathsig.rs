//! A SIGKILLed glrs-chat leaves no child behind (Linux `PR_SET_PDEATHSIG`,
//! `src/process/deathsig.rs`): with an MCP stdio server running and a `bash` tool
//! call (`sleep 300`) under way, `kill -9` of the chat ends both; one
//! waiting for its `apiKeyCommand` leaves that no more; and what a `bash`
//! command started in the background (a grandchild, out of the kernel's
//! reach) is killed by the chat's watchdog (`src/process/reaper.rs`), which then
//! exits too. So is a `glrs-compact` that `/compact` typed during a turn
//! started from the REPL's short-lived key watcher thread (too short-lived
//! for the kernel's signal): its group is the watchdog's to kill.

use std::time::{Duration, Instant};

use crate::support::mock::{MockServer, Reply};
use crate::support::procs::{MARK, Reap, alive, mcp_test_server, wait_for_marked, wait_for_pids, wait_until_gone};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// The pid of `parent`'s watchdog child (`glrs-reaper`), once it has one
/// (bounded).
fn watchdog_of(parent: u32) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .find(|pid: &i32| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // Field 4, after the parenthesised name (which may hold spaces).
                let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1));
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                ppid == Some(parent.to_string().as_str()) && cmdline.split(|b| *b == 0).next() == Some(b"glrs-reaper")
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(Instant::now() < deadline, "glrs-chat {parent} started no glrs-reaper child within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_chat_leaves_neither_its_mcp_server_nor_its_bash_command_running() {
    // The pid files in the chat's cwd: a writable root of the sandbox the
    // command runs in.
    let ts = TestStore::new();
    let dir = &ts.dir;
    let mcp_pids = dir.path().join("mcp-pids");
    let bash_pid = dir.path().join("bash-pid");
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
        "mcpServers": {"t": {"command": mcp_test_server(), "env": {"MCP_TEST_PIDS": mcp_pids}}},
    }));
    // Marked with the file's path: its `$$` is its PID namespace's.
    let command = format!("echo $$ > '{0}'; {MARK}='{0}' exec sleep 300", bash_pid.display());
    server.push(Reply::sse(openai_tool_call("call_0", "bash", &[&json!({"command": command}).to_string()])));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "sleep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let limit = Duration::from_secs(30);
    let children = [
        wait_for_pids(&mcp_pids, limit, "the MCP server")[0],
        wait_for_marked(&bash_pid, limit, "the bash command")[0],
    ];
    reap.0.extend(children);
    assert!(children.iter().all(|p| alive(*p)), "both running while the chat is");
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(&children, Duration::from_secs(10), "the MCP server and the bash command of the SIGKILLed chat");
}

#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_chat_leaves_no_api_key_command_running() {
    let dir = tempfile::tempdir().unwrap();
    let key_pid = dir.path().join("key-pid");
    let ts = TestStore::new();
    let server = MockServer::start();
    // `exec`: the command's pid is the chat's own child, the one the kernel
    // signals. (What it would start in the background is its group's, which
    // `crate::process::reaper` guards as it does `bash`'s: tested there.)
    let command = format!("echo $$ > '{}'; exec sleep 300", key_pid.display());
    ts.config(json!({
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "apiKeyCommand": command}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
    }));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.args(["-m", "openai/gpt-4.1", "-p", "hi"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let pid = wait_for_pids(&key_pid, Duration::from_secs(30), "the key command")[0];
    reap.0.push(pid);
    assert!(alive(pid), "the key command runs while the chat waits for it");
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(&[pid], Duration::from_secs(10), "the key command of the SIGKILLed chat");
}

#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_chat_leaves_nothing_its_bash_command_started_in_the_background() {
    // The pid files in the chat's cwd: a writable root of the sandbox the
    // command runs in.
    let ts = TestStore::new();
    let dir = &ts.dir;
    let sleep_pid = dir.path().join("sleep-pid");
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
    }));
    // The sleep is bash's child: the kernel's parent-death signal reaches
    // bash, not it.
    let command = format!("{MARK}='{0}' sleep 300 & echo $! > '{0}'; wait", sleep_pid.display());
    server.push(Reply::sse(openai_tool_call("call_0", "bash", &[&json!({"command": command}).to_string()])));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "sleep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut chat = cmd.spawn().unwrap();
    let mut reap = Reap(vec![chat.id() as i32]);
    let sleep = wait_for_marked(&sleep_pid, Duration::from_secs(30), "the bash command's backgrounded sleep")[0];
    reap.0.push(sleep);
    let watchdog = watchdog_of(chat.id());
    reap.0.push(watchdog);
    assert!(alive(sleep), "the backgrounded sleep runs while the chat does");
    let killed = Instant::now();
    chat.kill().unwrap();
    chat.wait().unwrap();
    wait_until_gone(
        &[sleep, watchdog],
        Duration::from_secs(10),
        "the backgrounded sleep and the watchdog of the SIGKILLed chat",
    );
    eprintln!("sleep and watchdog gone {:?} after the SIGKILL", killed.elapsed());
}

/// The pids of running `glrs-compact` processes whose command line holds
/// `tag`, once there is one (bounded).
fn compactions_tagged(tag: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|pid: &i32| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                args.first().is_some_and(|a| a.ends_with(b"glrs-compact")) && args.contains(&tag.as_bytes())
            })
            .filter(|pid| alive(*pid))
            .collect();
        if !found.is_empty() {
            return found;
        }
        assert!(Instant::now() < deadline, "no glrs-compact with {tag:?} in its arguments started within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_chat_leaves_no_background_compaction_running() {
    let (ts, server) = (TestStore::new(), MockServer::start());
    small_window(&ts, &server, false);
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 600));
    server.push(slow_words("w", 15, 600, 100));
    // The brief streams for a minute: glrs-compact runs long after the turn.
    server.push(slow_words("b", 600, 10, 100));
    // In glrs-compact's arguments, to tell it from other tests' ones.
    let tag = format!("bgkill-{}-{:?}", std::process::id(), Instant::now());
    // Under a shell, as at a terminal: the shell leads the terminal's
    // session, so the chat's death hangs nothing up (a pty led by the chat
    // itself would SIGHUP its process group, glrs-compact and all).
    let mut cmd = ts.std_cmd("sh");
    cmd.args(["-c", "\"$0\" \"$@\"; read x", env!("CARGO_BIN_EXE_glrs-chat"), "-m", "openai/gpt-4.1"])
        .env("TERM", "xterm-256color")
        .env("OPENAI_API_KEY", OPENAI_KEY);
    let mut p = crate::support::pty::spawn(cmd, false);
    crate::support::pty::prompt(&mut p);
    for (i, answer) in ["first answer", "second answer"].iter().enumerate() {
        p.send_line(&long(&format!("turn {i}"))).unwrap();
        p.exp_string(answer).unwrap();
        crate::support::pty::prompt(&mut p);
    }
    p.send_line(&long("streaming")).unwrap();
    p.exp_string("w1 ").unwrap();
    // Typed during the turn: the key watcher thread starts glrs-compact.
    p.send(&format!("/compact {tag}\r")).unwrap();
    p.flush().unwrap();
    p.exp_string("(compacting in the background").unwrap();
    // Killed while it streams the brief: its request must have arrived (the
    // mock fails a test whose scripted reply was never asked for).
    server.wait_for_model_requests(4, "glrs-compact's brief request");
    let compactions = compactions_tagged(&tag);
    let chat = crate::support::procs::parent_of(compactions[0]).unwrap();
    let _reap = Reap(compactions.iter().copied().chain([chat]).collect());
    let killed = Instant::now();
    // SAFETY: a plain kill(2) of the pid of the chat this test started.
    assert_eq!(unsafe { libc::kill(chat, libc::SIGKILL) }, 0, "SIGKILL the chat {chat}");
    wait_until_gone(&[chat], Duration::from_secs(10), "the SIGKILLed chat");
    wait_until_gone(&compactions, Duration::from_secs(10), "the background glrs-compact of the SIGKILLed chat");
    eprintln!("background glrs-compact gone {:?} after the SIGKILL", killed.elapsed());
}
