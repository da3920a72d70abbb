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
    // Once the last check is older than checkEvery, it runs again: the
    // last check moved back two hours rather than waited for.
    config_with(&ts, &server, json!({"session": {"maintenance": {"checkEvery": "1h"}}}));
    let two_hours_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
    let state = json!({"lastCheck": two_hours_ago.to_string()}).to_string();
    std::fs::write(ts.sessions_dir().join("maintenance.json"), state).unwrap();
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
    ts.release(held, &open);
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

/// Every `cache_control` in a request body.
fn marks(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| usize::from(k == "cache_control") + marks(v)).sum(),
        Value::Array(a) => a.iter().map(marks).sum(),
        _ => 0,
    }
}

/// An Anthropic body as the sequence the cache sees: tools, system blocks,
/// then every message block with its role; each with whether it carries a
/// breakpoint, the mark itself left out so prefixes compare by content.
fn cache_sequence(body: &Value) -> Vec<(Value, bool)> {
    let strip = |v: &Value| {
        let mut v = v.clone();
        let marked = v.as_object_mut().and_then(|o| o.remove("cache_control")).is_some();
        (v, marked)
    };
    let mut out: Vec<(Value, bool)> = body["tools"].as_array().into_iter().flatten().map(strip).collect();
    out.extend(body["system"].as_array().into_iter().flatten().map(strip));
    for m in body["messages"].as_array().expect("messages") {
        for block in m["content"].as_array().expect("content blocks") {
            let (b, marked) = strip(block);
            out.push((json!({"role": m["role"], "block": b}), marked));
        }
    }
    out
}

/// Call `next` re-sends call `prev`'s content unchanged up to `prev`'s last
/// breakpoint, and marks that place again: it reads what `prev` wrote.
fn assert_reuses_prefix(prev: &Value, next: &Value) {
    let (a, b) = (cache_sequence(prev), cache_sequence(next));
    let last = a.iter().rposition(|(_, m)| *m).expect("the earlier call has a breakpoint");
    assert!(b.len() > last, "the later call is shorter than the cached prefix");
    for i in 0..=last {
        assert_eq!(a[i].0, b[i].0, "block {i} differs: the cached prefix is not reused");
    }
    assert!(b[last].1, "the later call does not mark where the earlier one's prefix ended");
}

#[test]
fn anthropic_requests_mark_tools_system_and_newest_messages_and_reuse_the_prefix() {
    let ts = TestStore::new();
    let server = MockServer::start();
    config_with(&ts, &server, json!({}));
    // A session with an artifact is offered the compaction tools.
    server.push(Reply::sse(anthropic_text(&["earlier answer"])));
    ts.chat().args(["-p", "earlier question", "-m", "anthropic/claude-sonnet-4-5"]).assert().success();
    let id = SessionId::parse(&ts.only_session().0).unwrap();
    let artifacts = ts.store.paths.artifacts_of(&id);
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("2026-11-01T10-00-00-000Z.md"), "---\nlabel: x\n---\n[user]\nhi\n").unwrap();
    server.push(Reply::sse(anthropic_tool_use("toolu_1", "nosuch", &["{}"])));
    server.push(Reply::sse(anthropic_text(&["done"])));
    server.push(Reply::sse(anthropic_text(&["again"])));
    let run = |prompt: &str| {
        let out = ts
            .chat()
            .args(["--resume", id.as_str(), "-p", prompt, "-m", "anthropic/claude-sonnet-4-5", "--system", "be brief"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
    };
    run("first");
    run("second");
    let bodies: Vec<Value> = server.model_requests().into_iter().skip(1).map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    let mark = json!({"type": "ephemeral"});
    for body in &bodies {
        assert!(marks(body) <= 4, "more than four breakpoints: {body}");
        let tools = body["tools"].as_array().expect("tools offered");
        assert_eq!(tools.last().unwrap()["cache_control"], mark, "the tools are cached");
        assert_eq!(body["system"][0]["cache_control"], mark, "the system prompt is cached");
        let last = body["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["content"].as_array().unwrap().last().unwrap()["cache_control"], mark, "the newest message");
    }
    assert_eq!(marks(&bodies[0]), 4, "tools, system and the two newest user messages");
    assert_eq!(marks(&bodies[1]), 4);
    assert_eq!(marks(&bodies[2]), 4);
    assert_reuses_prefix(&bodies[0], &bodies[1]);
    assert_reuses_prefix(&bodies[1], &bodies[2]);

    // "1h" asks for the longer TTL; "off" sends no breakpoint at all.
    config_with(&ts, &server, json!({"providers": {"anthropic": {"baseUrl": server.url(), "cache": "1h"}}}));
    server.push(Reply::sse(anthropic_text(&["hour"])));
    run("third");
    let body = &server.model_requests()[4].body;
    assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
    assert_eq!(marks(body), 4);
    config_with(&ts, &server, json!({"providers": {"anthropic": {"baseUrl": server.url(), "cache": "off"}}}));
    server.push(Reply::sse(anthropic_text(&["none"])));
    run("fourth");
    let body = &server.model_requests()[5].body;
    assert_eq!(marks(body), 0);
    assert_eq!(body["system"], "be brief");
}

#[test]
fn claude_behind_openrouter_is_cached_too_and_other_models_are_not() {
    let ts = TestStore::new();
    let server = MockServer::start();
    config_with(
        &ts,
        &server,
        json!({"providers": {"openrouter": {"type": "openai", "baseUrl": format!("{}/v1", server.url()), "apiKeyEnv": "OPENAI_API_KEY"}}}),
    );
    server.push(Reply::sse(openai_text(&["hi"], 5, 1, 0)));
    server.push(Reply::sse(openai_text(&["hi"], 5, 1, 0)));
    let out = ts
        .chat()
        .args(["-p", "hello", "-m", "openrouter/anthropic/claude-sonnet-4.5", "--system", "be brief"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let body = &server.model_requests()[0].body;
    let mark = json!({"type": "ephemeral"});
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": [{"type": "text", "text": "be brief", "cache_control": mark}]})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": mark}]})
    );
    let out = ts.chat().args(["-p", "hello", "-m", "openrouter/openai/gpt-4.1", "--system", "s"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(marks(&server.model_requests()[1].body), 0);
}

#[test]
fn thinking_levels_per_provider_saved_in_the_header_and_kept_on_resume() {
    let ts = TestStore::new();
    let server = MockServer::start();
    config_with(&ts, &server, json!({}));
    server.push(Reply::sse(anthropic_thinking_text(&["hmm"], "sig==", &["ok"])));
    let out =
        ts.chat().args(["-p", "think", "-m", "anthropic/claude-sonnet-4-5", "--thinking", "high"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, session) = ts.only_session();
    assert_eq!(session["thinking"], "high");
    assert_eq!(session["events"][1]["signature"], "sig==");
    let body = &server.model_requests()[0].body;
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 32000}));
    assert_eq!(body["max_tokens"], 32000 + 8192, "max_tokens raised to fit the budget");
    // Resumed without --thinking: the saved level; the thinking goes back signed.
    server.push(Reply::sse(anthropic_text(&["again"])));
    ts.chat().args(["--resume", &id, "-p", "more"]).assert().success();
    let body = &server.model_requests()[1].body;
    assert_eq!(body["thinking"]["budget_tokens"], 32000);
    assert_eq!(body["messages"][1]["content"][0]["type"], "thinking");
    assert_eq!(body["messages"][1]["content"][0]["signature"], "sig==");
    // Back to off: no thinking parameter, and the header says off.
    server.push(Reply::sse(anthropic_text(&["plain"])));
    ts.chat().args(["--resume", &id, "-p", "plain", "--thinking", "off"]).assert().success();
    let body = &server.model_requests()[2].body;
    assert!(body.get("thinking").is_none() && body["max_tokens"] == 8192, "{body}");
    let (_, session) = ts.only_session();
    assert_eq!(session["thinking"], "off");

    // OpenAI reasoning models get reasoning_effort; others never do.
    server.push(Reply::sse(openai_text(&["r"], 5, 1, 0)));
    server.push(Reply::sse(openai_text(&["r"], 5, 1, 0)));
    ts.chat().args(["-p", "x", "-m", "openai/o4-mini", "--thinking", "medium"]).assert().success();
    ts.chat().args(["-p", "x", "-m", "openai/gpt-4.1", "--thinking", "medium"]).assert().success();
    let requests = server.model_requests();
    assert_eq!(requests[3].body["reasoning_effort"], "medium");
    assert!(requests[4].body.get("reasoning_effort").is_none());
    // The config's level applies to new sessions; a bad level is a usage error.
    config_with(&ts, &server, json!({"thinking": "low"}));
    server.push(Reply::sse(anthropic_text(&["low"])));
    ts.chat().args(["-p", "x", "-m", "anthropic/claude-sonnet-4-5"]).assert().success();
    assert_eq!(server.model_requests()[5].body["thinking"]["budget_tokens"], 4000);
    let out = ts.chat().args(["-p", "x", "--thinking", "max"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A long agent session: twenty small `bash` results, one large `read`,
/// then three assistant turns with 30,000-character results.
fn long_tool_session(ts: &TestStore) -> SessionId {
    use glrs::store::{Entry, ToolCall};
    let at = || "2026-11-01T10:00:01.000Z".to_string();
    let mut entries = vec![user("work through the repo")];
    let step = |entries: &mut Vec<Entry>, n: usize, name: &str, size: usize| {
        let id = format!("toolu_{n:02}");
        entries.push(Entry::Assistant {
            at: at(),
            text: Default::default(),
            model: "anthropic/claude-sonnet-4-5".into(),
            tool_calls: vec![ToolCall { id: id.clone(), name: name.into(), input: json!({"n": n}) }],
            stop_reason: "tool_use".into(),
        });
        let body = format!("{n:02}:{}", "r".repeat(size - 3));
        entries.push(Entry::Tool {
            at: at(),
            id,
            name: name.into(),
            input: json!({"n": n}),
            result: body,
            is_error: false,
        });
    };
    for n in 0..20 {
        step(&mut entries, n, "bash", 3_900);
    }
    step(&mut entries, 20, "read", 60_000);
    step(&mut entries, 21, "read", 30_000);
    step(&mut entries, 22, "read", 30_000);
    entries.push(Entry::Assistant {
        at: at(),
        text: "done".into(),
        model: "anthropic/claude-sonnet-4-5".into(),
        tool_calls: vec![],
        stop_reason: "end_turn".into(),
    });
    ts.session("/w", &entries)
}

/// The `tool_result` contents of an Anthropic request, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn pruning_trims_and_clears_old_tool_results_in_the_request_only_after_the_ttl() {
    let ts = TestStore::new();
    let server = MockServer::start();
    let pruning_config = |mode: &str| {
        json!({
            "compactAt": 0,
            "contextPruning": {"mode": mode},
            "providers": {"anthropic": {"baseUrl": server.url(), "models": {"claude-sonnet-4-5": {"metadata": {"context": 50000}}}}},
        })
    };
    config_with(&ts, &server, pruning_config("cache-ttl"));
    let id = long_tool_session(&ts);
    let file_before: Value = serde_json::from_slice(&std::fs::read(ts.store.session_path(&id)).unwrap()).unwrap();
    let old_events = file_before["events"].as_array().unwrap().clone();
    let run = |prompt: &str| {
        server.push(Reply::sse(anthropic_text(&["ok"])));
        let out = ts
            .chat()
            .args(["--resume", id.as_str(), "-p", prompt, "-m", "anthropic/claude-sonnet-4-5"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        server.model_requests().last().unwrap().body.clone()
    };

    // The last call is recent (the cache is warm): everything is sent.
    let results = tool_results(&run("one"));
    assert_eq!(results.len(), 23);
    assert!(results.iter().all(|r| r.len() >= 3_900 && !r.contains("trimmed")), "pruned within the ttl");

    // Older than the ttl (default 5m): pruned.
    age(&ts, &id, Duration::from_secs(600));
    let results = tool_results(&run("two"));
    assert_eq!(results.len(), 23);
    assert_eq!(results[0], "[Old tool result content cleared]", "the oldest are cleared");
    let cleared = results.iter().filter(|r| *r == "[Old tool result content cleared]").count();
    assert!((1..20).contains(&cleared), "cleared {cleared}: only until under hardClearRatio");
    assert!(results[19].starts_with("19:") && results[19].len() == 3_900, "newer small results stay whole");
    let trimmed = &results[20];
    assert!(trimmed.starts_with("20:rrr") && trimmed.contains("\n…\n"), "head and tail kept");
    assert!(trimmed.ends_with("[tool result trimmed: kept the first 1500 and last 1500 of 60000 characters]"));
    // The newest three assistant messages are the reply to "one", "done",
    // and the call whose result is 22: that one is untouched, 21 is not.
    assert!(results[21].ends_with("of 30000 characters]"), "older than the newest three assistant turns");
    assert!(results[22].starts_with("22:") && results[22].len() == 30_000, "the newest three turns are untouched");

    // The session file: every entry it had is unchanged, byte for byte.
    let text_after = std::fs::read_to_string(ts.store.session_path(&id)).unwrap();
    let after: Value = serde_json::from_str(&text_after).unwrap();
    let events = after["events"].as_array().unwrap();
    assert!(events.len() > old_events.len());
    for (i, old) in old_events.iter().enumerate() {
        assert_eq!(serde_json::to_string(&events[i]).unwrap(), serde_json::to_string(old).unwrap(), "entry {}", i + 1);
    }
    assert!(text_after.contains(&format!("20:{}", "r".repeat(59_997))), "the file keeps the whole result");

    // Mode off: past the ttl, the request still carries everything.
    config_with(&ts, &server, pruning_config("off"));
    age(&ts, &id, Duration::from_secs(600));
    let results = tool_results(&run("three"));
    assert!(results.iter().all(|r| r.len() >= 3_900 && !r.contains("trimmed")), "mode off pruned");
}
