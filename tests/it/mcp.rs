//! MCP servers (SPEC 15), with a server built from `rmcp`'s server side
//! (`examples/mcp_test_server.rs`: tools `echo` and `fail`, and with
//! `--more-tools` `sleep` and `grow`): its tools are offered and called
//! through the permissions, a server that fails to start is reported and
//! the chat goes on, one killed mid-session answers with errors, HTTP
//! servers work (and one that goes away is found dead), `/mcp` lists them,
//! the per-server limits hold, tools a server adds are offered from the
//! next request on, and nothing a server started outlives the chat.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::mock::{MockServer, Reply};
use crate::support::procs::{alive, mcp_test_server, wait_for_pids, wait_until_gone};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// A store whose config points the model at `server` and has `mcp` as its
/// `mcpServers`.
fn setup(mcp: Value) -> (TestStore, MockServer) {
    let ts = TestStore::new();
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "tools": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1, "baseDelayMs": 10},
        "mcpServers": mcp,
    }));
    (ts, server)
}

fn stdio_server(pids: Option<&Path>, args: &[&str]) -> Value {
    let mut server = json!({"command": mcp_test_server(), "args": args});
    if let Some(pids) = pids {
        server["env"] = json!({"MCP_TEST_PIDS": pids});
    }
    server
}

fn one_shot(ts: &TestStore, args: &[&str]) -> std::process::Output {
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY).args(["-m", "openai/gpt-4.1"]).args(args);
    run_bounded(&mut cmd, Duration::from_secs(60), "glrs-chat with MCP servers")
}

fn call(server: &MockServer, n: usize, name: &str, input: Value) {
    server.push(Reply::sse(openai_tool_call(&format!("call_{n}"), name, &[&input.to_string()])));
}

/// The tool results the `n`th model request carries (OpenAI shape).
fn tool_results(server: &MockServer, n: usize) -> Vec<String> {
    let requests = server.model_requests();
    requests[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn offered(server: &MockServer, n: usize) -> Vec<String> {
    let requests = server.model_requests();
    let tools = requests[n].body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

/// The `tool` entries of the only session: (name, result, isError).
fn tool_entries(ts: &TestStore) -> Vec<(String, String, bool)> {
    let (_, session) = ts.only_session();
    let events = session["events"].as_array().unwrap().clone();
    events
        .iter()
        .filter(|e| e["type"] == "tool")
        .map(|e| (e["name"].as_str().unwrap().into(), e["result"].as_str().unwrap().into(), e["isError"] == true))
        .collect()
}

/// How long a test server may take to start and write its pids.
const STARTING: Duration = Duration::from_secs(20);
/// How long its processes may take to end once they should.
const ENDING: Duration = Duration::from_secs(10);

#[test]
fn a_server_tool_is_offered_and_called_and_its_result_reaches_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let (ts, server) = setup(json!({"t": stdio_server(Some(&pids), &["--spawn-child"])}));
    call(&server, 1, "mcp__t__echo", json!({"text": "hi there"}));
    call(&server, 2, "mcp__t__fail", json!({"reason": "on purpose"}));
    server.push(Reply::sse(openai_text(&["done"], 10, 1, 0)));
    let out = one_shot(&ts, &["--allow", "mcp__t__*", "-p", "use the tools"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "done\n");

    let names = offered(&server, 0);
    assert_eq!(names, ["mcp__t__echo", "mcp__t__fail"], "both tools, nothing built in");
    let echo = &server.model_requests()[0].body["tools"][0]["function"];
    assert_eq!(echo["parameters"]["properties"]["text"]["type"], "string", "{echo}");
    assert!(echo["description"].as_str().unwrap().contains("prefixed with 'echo: '"), "{echo}");
    assert_eq!(tool_results(&server, 1), ["echo: hi there"]);
    assert_eq!(tool_results(&server, 2)[1], "failed: on purpose");
    let entries = tool_entries(&ts);
    assert_eq!(entries[0], ("mcp__t__echo".into(), "echo: hi there".into(), false));
    assert_eq!(entries[1], ("mcp__t__fail".into(), "failed: on purpose".into(), true), "isError: an error result");

    // The server and the process it started are gone with the chat.
    let started = wait_for_pids(&pids, STARTING, "the MCP test server");
    wait_until_gone(&started, ENDING, "the MCP server and its child after the chat exited");
}

#[test]
fn a_server_that_fails_to_start_is_reported_once_and_the_chat_goes_on() {
    let (ts, server) = setup(json!({
        "gone": {"command": "/nonexistent/mcp-server"},
        "broken": {"command": "sh", "args": ["-c", "echo bad config line >&2; exit 3"]},
        "t": stdio_server(None, &[]),
    }));
    // No rule allows it: in one-shot mode the call is denied, naming the rule.
    call(&server, 1, "mcp__t__echo", json!({"text": "x"}));
    server.push(Reply::sse(openai_text(&["still here"], 10, 1, 0)));
    let out = one_shot(&ts, &["-p", "hello"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "still here\n");
    let err = stderr_of(&out);
    assert_eq!(err.matches("MCP server gone failed to start").count(), 1, "{err}");
    assert!(err.contains("cannot run \"/nonexistent/mcp-server\""), "{err}");
    assert_eq!(err.matches("MCP server broken failed to start").count(), 1, "{err}");
    assert!(err.contains("bad config line"), "its stderr says why: {err}");
    assert_eq!(offered(&server, 0), ["mcp__t__echo", "mcp__t__fail"]);
    let denied = &tool_results(&server, 1)[0];
    assert!(denied.contains("mcp__t__echo") && denied.contains("--allow"), "{denied}");
}

#[test]
fn a_server_killed_mid_session_turns_its_next_call_into_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let (ts, server) = setup(json!({"t": stdio_server(Some(&pids), &[])}));
    // Slow enough that the server is killed before the call is made.
    let events = openai_tool_call("call_1", "mcp__t__echo", &[r#"{"text": "#, r#""late"}"#]);
    server.push(Reply::slow_sse(events, 400));
    server.push(Reply::sse(openai_text(&["noted"], 10, 1, 0)));
    let chat = std::thread::spawn({
        let ts_cmd = {
            let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
            cmd.env("OPENAI_API_KEY", OPENAI_KEY).args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "go"]);
            cmd
        };
        move || {
            let mut cmd = ts_cmd;
            run_bounded(&mut cmd, Duration::from_secs(60), "glrs-chat")
        }
    });
    server.wait_for_model_requests(1, "the first model request");
    let pid = wait_for_pids(&pids, STARTING, "the MCP test server")[0];
    // SAFETY: a plain signal to the test server's pid.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait_until_gone(&[pid], ENDING, "the killed server");
    let out = chat.join().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "noted\n");
    let (name, result, is_error) = tool_entries(&ts).remove(0);
    assert_eq!(name, "mcp__t__echo");
    assert!(is_error && result.contains("MCP server t"), "{result}");
    assert!(stderr_of(&out).contains("MCP server t stopped"), "{}", stderr_of(&out));
}

/// Kills the HTTP test server when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The test server in HTTP mode, and its URL once it printed its port.
fn http_server() -> (Killed, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(mcp_test_server())
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let guard = Killed(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).expect("the HTTP test server printing its port");
    let port: u16 = line.trim().parse().unwrap();
    (guard, format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
fn a_streamable_http_server_is_reached_with_its_headers() {
    let (_guard, url) = http_server();
    // A header's ${VAR} is filled in from the environment.
    let (ts, server) = setup(json!({"web": {"url": url, "headers": {"X-Test": "from ${MCP_TEST_WORD}"}}}));
    call(&server, 1, "mcp__web__echo", json!({"text": "over http"}));
    server.push(Reply::sse(openai_text(&["ok"], 10, 1, 0)));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY).env("MCP_TEST_WORD", "the environment");
    cmd.args(["-m", "openai/gpt-4.1", "--allow", "mcp__web__echo", "-p", "go"]);
    let out = run_bounded(&mut cmd, Duration::from_secs(60), "glrs-chat with an HTTP MCP server");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(tool_results(&server, 1), ["echo: over http (X-Test: from the environment)"]);
}

#[test]
fn mcp_in_the_repl_lists_servers_their_state_and_tools_and_quitting_stops_them() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let (ts, _server) = setup(json!({
        "t": stdio_server(Some(&pids), &["--spawn-child"]),
        "broken": {"command": "/nonexistent/mcp-server"},
    }));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    crate::support::pty::prompt(&mut p);
    p.send_line("/mcp").unwrap();
    p.exp_string("broken  failed: cannot run").unwrap();
    p.exp_string("t  running").unwrap();
    p.exp_string("mcp__t__echo  Send the text back").unwrap();
    p.exp_string("mcp__t__fail  Always fail").unwrap();
    crate::support::pty::prompt(&mut p);
    let started = wait_for_pids(&pids, STARTING, "the MCP test server");
    assert!(started.iter().all(|p| alive(*p)), "running while the chat is");
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    wait_until_gone(&started, ENDING, "the MCP server and its child after /quit");
}

#[test]
fn sigterm_at_the_prompt_stops_the_servers_too() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let (ts, _server) = setup(json!({"t": stdio_server(Some(&pids), &["--spawn-child"])}));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    crate::support::pty::prompt(&mut p);
    let started = wait_for_pids(&pids, STARTING, "the MCP test server");
    p.process_mut().signal(rexpect::process::Signal::SIGTERM).unwrap();
    p.exp_eof().unwrap();
    wait_until_gone(&started, ENDING, "the MCP server and its child after SIGTERM");
}

#[test]
fn no_tools_starts_no_servers_and_only_the_chat_starts_them() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let (ts, server) = setup(json!({"t": stdio_server(Some(&pids), &[])}));
    server.push(Reply::sse(openai_text(&["plain"], 10, 1, 0)));
    let out = one_shot(&ts, &["--no-tools", "-p", "hi"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!pids.exists(), "--no-tools: no server started");
    assert!(server.model_requests()[0].body.get("tools").is_none_or(|t| t == &json!([])));
    // In the source: only glrs-chat's entry starts servers (unit test
    // modules, `tests.rs`, start them to test them).
    let mut starters = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            } else if std::fs::read_to_string(&path).unwrap().contains("Servers::start(") {
                starters.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    starters.sort();
    assert_eq!(starters, ["cli/chat.rs"], "only the chat starts MCP servers");
}

#[test]
fn the_readme_mcp_example_is_a_valid_config() {
    // The guide's example (the user docs' one block that names the server).
    let block = crate::recipes::readme_block("json", "@modelcontextprotocol/server-filesystem");
    let config = glrs::config::Config::parse(&block).unwrap();
    let servers = glrs::config::mcp::check_all(&config.mcp_servers).unwrap();
    assert_eq!(servers.len(), 1);
    assert!(matches!(&servers[0].transport, glrs::mcp::Transport::Stdio { command, .. } if command == "npx"));
}

#[test]
fn the_first_request_waits_for_a_slow_server_and_says_so() {
    let exe = mcp_test_server();
    let dir = tempfile::tempdir().unwrap();
    let said = dir.path().join("chat.stderr");
    // Slow until the chat says it waits for it (bounded: 20 s), so the
    // first request is sure to find it still starting.
    let slow = format!(
        "i=0; while ! grep -qs 'waiting for MCP servers' '{}' && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; \
         exec '{}'",
        said.display(),
        exe.display()
    );
    let (ts, server) = setup(json!({"slow": {"command": "sh", "args": ["-c", slow]}}));
    server.push(Reply::sse(openai_text(&["ready"], 10, 1, 0)));
    // The chat's stderr goes to the file the server watches.
    let mut cmd = ts.std_cmd("sh");
    cmd.env("OPENAI_API_KEY", OPENAI_KEY).args(["-c", "exec \"$@\" 2> \"$0\""]).arg(&said).args([
        env!("CARGO_BIN_EXE_glrs-chat"),
        "-m",
        "openai/gpt-4.1",
        "-p",
        "hi",
    ]);
    let out = run_bounded(&mut cmd, Duration::from_secs(60), "glrs-chat with a slow MCP server");
    let stderr = std::fs::read_to_string(&said).unwrap_or_default();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("(waiting for MCP servers to start)"), "{stderr}");
    assert_eq!(offered(&server, 0), ["mcp__slow__echo", "mcp__slow__fail"], "its tools, once it started");
}

#[test]
fn a_server_still_in_its_handshake_is_stopped_when_the_chat_ends() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // It never answers: still starting when the user leaves.
    let script = format!("echo $$ > '{}'; exec sleep 300", pids.display());
    let (ts, _server) = setup(json!({"mute": {"command": "sh", "args": ["-c", script]}}));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    crate::support::pty::prompt(&mut p);
    let started = wait_for_pids(&pids, STARTING, "the MCP test server");
    assert!(alive(started[0]), "starting while the prompt is shown: start-up did not wait for it");
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    wait_until_gone(&started, ENDING, "a server in its handshake after /quit");
}

#[test]
fn a_bad_limit_fails_at_load_naming_its_key() {
    for (key, value) in
        [("toolTimeoutSec", json!(0)), ("startupTimeoutSec", json!(601)), ("toolTimeoutSec", json!("9"))]
    {
        let mut entry = stdio_server(None, &[]);
        entry[key] = value.clone();
        let (ts, _server) = setup(json!({ "t": entry }));
        let out = one_shot(&ts, &["-p", "hi"]);
        assert!(!out.status.success(), "{key}: {value}");
        let err = stderr_of(&out);
        assert!(err.contains(&format!("mcpServers.t.{key}")), "{key}: {value}: {err}");
    }
}

#[test]
fn a_call_past_tool_timeout_sec_is_an_error_result_naming_the_limit() {
    let mut entry = stdio_server(None, &["--more-tools"]);
    entry["toolTimeoutSec"] = json!(0.5);
    let (ts, server) = setup(json!({ "t": entry }));
    call(&server, 1, "mcp__t__sleep", json!({"seconds": 60}));
    server.push(Reply::sse(openai_text(&["gave up"], 10, 1, 0)));
    let started = Instant::now();
    let out = one_shot(&ts, &["--allow", "mcp__t__*", "-p", "nap"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "the call was cut at its limit, not the sleep's end");
    let result = &tool_results(&server, 1)[0];
    assert_eq!(result, "the MCP server t did not answer within 0.5 s (mcpServers.t.toolTimeoutSec)");
    assert!(tool_entries(&ts)[0].2, "an error result");
}

#[test]
fn tools_a_server_adds_and_removes_are_offered_from_the_next_request_on() {
    let (ts, server) = setup(json!({"t": stdio_server(None, &["--more-tools"])}));
    // `grow` takes itself off the list and puts `late` on it, then answers.
    call(&server, 1, "mcp__t__grow", json!({}));
    call(&server, 2, "mcp__t__late", json!({"text": "new"}));
    server.push(Reply::sse(openai_text(&["done"], 10, 1, 0)));
    let out = one_shot(&ts, &["--allow", "mcp__t__*", "-p", "grow"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(offered(&server, 0), ["mcp__t__echo", "mcp__t__fail", "mcp__t__grow", "mcp__t__sleep"]);
    assert_eq!(tool_results(&server, 1), ["grown: 'late' is listed now"]);
    assert_eq!(
        offered(&server, 1),
        ["mcp__t__echo", "mcp__t__fail", "mcp__t__sleep", "mcp__t__late"],
        "the request right after the notification: grow gone, late offered"
    );
    assert_eq!(tool_results(&server, 2)[1], "late: new");
}

#[test]
fn an_http_server_that_goes_away_is_reported_once_and_its_tools_answer_errors() {
    let (mut guard, url) = http_server();
    let (ts, server) = setup(json!({"web": {"url": url}}));
    // Slow enough that the server is gone before the call is made.
    let events = openai_tool_call("call_1", "mcp__web__echo", &[r#"{"text": "#, r#""gone?"}"#]);
    server.push(Reply::slow_sse(events, 400));
    call(&server, 2, "mcp__web__echo", json!({"text": "again"}));
    server.push(Reply::sse(openai_text(&["noted"], 10, 1, 0)));
    let chat = std::thread::spawn({
        let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
        cmd.env("OPENAI_API_KEY", OPENAI_KEY).args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "go"]);
        move || run_bounded(&mut cmd, Duration::from_secs(60), "glrs-chat with an HTTP server that goes away")
    });
    server.wait_for_model_requests(1, "the first model request");
    guard.0.kill().unwrap();
    guard.0.wait().unwrap();
    let out = chat.join().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "noted\n");
    let entries = tool_entries(&ts);
    assert!(entries[0].2 && entries[0].1.contains("the MCP server web failed the call"), "{entries:?}");
    assert!(entries[1].2 && entries[1].1.contains("the MCP server web is not running (stopped: "), "{entries:?}");
    let err = stderr_of(&out);
    assert_eq!(err.matches("MCP server web stopped").count(), 1, "reported once: {err}");
}
