//! Codex rollouts as the held-out real ones have them (issue 32): the
//! older layout, whose only cwd is in its `<environment_context>`; a
//! remote compaction, whose summary is encrypted, carried on by the
//! messages Codex kept; and every line of a recorded rollout accounted for.

use serde_json::Value;

use crate::import::{copy_tree, events, fixtures, from_source, import, sessions, texts_of};
use crate::support::*;

const OLD_WITH_CONTEXT: &str = "6a1f2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b.jsonl";
const OLD_WITHOUT: &str = "5e8c1d2a-0b3f-4a6e-9c7d-1f2e3a4b5c6d.jsonl";
const REMOTE: &str = "0199b7c8-5a6b-7c8d-9e0f-1a2b3c4d5e6f.jsonl";
const RECORDED: &str =
    "recorded/codex/sessions/2026/12/02/rollout-2026-12-02T02-44-27-01a234a3-9cb3-77b2-934b-23a28a92e16c.jsonl";

fn imported(ts: &TestStore, folder: &str) -> std::collections::HashMap<String, Value> {
    let src = ts.dir.path().join("sources");
    copy_tree(&fixtures().join(folder), &src);
    let out = import(ts, &["--from", "codex", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    sessions(ts)
}

#[test]
fn an_older_rollout_takes_its_cwd_from_its_environment_context() {
    let ts = TestStore::new();
    let all = imported(&ts, "codex/old");
    let (_, old) = from_source(&all, OLD_WITH_CONTEXT);
    assert_eq!(old["cwd"], "/home/ada/src/tool");
    assert_eq!(old["title"], "Which tests are failing?", "the environment is not the title");
    assert_eq!(old["createdAt"], "2025-08-14T09:30:00.000Z");
    // The header is kept whole, as the session_meta it was.
    let header = events(old).iter().find(|e| e["name"] == "import:session_meta").unwrap();
    assert_eq!(header["data"]["git"]["commit_hash"], "9e8d7c6");
    // One that carries no environment says no cwd rather than a wrong one.
    let (_, bare) = from_source(&all, OLD_WITHOUT);
    assert_eq!(bare["cwd"], "");
}

#[test]
fn an_encrypted_compaction_is_carried_on_by_the_messages_codex_kept() {
    let (ts, server) = store_and_server();
    let all = imported(&ts, "codex/sessions/2026/11/23");
    let (id, session) = from_source(&all, REMOTE);
    let briefs = texts_of(session, "compacted");
    assert_eq!(briefs.len(), 1);
    for said in ["Rename the config loader to load_settings", "Keep the old name as a deprecated alias"] {
        assert!(briefs[0].contains(said), "{said:?} not in the brief: {}", briefs[0]);
    }
    assert!(!briefs[0].contains("gAAAA"), "the encrypted summary is no brief: {}", briefs[0]);
    server.push(text_reply("continuing", 100));
    let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let body = server.model_requests()[0].body.to_string();
    for said in
        ["Rename the config loader to load_settings", "Keep the old name as a deprecated alias", "Now run the tests"]
    {
        assert!(body.contains(said), "{said:?} is not sent on: {body}");
    }
    assert!(!body.contains("gAAAA"), "encrypted content was sent: {body}");
    // What the compaction replaced is not sent as it was.
    assert!(!body.contains("rg -n load_config ."), "{body}");
}

/// The source lines of `kind`: `(type, payload.type)` of every line.
fn kinds(lines: &[Value]) -> Vec<(String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    lines.iter().map(|l| (text(&l["type"]), text(&l["payload"]["type"]))).collect()
}

#[test]
fn every_line_of_a_recorded_rollout_is_an_entry_or_kept_whole() {
    let ts = TestStore::new();
    let all = imported(&ts, "recorded/codex");
    let (_, session) = from_source(&all, "01a234a3-9cb3-77b2-934b-23a28a92e16c.jsonl");
    let text = std::fs::read_to_string(fixtures().join(RECORDED)).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let entries = events(session);
    let count = |kind: &str| entries.iter().filter(|e| e["type"] == kind).count();
    let kept: Vec<&Value> = entries.iter().filter(|e| e["type"] == "custom").map(|e| &e["data"]).collect();
    let (mut mapped, mut usage_lines, mut kept_counts) = (0, 0, 0);
    for (line, (kind, inner)) in lines.iter().zip(kinds(&lines)) {
        let payload = &line["payload"];
        match (kind.as_str(), inner.as_str()) {
            ("response_item", "message") if payload["role"] == "developer" => {
                assert!(kept.contains(&payload), "{line} is not kept")
            }
            ("response_item", "message" | "reasoning" | "function_call" | "function_call_output") => mapped += 1,
            ("compacted", _) => {
                assert!(kept.contains(&line), "{line} is not kept");
                mapped += 1;
            }
            ("event_msg", "token_count") if kept.contains(&line) => kept_counts += 1,
            ("event_msg", "token_count") => usage_lines += 1,
            _ => assert!(kept.contains(&line), "{line} maps to no entry and is not kept"),
        }
    }
    // Each counted model call's usage is one line's; the repeats are kept.
    assert_eq!(usage_lines, count("usage"), "a token_count line lost");
    assert!(kept_counts > 0, "Codex repeats its counts: the recorded rollout has repeats");
    let calls = |kind: &str| kinds(&lines).iter().filter(|(t, i)| t == "response_item" && i == kind).count();
    assert_eq!(count("tool"), calls("function_call"), "a call or result lost");
    assert_eq!(count("reasoning"), calls("reasoning"));
    assert_eq!(count("compacted"), lines.iter().filter(|l| l["type"] == "compacted").count());
    assert!(mapped > 0);
}
