//! Reads from the end of a long session (issue 24, items 16 and 17):
//! `show --tail N`, `status` and a resumed turn read only what they use,
//! helped by the scan kept beside the file (`<id>.scan`), and answer
//! exactly as a whole read does.

use crate::support::mock::MockServer;
use crate::support::{TestStore, stdout_of, text_reply};
use glrs::SessionId;
use glrs::store::{Entry, SessionFile};
use serde_json::{Value, json};

/// A session of about 3 MB (a kept scan is written from 1 MiB on): long
/// tool results, three boundaries (a compaction, a `/clear`, a compaction
/// keeping from before it), a few entries after the last.
fn long_session(ts: &TestStore, cwd: &str) -> SessionId {
    let id = ts.store.fresh_id().unwrap();
    let at = "2026-11-29T15:24:19.412Z".to_string();
    let mut file = SessionFile::new(id.as_str(), cwd, &at);
    file.set("model", json!("openai/gpt-4.1"));
    let push = |file: &mut SessionFile, e: Entry| file.events.push(e.to_raw().unwrap());
    let compacted = |n: usize, brief: &str| Entry::Compacted {
        at: at.clone(),
        brief: brief.into(),
        first_kept: n as u64,
        tokens_before: 9000,
        tokens_after: 300,
        model: "openai/gpt-4.1".into(),
        artifact: "2026-11-29T15-24-19-412Z.md".into(),
        instruction: None,
    };
    for turn in 0..60 {
        if turn == 20 {
            let n = file.events.len();
            push(&mut file, compacted(n - 3, "first brief"));
        }
        if turn == 40 {
            push(&mut file, Entry::Cleared { at: at.clone() });
        }
        if turn == 58 {
            let n = file.events.len();
            push(&mut file, compacted(n - 2, "label\n\nGoal: the last brief"));
        }
        push(&mut file, Entry::User { at: at.clone(), text: format!("step {turn}"), steer: false, internal: None });
        let call =
            glrs::store::ToolCall { id: format!("c{turn}"), name: "read".into(), input: json!({"path": "a.rs"}) };
        push(
            &mut file,
            Entry::Assistant {
                at: at.clone(),
                text: String::new().into(),
                model: "openai/gpt-4.1".into(),
                tool_calls: vec![call],
                stop_reason: "toolUse".into(),
            },
        );
        let result = format!("{turn}: {}", "fn main() {}\n".repeat(4000));
        push(
            &mut file,
            Entry::Tool {
                at: at.clone(),
                id: format!("c{turn}"),
                name: "read".into(),
                input: json!({"path": "a.rs"}),
                result,
                is_error: false,
            },
        );
        push(
            &mut file,
            Entry::Assistant {
                at: at.clone(),
                text: format!("read it ({turn})").into(),
                model: "openai/gpt-4.1".into(),
                tool_calls: vec![],
                stop_reason: "stop".into(),
            },
        );
    }
    file.set("contextTokens", json!(3000));
    assert!(ts.store.create_file(&id, &file).unwrap());
    assert!(std::fs::metadata(ts.store.session_path(&id)).unwrap().len() > 2 << 20);
    id
}

fn sessions_out(ts: &TestStore, args: &[&str]) -> String {
    let out = ts.sessions().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    stdout_of(&out)
}

/// `show --tail N` is the header and the last N entries of `show`.
fn assert_tail_is_the_end_of_show(ts: &TestStore, id: &str) {
    let full = sessions_out(ts, &["show", id]);
    let blocks: Vec<&str> = full.split("\n\n").collect();
    let raw: Value = serde_json::from_str(&sessions_out(ts, &["show", "--json", id])).unwrap();
    let total = raw["events"].as_array().unwrap().len();
    for n in [1usize, 3, 7] {
        let tail = sessions_out(ts, &["show", "--tail", &n.to_string(), id]);
        let want = [&blocks[..1], &blocks[blocks.len() - n..]].concat().join("\n\n");
        assert_eq!(tail, want, "--tail {n}");
        let json_tail: Value =
            serde_json::from_str(&sessions_out(ts, &["show", "--json", "--tail", &n.to_string(), id])).unwrap();
        assert_eq!(json_tail[0]["entry"], json!(total - n + 1), "--tail {n} --json numbers");
        assert_eq!(json_tail.as_array().unwrap().last().unwrap()["value"], raw["events"][total - 1]);
    }
}

#[test]
fn show_tail_and_status_read_from_the_end_as_a_whole_read_would() {
    let ts = TestStore::new();
    let id = long_session(&ts, "/w");
    let id = id.as_str();
    let scan = ts.sessions_dir().join(format!("{id}.scan"));
    assert_tail_is_the_end_of_show(&ts, id);
    assert!(scan.exists(), "the scan is kept beside the file");
    let status: Value = serde_json::from_str(&sessions_out(&ts, &["status", "--json", id])).unwrap();
    assert_eq!((status["entries"].clone(), status["compactions"].clone()), (json!(243), json!(2)));
    // Appended in place since: only the new part is scanned, and the
    // answers follow the file.
    sessions_out(&ts, &["append", id, "--custom", "memoryFlush", r#"{"compactionCount": 2}"#]);
    assert_tail_is_the_end_of_show(&ts, id);
    let status: Value = serde_json::from_str(&sessions_out(&ts, &["status", "--json", id])).unwrap();
    assert_eq!(status["entries"], json!(244));
    assert!(status["lastMemoryFlush"].is_string(), "{status}");
    // Rewritten by another program (a new inode, other entries): the kept
    // scan no longer holds and is never believed.
    let path = ts.store.session_path(&SessionId::parse(id).unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.find("\n{\"type\":\"user\",\"at\":\"2026-11-29T15:24:19.412Z\",\"text\":\"step 1\"").unwrap();
    let end = text.find("\n{\"type\":\"user\",\"at\":\"2026-11-29T15:24:19.412Z\",\"text\":\"step 2\"").unwrap();
    let shorter = format!("{}{}", &text[..cut], &text[end..]);
    std::fs::write(path.with_extension("tmp"), shorter).unwrap();
    std::fs::rename(path.with_extension("tmp"), &path).unwrap();
    assert_tail_is_the_end_of_show(&ts, id);
    let status: Value = serde_json::from_str(&sessions_out(&ts, &["status", "--json", id])).unwrap();
    assert_eq!(status["entries"], json!(240));
}

/// One resumed one-shot turn in `ts`, its request body.
fn resumed_request(ts: &TestStore, server: &MockServer, id: &str, project: &std::path::Path) -> Value {
    server.push(text_reply("noted", 300));
    let out = ts.chat().current_dir(project).args(["--resume", id, "-p", "what next?"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    server.model_requests().last().unwrap().body.clone()
}

#[test]
fn a_resumed_turn_from_the_kept_scan_sends_what_a_whole_scan_sends() {
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().to_str().unwrap();
    let (cold, cold_server) = (TestStore::new(), MockServer::start());
    cold.config_for(&cold_server);
    let id = long_session(&cold, cwd);
    let (warm, warm_server) = (TestStore::new(), MockServer::start());
    warm.config_for(&warm_server);
    std::fs::create_dir_all(warm.sessions_dir()).unwrap();
    let name = format!("{id}.json");
    std::fs::copy(cold.sessions_dir().join(&name), warm.sessions_dir().join(&name)).unwrap();
    // The warm store's scan is kept (by `status`) before the turn.
    sessions_out(&warm, &["status", id.as_str()]);
    assert!(warm.sessions_dir().join(format!("{id}.scan")).exists());
    assert!(!cold.sessions_dir().join(format!("{id}.scan")).exists());
    let sent = resumed_request(&cold, &cold_server, id.as_str(), project.path());
    assert_eq!(sent, resumed_request(&warm, &warm_server, id.as_str(), project.path()));
    // The context is the last brief, then the entries from its firstKept on.
    let messages = sent["messages"].as_array().unwrap();
    let first = messages.iter().find(|m| m["role"] == "user").unwrap();
    assert!(first["content"].as_str().unwrap().contains("Goal: the last brief"), "{first}");
    assert!(!sent.to_string().contains("first brief"));
    // Once more, after each turn appended in place: the same again.
    let sent = resumed_request(&cold, &cold_server, id.as_str(), project.path());
    assert_eq!(sent, resumed_request(&warm, &warm_server, id.as_str(), project.path()));
    assert!(cold.sessions_dir().join(format!("{id}.scan")).exists(), "the first resume kept its scan");
}
