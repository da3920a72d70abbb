//! Issue 33 items 4 and 10: imported sessions as a newcomer meets them. A
//! fresh import survives cleanup (its age counts from the import, not from
//! the source's dates); the source's own id (a Claude Code uuid) is taken
//! wherever a session id is; and resuming one whose model has no key here
//! says how to go on with `--model`.

use serde_json::json;

use crate::import::{fixtures, from_source, import, sessions};
use crate::support::*;

const UUID: &str = "6f1c2a9e-1b7d-4c55-9d2e-3a8f0c4b7e11";

/// The Claude Code fixtures imported: the main line's glrs id.
fn imported(ts: &TestStore) -> String {
    let src = ts.dir.path().join("sources/claude");
    crate::import::copy_tree(&fixtures().join("claude"), &src);
    let out = import(ts, &["--from", "claude", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    from_source(&sessions(ts), &format!("{UUID}.jsonl")).0.clone()
}

#[test]
fn a_fresh_import_survives_cleanup_and_a_stale_native_session_does_not() {
    let ts = TestStore::new();
    // The fixtures are dated 2026-11-20: older than a week before long.
    ts.config(json!({"session": {"maintenance": {"pruneAfter": "1d"}}}));
    let id = imported(&ts);
    let source_dated = sessions(&ts)[&id]["updatedAt"].as_str().unwrap().to_string();
    assert!(source_dated.starts_with("2026-11-20"), "{source_dated}");
    let native = ts.session("/w", &[user("old work")]);
    age(&ts, &native, std::time::Duration::from_secs(3 * 86_400));
    let out = ts.sessions().args(["cleanup", "--dry-run", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let rows = json_of(&out).to_string();
    assert!(rows.contains(native.as_str()), "the rule runs: a native session 3 days old is stale: {rows}");
    for imported in sessions(&ts).keys().filter(|k| **k != native.as_str()) {
        assert!(!rows.contains(imported.as_str()), "{imported} was just imported: {rows}");
    }
    let before = sessions(&ts).len();
    ts.sessions().args(["cleanup", "--enforce"]).assert().success();
    let after = sessions(&ts);
    assert_eq!(after.len(), before - 1, "only the stale native session went");
    assert!(after.contains_key(&id) && !after.contains_key(native.as_str()));
}

#[test]
fn the_source_id_is_taken_wherever_an_id_is() {
    let (ts, server) = store_and_server();
    let id = imported(&ts);
    let out = ts.sessions().args(["show", UUID, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)["id"], id.as_str());
    for args in [vec!["status", UUID], vec!["path", UUID], vec!["export", UUID]] {
        let out = ts.sessions().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
    }
    let fork = ts.cmd("glrs-fork").arg(UUID).output().unwrap();
    assert!(fork.status.success(), "{}", stderr_of(&fork));
    server.push(text_reply("going on", 100));
    let out = ts.chat().args(["--resume", UUID, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out).lines().last(), Some(id.as_str()), "the imported session went on");
    // Not a source anywhere: refused as before, and nothing is a path.
    let out = ts.sessions().args(["show", "0b1c2d3e-aaaa-bbbb-cccc-000000000000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("no session was imported from a source with this id"), "{}", stderr_of(&out));
}

#[test]
fn resuming_an_import_whose_model_has_no_key_says_how_to_pass_model() {
    let (ts, _server) = store_and_server();
    let id = imported(&ts);
    let model = sessions(&ts)[&id]["model"].as_str().unwrap().to_string();
    assert!(model.starts_with("anthropic/"), "{model}");
    // Only an OpenAI key here: the session's own (Anthropic) model cannot run.
    let out = ts
        .cmd("glrs-chat")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["--resume", &id, "-p", "continue"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("no API key"), "{err}");
    assert!(err.contains(&format!("last used {model}")) && err.contains("--model"), "{err}");
    assert!(err.contains("configured: openai/gpt-4.1"), "names what would work: {err}");
}
