//! Subagents (SPEC 20): the `task` tool runs a child `glrs-chat` in a
//! session of its own, against the mock model, the parent's and each
//! child's requests told apart by their first user message
//! (`MockServer::push_for`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::agent::agent;
use crate::support::mock::{Captured, MockServer, Reply, first_user_text};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// A `task` call in one answer of the conversation that began with `route`.
fn task_call(server: &MockServer, route: &str, id: &str, input: Value) {
    server.push_for(route, Reply::sse(openai_tool_call(id, "task", &[&input.to_string()])));
}

/// A tool call in the conversation that began with `route`.
fn call_for(server: &MockServer, route: &str, id: &str, name: &str, input: Value) {
    server.push_for(route, Reply::sse(openai_tool_call(id, name, &[&input.to_string()])));
}

fn text_for(server: &MockServer, route: &str, text: &str) {
    server.push_for(route, Reply::sse(openai_text(&[text], 20, 5, 0)));
}

/// The model requests whose first user message holds `route`, in order.
fn requests_of(server: &MockServer, route: &str) -> Vec<Captured> {
    server.model_requests().into_iter().filter(|r| first_user_text(&r.body).contains(route)).collect()
}

/// The `tool` message answering `call_id` in a request.
fn result_of<'a>(request: &'a Captured, call_id: &str) -> &'a str {
    let messages = request.body["messages"].as_array().unwrap();
    let found = messages.iter().find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id);
    found.and_then(|m| m["content"].as_str()).unwrap_or_else(|| panic!("no result for {call_id}: {messages:?}"))
}

/// Every session file in the store, by id.
fn sessions(ts: &TestStore) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = std::fs::read_dir(ts.sessions_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 13 && n.ends_with(".json"))
        .map(|n| {
            let text = std::fs::read(ts.sessions_dir().join(&n)).unwrap();
            (n[..8].to_string(), serde_json::from_slice(&text).unwrap())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The parent (the session that is no subagent) and the children.
fn family(ts: &TestStore) -> ((String, Value), Vec<(String, Value)>) {
    let (children, parents): (Vec<_>, Vec<_>) = sessions(ts).into_iter().partition(|(_, s)| s["subagent"] == true);
    assert_eq!(parents.len(), 1, "one parent: {parents:?}");
    (parents.into_iter().next().unwrap(), children)
}

fn tool_names(request: &Captured) -> Vec<String> {
    let tools = request.body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_child_works_in_a_session_of_its_own_and_its_answer_comes_back_with_its_id() {
    let (ts, server, proj) = agent_setup(json!({}));
    std::fs::write(proj.join("a.txt"), "x").unwrap();
    task_call(&server, "parent:", "call_t", json!({"description": "list files", "prompt": "child: list the files"}));
    call_for(&server, "child:", "call_ls", "ls", json!({}));
    text_for(&server, "child:", "the child saw a.txt");
    text_for(&server, "parent:", "all done");
    let out = agent(&ts, &proj, &["-p", "parent: look around"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "all done");

    let child = requests_of(&server, "child:");
    assert_eq!(child.len(), 2, "the child's two model calls");
    let first = child[0].body["messages"].as_array().unwrap();
    assert_eq!(first.len(), 2, "only its system prompt and its prompt: {first:?}");
    assert_eq!(first[0]["role"], "system");
    assert!(first[0]["content"].as_str().unwrap().starts_with("You are glrs"), "{first:?}");
    assert!(!child[0].body.to_string().contains("parent: look around"), "nothing of the parent's conversation");
    assert_eq!(first[1], json!({"role": "user", "content": "child: list the files"}));
    assert!(!tool_names(&child[0]).contains(&"task".to_string()), "a child starts no children");
    assert!(result_of(&child[1], "call_ls").contains("a.txt"), "its tool ran");

    let ((parent_id, parent), children) = family(&ts);
    assert_eq!(children.len(), 1);
    let (child_id, child_session) = &children[0];
    let parent_requests = requests_of(&server, "parent:");
    let result = result_of(&parent_requests[1], "call_t");
    assert!(result.contains("the child saw a.txt") && result.contains(child_id.as_str()), "{result}");
    assert_eq!(child_session["parent"]["id"], parent_id.as_str());
    // As a fork's: the parent up to entry N is what the child came from
    // (the answer holding the call, its usage, the checkpoint before it);
    // the call's result is next.
    let entry = child_session["parent"]["entry"].as_u64().unwrap() as usize;
    let events = parent["events"].as_array().unwrap();
    assert!(events[..entry].iter().any(|e| e["type"] == "assistant" && e["toolCalls"][0]["id"] == "call_t"));
    assert_eq!((&events[entry]["type"], &events[entry]["name"]), (&json!("tool"), &json!("task")));
    assert_eq!(child_session["cwd"], parent["cwd"]);
    assert!(entry_types(child_session).contains(&"tool".to_string()), "{child_session}");
    let tool_entry = parent["events"].as_array().unwrap().iter().find(|e| e["type"] == "tool").unwrap();
    assert_eq!(tool_entry["name"], "task");
    assert_eq!(tool_entry["isError"], false);

    // ls --tree: the child under its parent.
    let out = ts.sessions().args(["ls", "--tree"]).output().unwrap();
    let listed = stdout_of(&out);
    let rows: Vec<&str> = listed.lines().collect();
    let at = rows.iter().position(|r| r.starts_with(parent_id.as_str())).unwrap();
    assert!(rows[at + 1].starts_with(child_id.as_str()) && rows[at + 1].contains("└ "), "{listed}");
    // status: the child's usage summed into the parent's.
    let out = ts.sessions().args(["status", &parent_id, "--json"]).output().unwrap();
    let status = json_of(&out);
    assert_eq!(status["subagents"]["sessions"], json!([child_id]));
    assert_eq!(status["subagents"]["usage"]["modelCalls"], 2);
    assert_eq!(status["usage"]["modelCalls"], 4, "two calls of the parent, two of the child");
    let out = ts.sessions().args(["status", &parent_id]).output().unwrap();
    assert!(stdout_of(&out).contains(&format!("subagents\t1, cost unknown ({child_id})")), "{}", stdout_of(&out));
    let out = ts.sessions().args(["status", child_id, "--json"]).output().unwrap();
    assert!(json_of(&out).get("subagents").is_none_or(Value::is_null), "a child has none of its own");
}

#[test]
fn a_compaction_of_the_parent_keeps_the_childs_session_among_the_exact_references() {
    let (ts, server, proj) = agent_setup(json!({"keepRecentTokens": 10}));
    task_call(&server, "parent:", "call_t", json!({"description": "look", "prompt": "child: look"}));
    text_for(&server, "child:", "the child looked");
    text_for(&server, "parent:", "first done");
    assert!(agent(&ts, &proj, &["-p", "parent: first"]).status.success());
    let ((parent_id, _), children) = family(&ts);
    text_for(&server, "parent:", "second done");
    // Long enough to be what is kept: the first turn is what is replaced.
    assert!(agent(&ts, &proj, &["--resume", &parent_id, "-p", &long("parent: second")]).status.success());
    server.push(Reply::sse(openai_text(&["the work went on"], 1, 1, 0)));
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([parent_id.as_str(), "--no-flush", "-m", "openai/gpt-4.1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (_, parent) = family(&ts).0;
    let compacted = parent["events"].as_array().unwrap().iter().find(|e| e["type"] == "compacted");
    let compacted = compacted.unwrap_or_else(|| panic!("no compaction: {} {}", stdout_of(&out), stderr_of(&out)));
    let brief = compacted["brief"].as_str().unwrap();
    assert!(brief.contains(&format!("`glrs-sessions show {}`", children[0].0)), "{brief}");
}

#[test]
fn three_children_run_at_once_and_their_results_come_back_in_call_order() {
    let (ts, server, proj) = agent_setup(json!({}));
    let calls: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            (
                format!("call_{n}"),
                json!({"description": format!("job {n}"), "prompt": format!("child {n}: work")}).to_string(),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls.iter().map(|(id, input)| (id.as_str(), "task", input.as_str())).collect();
    server.push_for("parent:", Reply::sse(openai_tool_calls(&refs)));
    for n in ["a", "b", "c"] {
        // Five events 400 ms apart: each child's answer takes 2 s.
        let answer = format!("answer of {n}");
        server.push_for(&format!("child {n}:"), Reply::slow_sse(openai_text(&[&answer], 20, 5, 0), 400));
    }
    text_for(&server, "parent:", "merged");
    let started = Instant::now();
    let out = agent(&ts, &proj, &["-p", "parent: three jobs"]);
    let took = started.elapsed();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(took < Duration::from_secs(5), "three 2 s children took {took:?}: they did not run at once");
    let second = &requests_of(&server, "parent:")[1];
    let ids: Vec<&str> = second.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c"]);
    for n in ["a", "b", "c"] {
        let result = result_of(second, &format!("call_{n}"));
        assert!(result.starts_with(&format!("answer of {n}")), "{result}");
    }
    assert_eq!(family(&ts).1.len(), 3);
}

#[test]
fn a_child_gets_the_parents_permissions_never_more() {
    let (ts, server, proj) = agent_setup(json!({}));
    // A hostile child: it tries to write two files and to start a child.
    task_call(&server, "parent:", "call_t", json!({"description": "write", "prompt": "child: write things"}));
    call_for(&server, "child:", "w1", "write", json!({"path": "allowed.txt", "content": "ok"}));
    call_for(&server, "child:", "w2", "write", json!({"path": "other.txt", "content": "no"}));
    call_for(&server, "child:", "t1", "task", json!({"description": "x", "prompt": "grandchild: hi"}));
    text_for(&server, "child:", "tried");
    text_for(&server, "parent:", "done");
    // Sandbox off: the rules alone decide (a sandbox would let writes in
    // the cwd through without asking), and the child gets that mode too.
    let out = agent(&ts, &proj, &["--sandbox", "off", "--allow", "write:allowed.txt", "-p", "parent: delegate"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (_, children) = family(&ts);
    assert_eq!(children[0].1["sandbox"], "off", "the parent's sandbox mode: {}", children[0].1);
    assert_eq!(std::fs::read_to_string(proj.join("allowed.txt")).unwrap(), "ok", "what the parent may, the child may");
    assert!(!proj.join("other.txt").exists(), "the parent may not write other.txt without asking: nor may its child");
    let child = requests_of(&server, "child:");
    let denied = result_of(&child[2], "w2");
    assert!(denied.contains("permission denied") && denied.contains("no terminal"), "its model sees why: {denied}");
    assert!(result_of(&child[3], "t1").contains("unknown tool"), "no grandchildren");
    assert!(requests_of(&server, "grandchild:").is_empty());
}

#[test]
fn a_named_agent_runs_with_its_own_system_prompt_model_and_tools() {
    let (ts, server, proj) = agent_setup(json!({}));
    let agents = ts.dir.path().join("config/glrs/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\ndescription: Reviews a diff for bugs\nmodel: openai/gpt-4.1-mini\ntools: [read, grep]\n---\nYou are the reviewer. Be terse.\n",
    )
    .unwrap();
    task_call(
        &server,
        "parent:",
        "call_t",
        json!({"description": "review", "prompt": "child: review it", "agent": "reviewer"}),
    );
    text_for(&server, "child:", "looks fine");
    text_for(&server, "parent:", "ok");
    let out = agent(&ts, &proj, &["--sandbox", "read-only", "-p", "parent: review my diff"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (_, children) = family(&ts);
    assert_eq!(children[0].1["sandbox"], "read-only", "the parent's sandbox mode: {}", children[0].1);
    let parent = &requests_of(&server, "parent:")[0];
    let task = parent.body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "task").unwrap();
    let description = task["function"]["description"].as_str().unwrap();
    assert!(description.contains("reviewer: Reviews a diff for bugs"), "the model is told the agents: {description}");
    let child = &requests_of(&server, "child:")[0];
    assert_eq!(child.body["messages"][0]["content"], "You are the reviewer. Be terse.");
    assert_eq!(child.body["model"], "gpt-4.1-mini");
    assert_eq!(tool_names(child), ["read", "grep"]);
    let parent_requests = requests_of(&server, "parent:");
    assert!(result_of(&parent_requests[1], "call_t").contains("looks fine"));
}

/// A child whose `bash` writes `pids` and sleeps, marked with its path
/// (its `$$` is its PID namespace's): what must not outlive the parent.
fn sleeping_child(server: &MockServer, pids: &Path) {
    task_call(server, "parent:", "call_t", json!({"description": "sleep", "prompt": "child: sleep"}));
    let mark = crate::support::procs::MARK;
    let command = format!("echo started > '{0}'; {mark}='{0}' exec sleep 60", pids.display());
    call_for(server, "child:", "call_b", "bash", json!({"command": command}));
}

/// The child's sleeping `bash` and everything between it and `parent`
/// (the child `glrs-chat` and the sandbox's processes), once it runs.
fn child_and_its_bash(pids: &Path, parent: u32) -> Vec<i32> {
    use crate::support::procs::{ancestors_below, wait_for_marked};
    let mut running = wait_for_marked(pids, Duration::from_secs(20), "the child's bash");
    running.extend(ancestors_below(running[0], parent as i32));
    running
}

#[test]
fn sigkill_of_a_one_shot_parent_leaves_no_child_and_the_session_goes_on() {
    let (ts, server, proj) = agent_setup(json!({}));
    // In the cwd: inside the writable roots of the default sandbox.
    let pids = proj.join("pids");
    sleeping_child(&server, &pids);
    let mut parent = ts
        .std_cmd(env!("CARGO_BIN_EXE_glrs-chat"))
        .current_dir(&proj)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "parent: sleep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = child_and_its_bash(&pids, parent.id());
    assert!(running.len() >= 2, "the sleep and the child glrs-chat: {running:?}");
    parent.kill().unwrap();
    parent.wait().unwrap();
    crate::support::procs::wait_until_gone(&running, Duration::from_secs(10), "the child glrs-chat and its bash");
    let ((parent_id, _), _) = family(&ts);
    text_for(&server, "parent:", "back again");
    let out = ts.chat().current_dir(&proj).args(["--resume", &parent_id, "-p", "again"]).output().unwrap();
    assert!(out.status.success(), "the next request is valid: {}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "back again");
}

#[test]
fn esc_in_the_repl_stops_the_child_and_the_next_request_pairs_its_call() {
    let (ts, server, _proj) = agent_setup(json!({}));
    let pids = ts.dir.path().join("pids");
    sleeping_child(&server, &pids);
    // A terminal 100 columns wide, so the live line is shown whole.
    let mut p = crate::support::pty::hangable_chat(&ts, &["-m", "openai/gpt-4.1", "--allow-all"], &[]);
    p.expect("% > ");
    p.send("parent: sleep\r");
    let running = child_and_its_bash(&pids, p.child.id());
    // The child's live line: its description, its tool calls, its time.
    p.expect("task  sleep  (1 tool, ");
    p.send("\x1b");
    crate::support::procs::wait_until_gone(&running, Duration::from_secs(10), "the child glrs-chat and its bash");
    // Its result like any tool's, under the line it had.
    p.expect("interrupted by the user: the subagent was stopped");
    p.expect("% > ");
    text_for(&server, "parent:", "fine then");
    p.send("go on\r");
    p.expect("fine then");
    p.expect("% > ");
    p.send("/quit\r");
    assert!(p.wait_exit(Duration::from_secs(20)).success());
    let next = requests_of(&server, "parent:").pop().unwrap();
    let result = result_of(&next, "call_t");
    let (_, children) = family(&ts);
    assert!(result.contains("interrupted") && result.contains(children[0].0.as_str()), "{result}");
}
