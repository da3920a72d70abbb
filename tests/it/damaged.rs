//! Issue 33 item 3: one bad line must not lock a session away. A garbage
//! line inside a session file is read past by every program (kept, shown
//! as damaged, never sent to a model), and `glrs-sessions repair` rewrites
//! the file with the line kept as a `custom` entry and a `.bak` beside it.

use crate::support::*;
use serde_json::json;

const GARBAGE: &str = "this line is garbage {\"half\": 1";

/// A session in the store's layout with a garbage line between its two
/// entries: the user's question and the model's answer.
fn damaged(ts: &TestStore) -> (std::path::PathBuf, Vec<u8>) {
    let text = format!(
        "{{\"schema\":2,\"id\":\"3f9a1c2b\",\"createdAt\":\"2026-11-01T10:00:00.000Z\",\"updatedAt\":\"2026-11-01T10:00:05.000Z\",\"cwd\":\"/tmp\",\"model\":\"openai/gpt-4.1\",\"title\":\"hello\",\"events\":[\n\
         {{\"type\":\"user\",\"at\":\"2026-11-01T10:00:01.000Z\",\"text\":\"name a prime\"}},\n\
         {GARBAGE}\n\
         {{\"type\":\"assistant\",\"at\":\"2026-11-01T10:00:02.000Z\",\"text\":\"seven\",\"model\":\"openai/gpt-4.1\",\"toolCalls\":[],\"stopReason\":\"stop\"}}\n\
         ],\"contextTokens\":12}}\n"
    );
    let path = ts.write_raw(&ts.sessions_dir(), "3f9a1c2b", &text);
    (path, text.into_bytes())
}

#[test]
fn every_program_reads_past_a_damaged_line_and_changes_nothing() {
    let ts = TestStore::new();
    let (path, original) = damaged(&ts);
    let ls = ts.sessions().arg("ls").output().unwrap();
    assert!(ls.status.success(), "{}", stderr_of(&ls));
    assert!(stdout_of(&ls).starts_with("3f9a1c2b\t"), "ls shows it: {}", stdout_of(&ls));
    let show = ts.sessions().args(["show", "3f9a"]).output().unwrap();
    assert!(show.status.success(), "{}", stderr_of(&show));
    let text = stdout_of(&show);
    assert!(text.contains("[2] damaged · line 3 of the file") && text.contains(GARBAGE), "{text}");
    assert!(text.contains("[3] assistant") && text.contains("seven"), "{text}");
    for args in [vec!["status", "3f9a"], vec!["export", "3f9a"], vec!["export", "3f9a", "--format", "html"]] {
        let out = ts.sessions().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
    }
    assert_eq!(std::fs::read(&path).unwrap(), original, "reading changes nothing");
    let fork = ts.cmd("glrs-fork").arg("3f9a").output().unwrap();
    assert!(fork.status.success(), "{}", stderr_of(&fork));
    let copy = stdout_of(&fork).trim().to_string();
    let shown = ts.sessions().args(["show", &copy, "--json"]).output().unwrap();
    let events = json_of(&shown)["events"].clone();
    assert_eq!(events[1]["data"], json!({"line": 3, "text": GARBAGE}), "the fork keeps the line: {events}");
    assert_eq!(std::fs::read(&path).unwrap(), original, "forking changes nothing");
}

#[test]
fn a_resumed_damaged_session_goes_on_and_the_line_never_reaches_the_model() {
    let (ts, server) = store_and_server();
    let (path, _) = damaged(&ts);
    server.push(text_reply("eleven", 20));
    let out = ts.chat().args(["--resume", "3f9a", "-p", "another?"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "eleven\n");
    let request = server.model_requests().pop().unwrap();
    let sent = request.body["messages"].to_string();
    assert!(!sent.contains("garbage"), "{sent}");
    let roles: Vec<&str> =
        request.body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles[roles.len() - 3..], ["user", "assistant", "user"], "{sent}");
    let now = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
    assert!(now.contains("garbage"), "the line is kept: {now}");
}

#[test]
fn repair_keeps_every_line_as_an_entry_and_the_original_as_bak() {
    let ts = TestStore::new();
    let (path, original) = damaged(&ts);
    let out = ts.sessions().args(["repair", "3f9a", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let report = json_of(&out);
    assert_eq!(report["lines"], json!([3]));
    let bak = ts.sessions_dir().join("3f9a1c2b.json.bak");
    assert_eq!(report["backup"], json!(bak.to_string_lossy()));
    assert_eq!(std::fs::read(&bak).unwrap(), original, "the .bak is the original, byte for byte");
    // The file is whole now: it parses as JSON, with the line as an entry in its place.
    let now: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("whole JSON");
    let events = now["events"].as_array().unwrap();
    assert_eq!(entry_types(&now), ["user", "custom", "assistant"]);
    assert_eq!(events[1]["name"], "damaged");
    assert_eq!(events[1]["data"], json!({"line": 3, "text": GARBAGE}));
    // Again: nothing to repair, nothing written.
    let again = ts.sessions().args(["repair", "3f9a"]).output().unwrap();
    assert!(again.status.success() && stderr_of(&again).contains("nothing to repair"), "{}", stderr_of(&again));
    assert!(!ts.sessions_dir().join("3f9a1c2b.json.bak.2").exists());
    // rm takes the .bak with the session.
    ts.sessions().args(["rm", "3f9a"]).assert().success();
    assert!(!bak.exists(), "the original goes with its session");
}
