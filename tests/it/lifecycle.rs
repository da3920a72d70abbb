//! Session lifecycle: glrs-fork, keys and resets, and cleanup.

use std::time::Duration;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use glrs::SessionId;
use glrs::compact::artifact::{self, ArtifactInfo};
use glrs::compact::plan::Block;
use glrs::store::{Append, Entry, ToolCall};
use serde_json::{Value, json};

fn raw_session(ts: &TestStore, id: &SessionId) -> Value {
    serde_json::from_slice(&std::fs::read(ts.store.session_path(id)).unwrap()).unwrap()
}

/// user, assistant calling c1, its result, assistant, user, assistant.
fn tool_session(ts: &TestStore) -> SessionId {
    let at = || "2026-11-01T10:00:00.000Z".to_string();
    let entries = [
        Entry::User { at: at(), text: "read it".into(), steer: false, internal: None },
        Entry::Assistant {
            at: at(),
            text: Default::default(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![ToolCall { id: "c1".into(), name: "read".into(), input: json!({}) }],
            stop_reason: "tool_calls".into(),
        },
        Entry::Tool {
            at: at(),
            id: "c1".into(),
            name: "read".into(),
            input: json!({}),
            result: "text".into(),
            is_error: false,
        },
        Entry::Assistant {
            at: at(),
            text: "read.".into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        },
        Entry::User { at: at(), text: "more".into(), steer: false, internal: None },
        Entry::Assistant {
            at: at(),
            text: "sure".into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        },
    ];
    let id = ts.session("/w", &entries);
    ts.store
        .update(&id, |f| {
            f.set("model", json!("openai/gpt-4.1"));
            f.set("pinned", json!(true));
            Ok(())
        })
        .unwrap();
    for range in ["1-3", "4-6"] {
        let mut info = ArtifactInfo {
            file: Default::default(),
            session: id.to_string(),
            created_at: glrs::time::now(),
            label: format!("range {range}"),
            messages: 3,
            note: String::new(),
            entries: range.into(),
        };
        artifact::write_new(&ts.store, &id, &mut info, &[Block { tag: "user".into(), text: "x".into() }]).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    id
}

#[test]
fn fork_copies_entries_one_to_n_with_the_artifacts_inside() {
    let ts = TestStore::new();
    let id = tool_session(&ts);
    let original = std::fs::read(ts.store.session_path(&id)).unwrap();
    let out = ts.cmd("glrs-fork").args([&id.as_str()[..5], "4"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let new = SessionId::parse(stdout_of(&out).trim()).unwrap();
    assert_ne!(new, id);
    assert_eq!(std::fs::read(ts.store.session_path(&id)).unwrap(), original, "the original is untouched");
    let copy = raw_session(&ts, &new);
    let parent = raw_session(&ts, &id);
    assert_eq!(copy["events"].as_array().unwrap()[..], parent["events"].as_array().unwrap()[..4]);
    assert_eq!(copy["parent"], json!({"id": id.as_str(), "entry": 4}));
    assert_eq!(copy["id"], new.as_str());
    assert_eq!(
        (copy["cwd"].clone(), copy["model"].clone(), copy["title"].clone()),
        (json!("/w"), json!("openai/gpt-4.1"), json!("read it"))
    );
    assert!(copy.get("pinned").is_none(), "a pin belongs to the original");
    let copied: Vec<String> = artifact::list(&ts.store, &new).unwrap().into_iter().map(|a| a.entries).collect();
    assert_eq!(copied, ["1-3"]);
    // The whole session, and the fork's parent in show and ls --tree.
    let out = ts.cmd("glrs-fork").arg(id.as_str()).output().unwrap();
    let whole = SessionId::parse(stdout_of(&out).trim()).unwrap();
    assert_eq!(raw_session(&ts, &whole)["events"], parent["events"]);
    assert_eq!(artifact::list(&ts.store, &whole).unwrap().len(), 2);
    let show = stdout_of(&ts.sessions().args(["show", new.as_str()]).output().unwrap());
    assert!(show.contains(&format!("forked from {id} at entry 4")), "{show}");
    let tree = stdout_of(&ts.sessions().args(["ls", "--tree"]).output().unwrap());
    let lines: Vec<&str> = tree.lines().collect();
    assert_eq!(lines.len(), 3, "{tree}");
    assert!(lines[0].starts_with(id.as_str()), "{tree}");
    // The id field stays clean for `cut -f1`; the title is indented.
    for line in &lines[1..] {
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(SessionId::parse(fields[0]).is_ok(), "{tree}");
        assert!(fields[5].starts_with("└ "), "{tree}");
    }
}

#[test]
fn fork_refuses_bad_entry_numbers_and_unknown_ids() {
    let ts = TestStore::new();
    let id = tool_session(&ts);
    let before = ts.snapshot();
    for (n, message) in [
        ("0", "entry 0 is out of range: session ID has 6 entries (1-6)"),
        ("7", "entry 7 is out of range: session ID has 6 entries (1-6)"),
        ("2", "entry 2 would separate tool call c1 (entry 2) from its result (entry 3) in ID: fork at 1 or at 3"),
    ] {
        let out = ts.cmd("glrs-fork").args([id.as_str(), n]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{n}");
        assert_eq!(stderr_of(&out), format!("glrs-fork: error: {}\n", message.replace("ID", id.as_str())));
    }
    let out = ts.cmd("glrs-fork").arg("abcd1234").output().unwrap();
    assert_eq!((out.status.code(), stderr_of(&out)), (Some(1), "glrs-fork: error: no session abcd1234\n".into()));
    assert_eq!(ts.cmd("glrs-fork").args([id.as_str(), "x"]).output().unwrap().status.code(), Some(2));
    assert_eq!(ts.snapshot(), before);
}

#[test]
fn fork_works_on_an_open_session_that_keeps_changing_and_on_a_legacy_one() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let held = ts.store.open_lock(&id).unwrap();
    let writer = {
        let store = ts.store.clone();
        let id = id.clone();
        std::thread::spawn(move || {
            for i in 0..100 {
                store.append(&id, Append::new().entry(&notice(&format!("n{i}"))).unwrap()).unwrap();
            }
        })
    };
    for _ in 0..10 {
        let out = ts.cmd("glrs-fork").arg(id.as_str()).output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let new = SessionId::parse(stdout_of(&out).trim()).unwrap();
        let copy = raw_session(&ts, &new);
        let n = copy["events"].as_array().unwrap().len();
        assert_eq!(copy["parent"]["entry"], n);
        assert_eq!(copy["events"][0]["text"], "start");
    }
    writer.join().unwrap();
    ts.release(held, &id);

    let legacy = ts.write_fixed_in(
        &ts.legacy_dir(),
        "dddd0004",
        "2026-11-02T10:00:00.000Z",
        "/old",
        &[r#"{"type":"user","at":"t","text":"old"}"#],
    );
    let before = std::fs::read(&legacy).unwrap();
    let out = ts.cmd("glrs-fork").arg("dddd0004").output().unwrap();
    let new = SessionId::parse(stdout_of(&out).trim()).unwrap();
    assert_eq!(raw_session(&ts, &new)["parent"], json!({"id": "dddd0004", "entry": 1}));
    assert_eq!(std::fs::read(&legacy).unwrap(), before);
}

// ---- keys and resets ----

fn keyed(ts: &TestStore, server: &MockServer, key: &str, reply: &str) -> (String, String) {
    server.push(Reply::sse(openai_text(&[reply], 10, 2, 0)));
    let out = ts.chat().env("TZ", "UTC").args(["--key", key, "-p", "hello", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    (err.lines().last().unwrap().to_string(), err)
}

/// Pretend a session was last active `ago` before now.
fn age(ts: &TestStore, id: &str, ago: Duration) {
    let then = jiff::Timestamp::now() - jiff::SignedDuration::try_from(ago).unwrap();
    let id = SessionId::parse(id).unwrap();
    ts.store
        .update(&id, |f| {
            f.set("updatedAt", json!(glrs::time::format_ts(then)));
            Ok(())
        })
        .unwrap();
}

fn with_reset(ts: &TestStore, server: &MockServer, reset: Value) {
    ts.config(
        json!({"session": {"reset": reset}, "tools": {"enabled": false}, "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}),
    );
}

#[test]
fn a_key_continues_its_session_until_the_daily_reset() {
    let (ts, server) = store_and_server();
    let hour = (jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).hour() + 12) % 24;
    with_reset(&ts, &server, json!({"mode": "daily", "atHour": hour}));
    let (first, _) = keyed(&ts, &server, "work", "one");
    let keys = ts.store.keys().unwrap();
    assert_eq!(keys["work"].session, first);
    assert_eq!(raw_session(&ts, &SessionId::parse(&first).unwrap())["key"], "work");
    // Active a minute ago: after the last boundary (about 12 hours ago).
    age(&ts, &first, Duration::from_secs(60));
    let (again, _) = keyed(&ts, &server, "work", "two");
    assert_eq!(again, first);
    assert_eq!(server.model_requests()[1].body["messages"].as_array().unwrap().len(), 3, "the history was replayed");
    // Active 13 hours ago: before the boundary, so a new session.
    age(&ts, &first, Duration::from_secs(13 * 3600));
    let (next, err) = keyed(&ts, &server, "work", "three");
    assert_ne!(next, first);
    assert!(err.contains(&format!("new session for key work: daily reset at {hour:02}:00")), "{err}");
    assert_eq!(ts.store.keys().unwrap()["work"].session, next);
    let listed = json_of(&ts.sessions().args(["ls", "--key", "work", "--json"]).output().unwrap());
    assert_eq!(listed.as_array().unwrap().len(), 2, "the old one stays, listed");
    let keys_out = json_of(&ts.sessions().args(["keys", "--json"]).env("TZ", "UTC").output().unwrap());
    assert_eq!(keys_out[0]["key"], "work");
    assert_eq!(keys_out[0]["session"], next.as_str());
    assert!(keys_out[0]["nextReset"].as_str().unwrap().starts_with("daily "), "{keys_out}");
}

#[test]
fn idle_and_manual_resets() {
    let (ts, server) = store_and_server();
    with_reset(&ts, &server, json!({"mode": "idle", "idleMinutes": 30}));
    let (first, _) = keyed(&ts, &server, "cron:nightly", "a");
    age(&ts, &first, Duration::from_secs(5 * 60));
    assert_eq!(keyed(&ts, &server, "cron:nightly", "b").0, first);
    age(&ts, &first, Duration::from_secs(31 * 60));
    let (second, err) = keyed(&ts, &server, "cron:nightly", "c");
    assert_ne!(second, first);
    assert!(err.contains("idle for more than 30 minutes"), "{err}");

    with_reset(&ts, &server, json!({"mode": "manual"}));
    age(&ts, &second, Duration::from_secs(3 * 86_400));
    assert_eq!(keyed(&ts, &server, "cron:nightly", "d").0, second);
}

#[test]
fn a_new_keyed_session_can_start_from_a_parent_within_the_limit() {
    let (ts, server) = store_and_server();
    ts.config(
        json!({"parentForkMaxTokens": 1000, "tools": {"enabled": false}, "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}),
    );
    server.push(Reply::sse(openai_text(&["parent answer"], 100, 2, 0)));
    ts.chat().args(["-p", "parent question", "-m", "openai/gpt-4.1"]).assert().success();
    let (parent, _) = ts.only_session();
    server.push(Reply::sse(openai_text(&["child answer"], 10, 2, 0)));
    let out = ts.chat().args(["--key", "deploy", "--parent", &parent, "-p", "child question"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let child = stderr_of(&out).lines().last().unwrap().to_string();
    let session = raw_session(&ts, &SessionId::parse(&child).unwrap());
    assert_eq!(session["parent"]["id"], parent.as_str());
    assert_eq!(session["key"], "deploy");
    let messages = &server.model_requests()[1].body["messages"];
    assert_eq!(messages[0]["content"], "parent question");
    assert_eq!(ts.store.keys().unwrap()["deploy"].session, child);

    // The key goes on with its session; a --parent that names nothing is
    // not used then, but said.
    server.push(Reply::sse(openai_text(&["again"], 10, 2, 0)));
    let out = ts.chat().args(["--key", "deploy", "--parent", "deadbee0", "-p", "more"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("warning: --parent deadbee0:") && err.contains("key deploy goes on with its session"),
        "{err}"
    );
    assert_eq!(err.lines().last().unwrap(), child, "the same session");

    // Over the limit: a fresh session that says why.
    ts.store
        .update(&SessionId::parse(&parent).unwrap(), |f| {
            f.set("contextTokens", json!(5000));
            Ok(())
        })
        .unwrap();
    server.push(Reply::sse(openai_text(&["fresh"], 10, 2, 0)));
    let out = ts.chat().args(["--key", "other", "--parent", &parent, "-p", "q"]).output().unwrap();
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!(
            "parent {parent} not copied: its 5000 context tokens are over parentForkMaxTokens (1000); starting fresh"
        )),
        "{err}"
    );
    let fresh = raw_session(&ts, &SessionId::parse(err.lines().last().unwrap()).unwrap());
    assert!(fresh.get("parent").is_none());
    assert_eq!(entry_types(&fresh)[0], "notice");
    assert_eq!(server.model_requests()[3].body["messages"].as_array().unwrap().len(), 1);
}

// ---- cleanup ----

fn touch_ago(path: &std::path::Path, days: u32) {
    let status =
        std::process::Command::new("touch").args(["-d", &format!("{days} days ago")]).arg(path).status().unwrap();
    assert!(status.success());
}

fn dated(ts: &TestStore, text: &str, days: u64) -> SessionId {
    let id = ts.session("/w", &[user(text)]);
    age(ts, id.as_str(), Duration::from_secs(days * 86_400));
    id
}

fn cleanup_rows(ts: &TestStore, args: &[&str]) -> Value {
    let out = ts.sessions().arg("cleanup").args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    json_of(&out)
}

#[test]
fn cleanup_lists_exactly_what_enforce_removes_and_spares_the_protected() {
    let ts = TestStore::new();
    let stale = dated(&ts, "stale", 40);
    let fresh = dated(&ts, "fresh", 1);
    let pinned = dated(&ts, "pinned", 40);
    ts.sessions().args(["pin", pinned.as_str()]).assert().success();
    age(&ts, pinned.as_str(), Duration::from_secs(40 * 86_400));
    let open = dated(&ts, "open", 40);
    let current = dated(&ts, "key current", 40);
    ts.store.set_key("work", &current).unwrap();
    let cron_old = dated(&ts, "cron old", 2);
    let cron_current = dated(&ts, "cron current", 2);
    for (id, key) in [(&cron_old, "cron:nightly"), (&cron_current, "cron:nightly")] {
        ts.store
            .update(id, |f| {
                f.set("key", json!(key));
                Ok(())
            })
            .unwrap();
        age(&ts, id.as_str(), Duration::from_secs(2 * 86_400));
    }
    ts.store.set_key("cron:nightly", &cron_current).unwrap();
    let stale_art = ts.store.paths.artifacts_of(&stale);
    std::fs::create_dir_all(&stale_art).unwrap();
    std::fs::write(stale_art.join("a.md"), "---\n").unwrap();
    let orphan = ts.store.paths.artifacts.join("0fa0fa0f");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(orphan.join("x.md"), "orphan").unwrap();
    touch_ago(&orphan.join("x.md"), 45);
    touch_ago(&orphan, 45);
    let young_orphan = ts.store.paths.artifacts.join("0fb0fb0f");
    std::fs::create_dir_all(&young_orphan).unwrap();
    std::fs::write(young_orphan.join("y.md"), "young").unwrap();
    let temp = ts.sessions_dir().join(format!(".{stale}.json.Ab12.tmp"));
    std::fs::write(&temp, "half a write").unwrap();
    touch_ago(&temp, 2);
    let young_temp = ts.sessions_dir().join(".x.json.Cd34.tmp");
    std::fs::write(&young_temp, "a write under way").unwrap();
    let gone_lock = ts.sessions_dir().join("0dead0de.lock");
    std::fs::write(&gone_lock, "").unwrap();
    touch_ago(&gone_lock, 2);
    let held = ts.store.open_lock(&open).unwrap();

    let before = ts.snapshot();
    let rows = cleanup_rows(&ts, &["--dry-run"]);
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    let session_bytes = |id: &SessionId| size(&ts.store.session_path(id));
    let expected = json!([
        {"action": "remove", "reason": "leftover", "session": null, "bytes": 12, "path": temp},
        {"action": "remove", "reason": "leftover", "session": null, "bytes": 0, "path": gone_lock},
        {"action": "remove", "reason": "orphan artifact", "session": "0fa0fa0f", "bytes": 6, "path": orphan},
    ]);
    assert_eq!(rows.as_array().unwrap()[..3], expected.as_array().unwrap()[..]);
    let by_session = |id: &SessionId| rows.as_array().unwrap().iter().find(|r| r["session"] == id.as_str()).cloned();
    assert_eq!(
        by_session(&stale).unwrap(),
        json!({"action": "remove", "reason": "stale", "session": stale.as_str(), "bytes": session_bytes(&stale) + 4, "path": ts.store.session_path(&stale)})
    );
    assert_eq!(by_session(&pinned).unwrap()["reason"], "keep: pinned (stale)");
    assert_eq!(by_session(&open).unwrap()["reason"], "keep: open (stale)");
    assert_eq!(by_session(&current).unwrap()["reason"], "keep: key-current (stale)");
    assert_eq!(by_session(&cron_old).unwrap()["reason"], "cron retention");
    assert_eq!(by_session(&cron_current).unwrap()["reason"], "keep: key-current (cron retention)");
    assert!(by_session(&fresh).is_none());
    assert_eq!(rows.as_array().unwrap().len(), 3 + 6);
    // The default mode is warn: it reports and changes nothing.
    assert_eq!(cleanup_rows(&ts, &[]), rows);
    let mut after = ts.snapshot();
    after.retain(|(p, _)| !p.ends_with(glrs::store::listing::INDEX_FILE));
    let mut before_no_index = before.clone();
    before_no_index.retain(|(p, _)| !p.ends_with(glrs::store::listing::INDEX_FILE));
    assert_eq!(after, before_no_index, "dry runs change nothing");

    assert_eq!(cleanup_rows(&ts, &["--enforce"]), rows, "enforce removes exactly what the dry run listed");
    for gone in [ts.store.session_path(&stale), stale_art, ts.store.session_path(&cron_old), orphan, temp, gone_lock] {
        assert!(!gone.exists(), "{gone:?} survived");
    }
    for kept in [&fresh, &pinned, &open, &current, &cron_current] {
        assert!(ts.store.session_path(kept).exists(), "{kept} was removed");
    }
    assert!(young_orphan.exists() && young_temp.exists());
    drop(held);
}

#[test]
fn a_disk_budget_removes_orphans_then_the_oldest_until_the_high_water_mark() {
    let ts = TestStore::new();
    let ids: Vec<SessionId> =
        (0..5).map(|i| dated(&ts, &format!("session {i} {}", "x".repeat(20_000)), 10 - i)).collect();
    let orphan = ts.store.paths.artifacts.join("0fa0fa0f");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::write(orphan.join("x.md"), "y".repeat(5_000)).unwrap();
    ts.sessions().arg("ls").assert().success();
    let total: u64 = walk_size(&ts.sessions_dir());
    // Over the budget; the high-water mark needs two sessions and the orphan gone.
    let high = total - 5_000 - 2 * 20_100;
    ts.config(
        json!({"session": {"maintenance": {"mode": "enforce", "maxDiskBytes": total - 1, "highWaterBytes": high}}}),
    );
    let rows = cleanup_rows(&ts, &["--dry-run"]);
    let reasons: Vec<(String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["reason"].as_str().unwrap().into(), r["session"].as_str().unwrap_or("").into()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("orphan artifact".to_string(), "0fa0fa0f".to_string()),
            ("over budget".into(), ids[0].to_string()),
            ("over budget".into(), ids[1].to_string()),
        ]
    );
    // mode enforce in the config: plain `cleanup` removes.
    ts.sessions().arg("cleanup").assert().success();
    assert!(walk_size(&ts.sessions_dir()) <= high);
    assert!(ts.store.session_path(&ids[2]).exists());

    ts.config(json!({"session": {"maintenance": {"maxEntries": 2}}}));
    let rows = cleanup_rows(&ts, &[]);
    let reasons: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["over max entries"]);
    assert_eq!(rows[0]["session"], ids[2].as_str());

    ts.config(json!({"session": {"maintenance": {"pruneAfter": "soon"}}}));
    let out = ts.sessions().arg("cleanup").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("session.maintenance.pruneAfter"), "{}", stderr_of(&out));
}

fn walk_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(
                    |e| {
                        if e.path().is_dir() {
                            walk_size(&e.path())
                        } else {
                            e.metadata().map(|m| m.len()).unwrap_or(0)
                        }
                    },
                )
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn fork_suggests_only_numbers_it_accepts_after_a_step_with_two_tool_calls() {
    // Issue 24.3: a step's two results span more than one entry.
    let ts = TestStore::new();
    let at = || "2026-11-01T10:00:00.000Z".to_string();
    let call = |id: &str| ToolCall { id: id.into(), name: "read".into(), input: json!({}) };
    let result = |id: &str| Entry::Tool {
        at: at(),
        id: id.into(),
        name: "read".into(),
        input: json!({}),
        result: "text".into(),
        is_error: false,
    };
    let answer = |text: &str, calls: Vec<ToolCall>| Entry::Assistant {
        at: at(),
        text: text.into(),
        model: "openai/gpt-4.1".into(),
        tool_calls: calls,
        stop_reason: "stop".into(),
    };
    let id = ts.session(
        "/w",
        &[
            user("read both"),
            answer("", vec![call("c1"), call("c2")]),
            notice("between"),
            result("c1"),
            result("c2"),
            answer("read.", vec![]),
        ],
    );
    let fork = |n: usize| ts.cmd("glrs-fork").args([id.as_str(), &n.to_string()]).output().unwrap();
    let mut refused = Vec::new();
    for n in 1..=6 {
        let out = fork(n);
        if out.status.success() {
            continue;
        }
        let err = stderr_of(&out);
        let choices = err.trim_end().rsplit(": fork at ").next().unwrap().to_string();
        let numbers: Vec<usize> = choices.split(" or at ").map(|c| c.parse().unwrap()).collect();
        for suggested in &numbers {
            let again = fork(*suggested);
            assert!(again.status.success(), "{n}: {err} but {suggested}: {}", stderr_of(&again));
        }
        refused.push((n, numbers));
    }
    assert_eq!(refused, [(2, vec![1, 5]), (3, vec![1, 5]), (4, vec![1, 5])]);
}
