//! Races and crashes around compaction and keys (issue 14, items 11 and
//! 12): a `glrs-compact` killed at any sync or rename of its landing leaves
//! its artifact and its `compacted` entry both or neither; two
//! `glrs-compact ID` at once land one brief; four `glrs-chat --key K` at
//! once make one session for the key.

use std::process::{Command, Stdio};

use glrs::SessionId;
use glrs::store::Entry;
use serde_json::Value;

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

/// A session of 20 turns of about 2,500 tokens each: plenty to compact.
fn big_session(ts: &TestStore) -> SessionId {
    let mut entries = Vec::new();
    for n in 0..20 {
        entries.push(user(&format!("turn {n}: {}", "lorem ipsum ".repeat(800))));
        entries.push(Entry::Assistant {
            at: glrs::time::now(),
            text: format!("done {n}").into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        });
    }
    let id = ts.session("/w", &entries);
    ts.store
        .update(&id, |f| {
            f.set("model", Value::from("openai/gpt-4.1"));
            f.set("contextTokens", Value::from(50_000u64));
            Ok(())
        })
        .unwrap();
    id
}

fn session_json(ts: &TestStore, id: &SessionId) -> Value {
    serde_json::from_slice(&std::fs::read(ts.store.session_path(id)).unwrap()).unwrap()
}

/// The artifact names the session's `compacted` entries give, sorted.
fn named(ts: &TestStore, id: &SessionId) -> Vec<String> {
    let session = session_json(ts, id);
    let mut names: Vec<String> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "compacted")
        .map(|e| e["artifact"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// What `glrs-artifacts ls ID` lists, by file name, sorted.
fn listed(ts: &TestStore, id: &SessionId) -> Vec<String> {
    let out = ts.cmd("glrs-artifacts").args(["ls", id.as_str(), "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let mut names: Vec<String> = json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn a_compaction_killed_at_any_sync_or_rename_leaves_both_or_neither() {
    crate::reliability::require_strace();
    let calls = "rename,renameat,renameat2,fsync,fdatasync";
    let mut outcomes = Vec::new();
    for when in 1..=6 {
        let (ts, server) = store_and_server();
        let id = big_session(&ts);
        server.push(Reply::sse(openai_text(&[BRIEF], 9_000, 200, 0)));
        let out = ts
            .std_cmd("strace")
            .args(["-f", "-qq", "-o", "/dev/null", "-e", &format!("trace={calls}")])
            .arg("-e")
            .arg(format!("inject={calls}:error=EIO:signal=SIGKILL:when={when}"))
            .args([env!("CARGO_BIN_EXE_glrs-compact"), id.as_str(), "--no-flush"])
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .output()
            .unwrap();
        // Listing finishes a landing whose entry made it; either way every
        // artifact listed is named by an entry, and every one named exists.
        let listed = listed(&ts, &id);
        let named = named(&ts, &id);
        assert_eq!(listed, named, "killed at {calls} number {when}: {}", stderr_of(&out));
        for name in &named {
            assert!(ts.store.paths.artifacts_of(&id).join(name).is_file(), "{name} is named but missing");
        }
        // A pending artifact no entry names is a leftover for cleanup.
        let dir = ts.store.paths.artifacts_of(&id);
        let pending: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let pending: Vec<&String> = pending.iter().filter(|n| n.starts_with('.')).collect();
        if let Some(name) = pending.first() {
            let path = dir.join(name);
            assert!(Command::new("touch").args(["-d", "2 hours ago"]).arg(&path).status().unwrap().success());
            let out = ts.sessions().args(["cleanup", "--dry-run", "--json"]).output().unwrap();
            assert!(stdout_of(&out).contains(name.as_str()), "{}", stdout_of(&out));
        }
        outcomes.push((named.len(), pending.len()));
    }
    // The kills fell on both sides of the entry's write.
    assert!(outcomes.iter().any(|o| o.0 == 0), "{outcomes:?}");
    assert!(outcomes.iter().any(|o| o.0 == 1), "{outcomes:?}");
}

#[test]
fn two_compactions_at_once_land_one_brief() {
    let (ts, server) = store_and_server();
    let id = big_session(&ts);
    server
        .push(Reply::slow_sse(openai_text(&["worked on ", "the parser\n", "## Goal\n", "fix it"], 9_000, 200, 0), 300));
    server.push(Reply::sse(openai_text(&[BRIEF], 9_000, 200, 0)));
    let spawn = || {
        ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"))
            .args([id.as_str(), "--no-flush"])
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(), spawn());
    let (first, second) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    for out in [&first, &second] {
        assert!(out.status.success(), "{}", stderr_of(out));
    }
    let said = format!("{}{}", stdout_of(&first), stdout_of(&second));
    assert!(said.contains("another compaction landed meanwhile; nothing to compact"), "{said}");
    assert_eq!(named(&ts, &id).len(), 1, "one compacted entry");
    assert_eq!(listed(&ts, &id).len(), 1, "one artifact");
    assert_eq!(server.model_requests().len(), 1, "the brief was paid for once");
    let unused = server.take_report();
    assert!(unused.len() == 1 && unused[0].contains("never used"), "{unused:?}");
}

#[test]
fn four_chats_for_one_key_at_once_make_one_session() {
    let (ts, server) = store_and_server();
    server.push(slow_words("w", 10, 10, 200));
    let children: Vec<_> = (0..4)
        .map(|_| {
            ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"))
                .args(["--key", "work", "-m", "openai/gpt-4.1", "-p", "hi"])
                .env("OPENAI_API_KEY", OPENAI_KEY)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    assert_eq!(codes.iter().filter(|c| **c == Some(0)).count(), 1, "one chat wins: {codes:?}");
    for out in outs.iter().filter(|o| o.status.code() != Some(0)) {
        assert_eq!(out.status.code(), Some(4), "{}", stderr_of(out));
        assert!(stderr_of(out).contains("(pid "), "{}", stderr_of(out));
    }
    let (id, _) = ts.only_session();
    let keys: Value = serde_json::from_slice(&std::fs::read(ts.sessions_dir().join("keys.json")).unwrap()).unwrap();
    assert_eq!(keys["work"]["session"], id.as_str());
}
