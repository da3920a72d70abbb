//! Cost and context (SPEC 16) and maintenance by itself: request captures
//! from the mock server for caching, thinking and pruning; resets on the
//! next message; the maintenance line at chat start.

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use glrs::SessionId;
use serde_json::{Value, json};

/// The mock-server config plus `extra` merged in at the top level.
fn config_with(ts: &TestStore, server: &MockServer, extra: Value) {
    let mut config = json!({
        "memoryFlush": {"enabled": false},
        "providers": {
            "openai": {"baseUrl": format!("{}/v1", server.url())},
            "anthropic": {"baseUrl": server.url()},
        },
        "retry": {"attempts": 2, "baseDelayMs": 10},
    });
    for (k, v) in extra.as_object().expect("an object") {
        match (config.get_mut(k), v) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k2, v2) in theirs {
                    mine.insert(k2.clone(), v2.clone());
                }
            }
            _ => {
                config[k] = v.clone();
            }
        }
    }
    ts.config(config);
}

/// Move a session's `updatedAt` back by `ago`, as another program would.
fn age(ts: &TestStore, id: &SessionId, ago: Duration) {
    let then = jiff::Timestamp::now() - jiff::SignedDuration::try_from(ago).unwrap();
    ts.store
        .update(id, |f| {
            f.set("updatedAt", json!(glrs::time::format_ts(then)));
            Ok(())
        })
        .unwrap();
}

fn stale_session(ts: &TestStore, text: &str, days: u64) -> SessionId {
    let id = ts.session("/w", &[user(text)]);
    age(ts, &id, Duration::from_secs(days * 86_400));
    id
}

#[test]
fn warn_mode_prints_one_line_at_chat_start_and_not_again_within_check_every() {
    let ts = TestStore::new();
    let server = MockServer::start();
    config_with(&ts, &server, json!({}));
    let stale = [stale_session(&ts, "old one", 40), stale_session(&ts, "old two", 45)];
    server.push(Reply::sse(openai_text(&["hi"], 5, 1, 0)));
    server.push(Reply::sse(openai_text(&["again"], 5, 1, 0)));
    let out = ts.chat().args(["-p", "hello", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("maintenance")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("glrs-chat: maintenance: 2 old sessions and files (")
            && lines[0].contains("would be removed; glrs-sessions cleanup --dry-run lists them"),
        "{err}"
    );
    for id in &stale {
        assert!(ts.store.session_path(id).exists(), "warn mode removed {id}");
    }
    // Within checkEvery (default 24h): no second line.
    let out = ts.chat().args(["-p", "hello again", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains("maintenance"), "{}", stderr_of(&out));
    // Once the last check is older than checkEvery, it runs again.
    config_with(&ts, &server, json!({"session": {"maintenance": {"checkEvery": "1s"}}}));
    std::thread::sleep(Duration::from_millis(1100));
    server.push(Reply::sse(openai_text(&["third"], 5, 1, 0)));
    let out = ts.chat().args(["-p", "third", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(stderr_of(&out).contains("glrs-chat: maintenance: 2 old sessions"), "{}", stderr_of(&out));
}

#[test]
fn enforce_mode_removes_stale_sessions_at_chat_start_but_never_an_open_one() {
    let ts = TestStore::new();
    let server = MockServer::start();
    config_with(&ts, &server, json!({"session": {"maintenance": {"mode": "enforce"}}}));
    let stale = stale_session(&ts, "old", 40);
    let open = stale_session(&ts, "open elsewhere", 40);
    let fresh = stale_session(&ts, "fresh", 1);
    let held = ts.store.open_lock(&open).unwrap();
    server.push(Reply::sse(openai_text(&["hi"], 5, 1, 0)));
    let out = ts.chat().args(["-p", "hello", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("glrs-chat: maintenance: removed 1 old sessions and files ("), "{err}");
    assert!(!ts.store.session_path(&stale).exists(), "the stale session survived");
    assert!(ts.store.session_path(&open).exists(), "an open session was removed");
    assert!(ts.store.session_path(&fresh).exists());
    drop(held);
    // checkEvery false: the chat never runs it by itself.
    config_with(&ts, &server, json!({"session": {"maintenance": {"mode": "enforce", "checkEvery": false}}}));
    std::fs::remove_file(ts.sessions_dir().join("maintenance.json")).unwrap();
    server.push(Reply::sse(openai_text(&["hi"], 5, 1, 0)));
    let out = ts.chat().args(["-p", "hello", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(!stderr_of(&out).contains("maintenance"), "{}", stderr_of(&out));
    assert!(ts.store.session_path(&open).exists());
}

#[test]
fn false_turns_rules_off_and_huge_or_zero_durations_never_delete_anything() {
    let ts = TestStore::new();
    let old = stale_session(&ts, "old", 400);
    let cron = stale_session(&ts, "cron", 3);
    ts.store
        .update(&cron, |f| {
            f.set("key", json!("cron:nightly"));
            Ok(())
        })
        .unwrap();
    let others: Vec<SessionId> = (0..3).map(|i| stale_session(&ts, &format!("n{i}"), 0)).collect();
    ts.config(json!({"session": {"maintenance": {"mode": "enforce", "pruneAfter": false, "maxEntries": false, "cronRetention": false}}}));
    let out = ts.sessions().args(["cleanup", "--enforce", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(json_of(&out), json!([]), "every rule is off");
    // Issue 14: these once wrapped through `as i64` and deleted every session.
    for (value, expected) in [
        (
            json!(18446744073709551615u64),
            "session.maintenance.pruneAfter: 18446744073709551615 is longer than 100 years: use false",
        ),
        (json!("99999999999999999w"), "is longer than 100 years: use false"),
        (json!(0), "session.maintenance.pruneAfter: 0 is not a duration here: use false"),
        (json!("0d"), "use false to turn the rule off"),
    ] {
        ts.config(json!({"session": {"maintenance": {"mode": "enforce", "pruneAfter": value}}}));
        let out = ts.sessions().args(["cleanup", "--enforce"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{value}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains(expected), "{value}: {}", stderr_of(&out));
    }
    for id in [&old, &cron].into_iter().chain(&others) {
        assert!(ts.store.session_path(id).exists(), "{id} was removed");
    }
}
