//! Resets on the next message (SPEC 16): a keyed session's reset rule is
//! checked before every user message, in the REPL as in one-shot mode.

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::pty::prompt;
use crate::support::sse::*;
use crate::support::*;
use glrs::SessionId;
use serde_json::json;

fn setup(reset: serde_json::Value) -> (TestStore, MockServer) {
    let ts = TestStore::new();
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "tools": {"enabled": false},
        "session": {"reset": reset},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 2, "baseDelayMs": 10},
    }));
    (ts, server)
}

fn session_ids(ts: &TestStore) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(ts.sessions_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 13 && n.ends_with(".json"))
        .map(|n| n[..8].to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn an_open_repl_past_the_idle_time_starts_the_keys_new_session_with_the_next_message() {
    let (ts, server) = setup(json!({"mode": "idle", "idleMinutes": 30}));
    server.push(Reply::sse(openai_text(&["first answer"], 5, 2, 0)));
    server.push(Reply::sse(openai_text(&["second answer"], 5, 2, 0)));
    let mut p = crate::support::pty::chat(&ts, &["--key", "work", "-m", "openai/gpt-4.1"], &[], false);
    prompt(&mut p);
    p.send_line("first").unwrap();
    p.exp_string("first answer").unwrap();
    prompt(&mut p);
    let old = SessionId::parse(&ts.only_session().0).unwrap();
    // While the REPL is open, the session's last activity moves back past
    // the idle time (another program's change).
    age(&ts, &old, Duration::from_secs(31 * 60));
    p.send_line("second").unwrap();
    p.exp_string("new session for key work: idle for more than 30 minutes").unwrap();
    p.exp_string(&format!("the old one: glrs-chat --resume {old}")).unwrap();
    p.exp_string("second answer").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();

    let ids = session_ids(&ts);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let new = ids.iter().find(|i| **i != old.as_str()).unwrap();
    let keys: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ts.sessions_dir().join("keys.json")).unwrap()).unwrap();
    assert_eq!(keys["work"]["session"], new.as_str(), "the key moved to the new session");
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ts.sessions_dir().join(format!("{new}.json"))).unwrap()).unwrap();
    assert_eq!(entry_types(&file), ["notice", "user", "assistant", "usage", "turn"]);
    assert_eq!(file["events"][0]["text"], "new session for key work: idle for more than 30 minutes");
    assert_eq!(file["events"][1]["text"], "second");
    assert_eq!(file["key"], "work");
    // The second request started fresh: only the new message.
    let requests = server.model_requests();
    assert_eq!(requests[1].body["messages"], json!([{"role": "user", "content": "second"}]));
    let old_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ts.store.session_path(&old)).unwrap()).unwrap();
    assert_eq!(entry_types(&old_file), ["user", "assistant", "usage", "turn"], "the old session is left as it was");
}

#[test]
fn one_shot_mode_resets_the_same_way_and_says_why() {
    let (ts, server) = setup(json!({"mode": "idle", "idleMinutes": 30}));
    server.push(Reply::sse(openai_text(&["one"], 5, 2, 0)));
    server.push(Reply::sse(openai_text(&["two"], 5, 2, 0)));
    server.push(Reply::sse(openai_text(&["three"], 5, 2, 0)));
    ts.chat().args(["--key", "cron:x", "-p", "one", "-m", "openai/gpt-4.1"]).assert().success();
    let old = SessionId::parse(&ts.only_session().0).unwrap();
    ts.chat().args(["--key", "cron:x", "-p", "two", "-m", "openai/gpt-4.1"]).assert().success();
    assert_eq!(session_ids(&ts).len(), 1, "within the idle time the key continues");
    age(&ts, &old, Duration::from_secs(3600));
    let out = ts.chat().args(["--key", "cron:x", "-p", "three", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("new session for key cron:x: idle for more than 30 minutes"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(session_ids(&ts).len(), 2);
}

#[test]
fn a_bad_allow_rule_with_a_key_creates_no_session_and_leaves_the_key_alone() {
    let (ts, _server) = setup(json!({"mode": "manual"}));
    let parent = ts.session("/tmp", &[user("the parent")]);
    for args in [vec!["--key", "work"], vec!["--key", "work", "--parent", parent.as_str()]] {
        let out =
            ts.chat().args(&args).args(["-m", "openai/gpt-4.1", "--allow", ":nothing", "-p", "hi"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("--allow \":nothing\""), "{}", stderr_of(&out));
        assert_eq!(session_ids(&ts), [parent.to_string()], "{args:?}: no session made, no fork");
        assert!(!ts.sessions_dir().join("keys.json").exists(), "{args:?}: the key names no session");
    }
}

#[test]
fn an_invalid_key_is_a_usage_error() {
    let (ts, _server) = setup(json!({"mode": "manual"}));
    for key in ["", "  ", "two\nlines"] {
        let out = ts.chat().args(["--key", key, "-m", "openai/gpt-4.1", "-p", "hi"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{key:?}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("invalid key"), "{}", stderr_of(&out));
        assert!(!ts.sessions_dir().exists() || session_ids(&ts).is_empty(), "{key:?}");
    }
}
