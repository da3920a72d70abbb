//! The compaction hooks (SPEC 15): `before_compact` runs before every
//! compaction and, exiting 2, cancels an automatic one (in the chat, and in
//! `glrs-compact --all`), reported and not asked again at every message;
//! `compacted` runs after a brief lands with `tokensBefore`, `tokensAfter`
//! and `artifact`. A compaction the user asked for is not cancelled. And
//! with the compaction tools turned off (`tools.disabled`), compaction still
//! writes its artifacts, and `/artifacts` and `glrs-artifacts ls` list them.

use crate::support::mock::MockServer;
use crate::support::pty::prompt;
use crate::support::*;
use serde_json::{Value, json};

/// A 4,000-token window for gpt-4.1 (the trigger is 3,000 tokens) and the hooks.
fn setup(hooks: Value) -> (TestStore, MockServer) {
    setup_with(hooks, &[])
}

fn setup_with(mut hooks: Value, disabled: &[&str]) -> (TestStore, MockServer) {
    let ts = TestStore::new();
    // The hooks log to files in the test's folder: their `cwd` (else `/`).
    for hook in hooks.as_object_mut().unwrap().values_mut().flat_map(|list| list.as_array_mut().unwrap()) {
        hook["cwd"] = Value::from(ts.dir.path().to_str().unwrap());
    }
    let server = MockServer::start();
    ts.config(json!({
        "keepRecentTokens": 100,
        "tools": {"enabled": false, "disabled": disabled},
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "models": {"gpt-4.1": {"metadata": {"context": 4000}}}}},
        "retry": {"attempts": 1},
        "hooks": hooks,
    }));
    (ts, server)
}

/// The JSON events a hook appended, one a line, to `name` in the test's folder.
fn events(ts: &TestStore, name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(ts.dir.path().join(name)).unwrap_or_default();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn session_of(ts: &TestStore, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap()).unwrap()
}

/// A hook that logs its event to `before.jsonl` and says no unless the
/// file `allow` exists.
const REFUSING: &str = "cat >> before.jsonl; echo >> before.jsonl; [ -e allow ] && exit 0; echo 'not now: a deploy is running' >&2; exit 2";

#[test]
fn in_the_chat_a_before_compact_hook_cancels_once_and_compacted_gets_the_result() {
    let (ts, server) = setup(json!({
        "before_compact": [{"command": REFUSING}],
        "compacted": [{"command": "cat > compacted.json"}],
    }));
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 3500));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    prompt(&mut p);
    p.send_line(&long("first")).unwrap();
    p.exp_string("first answer").unwrap();
    prompt(&mut p);
    // Over the trigger: the hook is asked, says no, and the chat goes on.
    p.send_line(&long("second")).unwrap();
    p.exp_string("second answer").unwrap();
    p.exp_string("automatic compaction cancelled by a before_compact hook: not now: a deploy is running").unwrap();
    prompt(&mut p);
    let asked = events(&ts, "before.jsonl");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["event"], "before_compact");
    assert_eq!(asked[0]["tokensBefore"], 3505);

    // Still over the trigger, but grown by less than keepRecentTokens: not
    // asked again (no retry at every message).
    server.push(text_reply("third answer", 3520));
    p.send_line("short").unwrap();
    p.exp_string("third answer").unwrap();
    prompt(&mut p);
    assert_eq!(events(&ts, "before.jsonl").len(), 1, "the hook was not asked again");

    // Grown enough: asked again; this time it lets the compaction run.
    std::fs::write(ts.dir.path().join("allow"), "").unwrap();
    server.push(text_reply("fourth answer", 3700));
    server.push(text_reply(BRIEF, 10));
    p.send_line(&long("fourth")).unwrap();
    p.exp_string("fourth answer").unwrap();
    p.exp_string(": compacted, ").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();

    let asked = events(&ts, "before.jsonl");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1]["tokensBefore"], 3705);
    let (id, session) = ts.only_session();
    assert_eq!(asked[1]["sessionId"], id.as_str());
    assert_eq!(server.model_requests().len(), 5, "four turns and one brief: none for the cancelled compaction");
    let notices: Vec<&str> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        notices.iter().any(|n| n.starts_with("automatic compaction cancelled by a before_compact hook")),
        "{notices:?}"
    );

    let landed = events(&ts, "compacted.json");
    assert_eq!(landed.len(), 1);
    let compacted = session["events"].as_array().unwrap().iter().rfind(|e| e["type"] == "compacted").unwrap();
    assert_eq!(landed[0]["event"], "compacted");
    assert_eq!(landed[0]["sessionId"], id.as_str());
    assert_eq!(landed[0]["tokensBefore"], 3705);
    assert_eq!(landed[0]["tokensAfter"], compacted["tokensAfter"]);
    let artifact = std::path::PathBuf::from(landed[0]["artifact"].as_str().unwrap());
    assert!(artifact.is_file(), "{artifact:?}");
    assert_eq!(artifact.file_name().unwrap().to_str(), compacted["artifact"].as_str());
}

/// A hook's "no" is recorded in the session (`compactionCancelled`), so the
/// next one-shot run, a new process, does not ask again until the context
/// has grown by keepRecentTokens; then it does.
#[test]
fn a_before_compact_refusal_holds_across_one_shot_runs() {
    let (ts, server) = setup(json!({"before_compact": [{"command": REFUSING}]}));
    let run = |args: &[&str]| {
        let out = ts.chat().args(args).output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        stderr_of(&out)
    };
    server.push(text_reply("first answer", 500));
    run(&["-m", "openai/gpt-4.1", "-p", &long("first")]);
    server.push(text_reply("second answer", 3500));
    let err = run(&["--continue", "-p", &long("second")]);
    assert!(err.contains("automatic compaction cancelled by a before_compact hook: not now"), "{err}");
    assert_eq!(events(&ts, "before.jsonl").len(), 1);
    let (id, session) = ts.only_session();
    let cancelled: Vec<&Value> =
        session["events"].as_array().unwrap().iter().filter(|e| e["name"] == "compactionCancelled").collect();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["type"], "custom");
    assert_eq!(cancelled[0]["data"], json!({"contextTokens": 3505, "reason": "not now: a deploy is running"}));

    // A new process, still over the trigger, grown by less than keepRecentTokens.
    server.push(text_reply("third answer", 3520));
    let err = run(&["--resume", &id, "-p", "short"]);
    assert!(!err.contains("cancelled"), "{err}");
    assert_eq!(events(&ts, "before.jsonl").len(), 1, "the next run did not ask the hook again");

    // Grown enough: asked again (and still refused, and recorded again).
    server.push(text_reply("fourth answer", 3700));
    let err = run(&["--resume", &id, "-p", &long("fourth")]);
    assert!(err.contains("automatic compaction cancelled by a before_compact hook"), "{err}");
    let asked = events(&ts, "before.jsonl");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1]["tokensBefore"], 3705);
    assert_eq!(server.model_requests().len(), 4, "four turns: no brief was asked for");
}

/// A session in the test folder with enough turns to compact, over its trigger.
fn over_trigger(ts: &TestStore) -> String {
    let mut entries = Vec::new();
    for n in 0..4 {
        entries.push(user(&long(&format!("question {n}"))));
        entries.push(glrs::store::Entry::Assistant {
            at: "2026-11-01T10:00:03.000Z".into(),
            text: format!("answer {n}").into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        });
    }
    let id = ts.session(ts.dir.path().to_str().unwrap(), &entries);
    ts.store
        .update(&id, |f| {
            f.set("model", json!("openai/gpt-4.1"));
            f.set("contextTokens", json!(3900));
            Ok(())
        })
        .unwrap();
    id.to_string()
}

#[test]
fn glrs_compact_all_is_cancelled_by_the_hook_but_a_compaction_asked_for_is_not() {
    let (ts, server) = setup(json!({
        "before_compact": [{"command": "cat >> before.jsonl; echo >> before.jsonl; echo 'quiet hours' >&2; exit 2"}],
        "compacted": [{"command": "cat > compacted.json"}],
    }));
    let id = over_trigger(&ts);
    let before = std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).args(["--all"]).output().unwrap();
    assert!(out.status.success(), "a cancellation is not a failure: {}", stderr_of(&out));
    assert_eq!(stdout_of(&out), format!("{id}: compaction cancelled by a before_compact hook: quiet hours\n"));
    let out =
        ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).args([&id, "--auto", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(json_of(&out), json!({"outcome": "cancelled", "id": id, "reason": "quiet hours"}));
    assert_eq!(std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap(), before, "nothing written");
    assert!(server.model_requests().is_empty());
    let asked = events(&ts, "before.jsonl");
    assert_eq!(asked.len(), 2);
    assert_eq!((asked[0]["event"].clone(), asked[0]["tokensBefore"].clone()), (json!("before_compact"), json!(3900)));
    assert!(asked[0]["sessionFile"].as_str().unwrap().ends_with(&format!("{id}.json")));

    // `glrs-compact ID` (and `/compact`, which runs it) was asked for: the
    // hook is heard, not obeyed.
    server.push(text_reply(BRIEF, 10));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(&id).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("a before_compact hook asked to cancel (quiet hours), but this compaction was asked for"),
        "{err}"
    );
    assert!(stdout_of(&out).starts_with(&format!("{id}: compacted, ")));
    let landed = events(&ts, "compacted.json");
    let compacted = session_of(&ts, &id)["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(compacted["type"], "compacted");
    assert_eq!(landed[0]["tokensBefore"], 3900);
    assert_eq!(landed[0]["tokensAfter"], compacted["tokensAfter"]);
    assert!(std::path::Path::new(landed[0]["artifact"].as_str().unwrap()).is_file());
}

#[test]
fn with_the_compaction_tools_disabled_artifacts_still_land_and_are_listed() {
    let (ts, server) = setup_with(json!({}), &["compaction_*"]);
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 3500));
    server.push(text_reply(BRIEF, 10));
    server.push(text_reply("third answer", 300));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    prompt(&mut p);
    p.send_line(&long("first")).unwrap();
    p.exp_string("first answer").unwrap();
    prompt(&mut p);
    p.send_line(&long("second")).unwrap();
    p.exp_string(": compacted, ").unwrap();
    prompt(&mut p);
    p.send_line("after").unwrap();
    p.exp_string("third answer").unwrap();
    prompt(&mut p);
    p.send_line("/artifacts").unwrap();
    p.exp_string("worked on the parser").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();

    let (id, session) = ts.only_session();
    let file = session["events"].as_array().unwrap().iter().rfind(|e| e["type"] == "compacted").unwrap()["artifact"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ts.sessions_dir().join("artifacts").join(&id).join(&file).is_file());
    let requests = server.model_requests();
    assert!(content_of(&requests[3]).starts_with("<earlier-conversation>"), "the third turn ran on the brief");
    assert!(requests[3].body.get("tools").is_none(), "no compaction tools offered: {}", requests[3].body["tools"]);
    let out = ts.cmd("glrs-artifacts").args(["ls", &id]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let listed = stdout_of(&out);
    assert!(listed.contains(&file) && listed.contains("worked on the parser"), "{listed}");
}

fn content_of(r: &crate::support::mock::Captured) -> String {
    r.body["messages"][0]["content"].as_str().unwrap_or("").to_string()
}
