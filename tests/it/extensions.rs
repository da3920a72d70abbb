//! Extensions (SPEC 15): `glrs-sessions append` of custom entries and
//! notices, alone and racing a live chat turn.

use std::io::Write;
use std::process::Stdio;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

fn read_session(ts: &TestStore, id: &str) -> serde_json::Value {
    let text = std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    serde_json::from_slice(&text).expect("the session is one JSON document")
}

#[test]
fn append_adds_custom_entries_and_notices_that_never_reach_the_model() {
    let (ts, server) = store_and_server();
    let id = ts.session("/tmp", &[user("hello")]);
    let id = id.as_str();

    let out =
        ts.sessions().args(["append", id, "--custom", "deploy", r#"{"build": 42, "ok": true}"#]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "", "silent on success");

    let mut child = ts
        .std_cmd(env!("CARGO_BIN_EXE_glrs-sessions"))
        .args(["append", &id[..5], "--custom", "ci", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(br#"[1, "two"]"#).unwrap();
    assert!(child.wait().unwrap().success(), "a unique prefix and JSON from stdin");

    let out = ts.sessions().args(["append", id, "--notice", "backed up to s3"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let out = ts.sessions().args(["append", id, "--custom", "bare"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));

    let session = read_session(&ts, id);
    assert_eq!(entry_types(&session), ["user", "custom", "custom", "notice", "custom"]);
    let events = &session["events"];
    assert_eq!(
        (events[1]["name"].clone(), events[1]["data"].clone()),
        (json!("deploy"), json!({"build": 42, "ok": true}))
    );
    assert_eq!((events[2]["name"].clone(), events[2]["data"].clone()), (json!("ci"), json!([1, "two"])));
    assert_eq!(events[3]["text"], "backed up to s3");
    assert_eq!(events[4]["data"], json!(null));
    assert!(events[1]["at"].as_str().is_some_and(|at| at.ends_with('Z')));

    // Custom entries and notices are never sent to the model.
    server.push(Reply::sse(openai_text(&["ok"], 10, 1, 0)));
    let out = ts.chat().args(["--resume", id, "-p", "next", "--model", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let sent = server.model_requests()[0].body["messages"].clone();
    assert_eq!(sent, json!([{"role": "user", "content": "hello"}, {"role": "user", "content": "next"}]));
}

#[test]
fn append_refuses_bad_input_naming_what_is_wrong_and_writes_nothing() {
    let (ts, _server) = store_and_server();
    let id = ts.session("/tmp", &[user("hello")]);
    let id = id.as_str();
    let before = ts.snapshot();
    let cases: [(&[&str], &str, i32); 5] = [
        (&["--custom", "x", "{oops"], "the JSON argument is not valid JSON", 1),
        (&["--custom", " "], "--custom needs a non-empty NAME", 1),
        (&["--notice", "n", "--custom", "x"], "cannot be used with", 2),
        (&[], "required", 2),
        (&["--notice", "n", "{}"], "--custom", 2),
    ];
    for (args, message, code) in cases {
        let out = ts.sessions().arg("append").arg(id).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains(message), "{args:?}: {}", stderr_of(&out));
    }
    let out = ts.sessions().args(["append", "../etc", "--notice", "n"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let out = ts.sessions().args(["append", "abcdef12", "--notice", "n"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("abcdef12"), "{}", stderr_of(&out));
    assert_eq!(ts.snapshot(), before, "nothing was written");
}

#[test]
fn append_redacts_secrets_before_they_reach_the_file() {
    let (ts, _server) = store_and_server();
    let id = ts.session("/tmp", &[user("hello")]);
    let key = format!("sk-ant-api03-{}", "Q".repeat(40));
    let data = json!({"token": key}).to_string();
    let out = ts.sessions().args(["append", id.as_str(), "--custom", "leak", &data]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!ts.all_data_text().contains(&key), "the key reached a file");
    assert!(read_session(&ts, id.as_str())["events"][1]["data"]["token"].as_str().unwrap().contains("[REDACTED"));
}

#[test]
fn append_racing_a_live_chat_turn_keeps_both_in_a_valid_order() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["first"], 10, 1, 0)));
    let out = ts.chat().args(["-p", "start", "--model", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();

    // The turn's answer streams slowly; the custom entry lands meanwhile.
    server.push(slow_words("w", 20, 10, 50));
    let chat = ts
        .std_cmd(env!("CARGO_BIN_EXE_glrs-chat"))
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["--resume", &id, "-p", "second", "--model", "openai/gpt-4.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for_model_requests(2, "the slow second turn");
    let out = ts.sessions().args(["append", &id, "--custom", "ci", r#"{"run": 7}"#]).output().unwrap();
    assert!(out.status.success(), "append while the chat has the session open: {}", stderr_of(&out));
    let out = chat.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let session = read_session(&ts, &id);
    let types = entry_types(&session);
    assert_eq!(types.iter().filter(|t| *t == "custom").count(), 1, "{types:?}");
    // The first turn, then the second turn's entries in their own order;
    // the custom entry lands where the file was when it was appended
    // (before the chat's next write), never lost and never inside the
    // first turn.
    assert_eq!(&types[..4], ["user", "assistant", "usage", "turn"]);
    let rest: Vec<&str> = types[4..].iter().map(String::as_str).filter(|t| *t != "custom").collect();
    assert_eq!(rest, ["user", "assistant", "usage", "turn"], "{types:?}");
    let custom_at = types.iter().position(|t| t == "custom").unwrap();
    assert!(custom_at >= 4, "{types:?}");
    assert_eq!(session["events"][custom_at]["data"], json!({"run": 7}));
    let streamed: String = (0..20).map(|i| format!("w{i} ")).collect();
    assert_eq!(session["events"][types.len() - 3]["text"].as_str().map(str::trim_end), Some(streamed.trim_end()));
}

#[test]
fn executable_tools_are_described_called_with_stdin_and_env_and_fail_as_error_results() {
    let (ts, server) = store_and_server();
    let tools = ts.dir.path().join("config/glrs/tools");
    let proj = ts.dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    // A tool that reports what it was given: stdin, its cwd and its environment.
    shell_script(
        &tools.join("probe"),
        r#"if [ "$1" = --describe ]; then
  echo '{"name": "probe", "description": "reports its input", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}'
  exit 0
fi
input=$(cat)
echo "stdin=$input cwd=$(pwd) id=$GLRS_SESSION_ID file=$GLRS_SESSION_FILE"
echo "only on stderr" >&2"#,
    );
    shell_script(
        &tools.join("failing"),
        r#"if [ "$1" = --describe ]; then
  echo '{"name": "failing", "description": "always fails", "parameters": {"type": "object"}}'
  exit 0
fi
echo partial; echo "disk on fire" >&2; exit 7"#,
    );
    shell_script(&tools.join("broken"), "echo 'not json at all'");

    server.push(Reply::sse(openai_tool_call("call_1", "probe", &[r#"{"x": 5}"#])));
    server.push(Reply::sse(openai_tool_call("call_2", "failing", &["{}"])));
    server.push(Reply::sse(openai_text(&["done"], 10, 1, 0)));
    let out = ts
        .chat()
        .current_dir(&proj)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["--model", "openai/gpt-4.1", "--allow", "probe", "--allow", "failing", "-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert_eq!(err.matches("broken").count(), 1, "the broken tool is named once: {err}");
    assert!(err.contains("left out"), "{err}");

    let requests = server.model_requests();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(offered.contains(&"probe") && offered.contains(&"failing"), "{offered:?}");
    assert!(!offered.iter().any(|n| n.contains("broken")), "{offered:?}");
    let probe = &requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "probe")
        .unwrap()["function"];
    assert_eq!(probe["description"], "reports its input");
    assert_eq!(probe["parameters"]["properties"]["x"]["type"], "integer");

    let (id, session) = ts.only_session();
    let file = ts.sessions_dir().join(format!("{id}.json"));
    let tool_msg = |n: usize| {
        requests[n].body["messages"].as_array().unwrap().iter().rfind(|m| m["role"] == "tool").unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let expected =
        format!("stdin={{\"x\":5}} cwd={} id={id} file={}\n", proj.canonicalize().unwrap().display(), file.display());
    assert_eq!(tool_msg(1), expected, "stdout alone is the result");
    let failed = tool_msg(2);
    assert!(
        failed.contains("partial") && failed.contains("disk on fire") && failed.contains("exit code 7"),
        "{failed}"
    );
    let errors: Vec<bool> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool")
        .map(|e| e["isError"] == true)
        .collect();
    assert_eq!(errors, [false, true]);
}

#[test]
fn hooks_block_a_bash_call_add_context_to_a_prompt_and_are_cut_off_at_their_timeout() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let proj = ts.dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
        "hooks": {
            // `.`: the session's folder, by name (else `/`).
            "user_prompt": [{"command": "cat > prompt-event.json; echo 'context: the build is green'", "cwd": "."}],
            "tool_call": [{"command": "echo 'rm -rf is not allowed here' >&2; exit 2", "matcher": "bash:rm -rf*"}],
            "turn_end": [{"command": "sleep 60", "timeout": 1}]
        }
    }));
    server.push(Reply::sse(openai_tool_call("call_1", "bash", &[r#"{"command": "rm -rf victim"}"#])));
    server.push(Reply::sse(openai_text(&["ok"], 10, 1, 0)));
    std::fs::create_dir_all(proj.join("victim")).unwrap();
    let started = std::time::Instant::now();
    let out = ts
        .chat()
        .current_dir(&proj)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["--model", "openai/gpt-4.1", "--allow-all", "-p", "clean up"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the hanging hook was cut off");
    let err = stderr_of(&out);
    assert!(err.contains("turn_end hook `sleep 60` timed out after 1 s"), "{err}");
    assert!(proj.join("victim").exists(), "the blocked command never ran");

    let requests = server.model_requests();
    let first = requests[0].body["messages"].as_array().unwrap().iter().rfind(|m| m["role"] == "user").unwrap().clone();
    assert_eq!(first["content"], "clean up\n\ncontext: the build is green");
    let tool = requests[1].body["messages"].as_array().unwrap().iter().rfind(|m| m["role"] == "tool").unwrap().clone();
    assert_eq!(tool["content"], "blocked by a tool_call hook: rm -rf is not allowed here");
    let (id, _) = ts.only_session();
    let event: serde_json::Value =
        serde_json::from_slice(&std::fs::read(proj.join("prompt-event.json")).unwrap()).unwrap();
    assert_eq!(event["event"], "user_prompt");
    assert_eq!(event["prompt"], "clean up");
    assert_eq!(event["sessionId"], id.as_str());
    assert!(event["sessionFile"].as_str().unwrap().ends_with(&format!("{id}.json")));
}

#[test]
fn a_hook_is_done_when_its_shell_exits_and_its_long_output_is_cut_with_a_note() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let proj = ts.dir.path().join("proj");
    let cache = ts.dir.path().join("cache");
    std::fs::create_dir_all(&proj).unwrap();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
        "hooks": {"user_prompt": [
            // Its background child holds the hook's stdout open for 100 s.
            {"command": "sleep 100 & echo 'context: started in the background'", "timeout": 60},
            {"command": "seq 1 100000"}
        ]}
    }));
    server.push(Reply::sse(openai_text(&["ok"], 10, 1, 0)));
    let mut chat = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    chat.current_dir(&proj).env("OPENAI_API_KEY", OPENAI_KEY).env("XDG_CACHE_HOME", &cache).args([
        "--model",
        "openai/gpt-4.1",
        "-p",
        "go",
    ]);
    // Well within the hook's 60 s: the hook ends with its shell.
    let out = run_bounded(&mut chat, std::time::Duration::from_secs(20), "a chat whose hook left `sleep 100` running");
    assert!(out.status.success(), "{}", stderr_of(&out));

    let requests = server.model_requests();
    let user = requests[0].body["messages"].as_array().unwrap().iter().rfind(|m| m["role"] == "user").unwrap().clone();
    let text = user["content"].as_str().unwrap();
    assert!(
        text.starts_with("go\n\ncontext: started in the background\n\n[… 98000 earlier lines cut: "),
        "{}",
        &text[..200]
    );
    assert!(text.ends_with("\n100000") && text.len() < 60 * 1024, "{} bytes", text.len());
    let file = text.lines().nth(4).unwrap().split(" is in ").nth(1).unwrap().trim_end_matches(']');
    assert!(file.starts_with(ts.data_home().join("glrs/output").to_str().unwrap()), "{file}");
    assert_eq!(std::fs::read_to_string(file).unwrap().lines().count(), 100_000, "the file keeps all of it");
}

#[test]
fn appends_during_a_tool_call_turn_leave_every_request_with_its_calls_paired() {
    // Issue 24.1: the context rebuilt after a merge is the one the file
    // describes, so a tool result never goes without its call.
    let (ts, server) = store_and_server();
    let proj = ts.dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(proj.join("notes.txt"), "the notes\n").unwrap();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
    }));
    server.push(Reply::sse(openai_text(&["first"], 10, 1, 0)));
    let out = ts.chat().current_dir(&proj).args(["-p", "start", "--model", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();

    // The model takes about a second, then asks to read notes.txt.
    let call = openai_tool_call("call_1", "read", &[r#"{"path": "notes.txt"}"#]);
    let delay = 1000 / call.len() as u64;
    server.push(Reply::slow_sse(call, delay));
    server.push(Reply::sse(openai_text(&["read it"], 10, 1, 0)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appender = {
        let (stop, id) = (stop.clone(), id.clone());
        let env = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-sessions"));
        std::thread::spawn(move || {
            let mut k = 0;
            let mut failures = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let mut cmd = std::process::Command::new(env.get_program());
                cmd.env_clear().envs(env.get_envs().filter_map(|(k, v)| Some((k, v?))));
                let data = format!(r#"{{"n": {k}}}"#);
                let out = cmd.args(["append", &id, "--custom", "race", &data]).output().unwrap();
                if !out.status.success() {
                    failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
                }
                k += 1;
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            (k, failures)
        })
    };
    let out = ts
        .chat()
        .current_dir(&proj)
        .args(["--resume", &id, "-p", "read notes.txt", "--model", "openai/gpt-4.1"])
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (appended, failures) = appender.join().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(failures.is_empty(), "{failures:?}");
    assert!(appended >= 3, "the appends ran during the turn: {appended}");

    let requests = server.model_requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(crate::support::mock::pairing_problem(&r.path, &r.body), None, "{}", r.body);
    }
    let roles: Vec<&str> =
        requests[2].body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(&roles[roles.len() - 3..], ["user", "assistant", "tool"], "{roles:?}");
    let session = read_session(&ts, &id);
    assert_eq!(entry_types(&session).iter().filter(|t| *t == "custom").count(), appended);
}
