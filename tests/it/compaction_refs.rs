//! What compaction keeps of what the agent did (issue 25), on the import
//! fixtures (tests/fixtures/import: transcripts recorded from Claude Code
//! and pi, and written after the Codex, pi and Claude Code sources): each
//! session imported, then compacted once with `glrs-compact --no-flush`
//! while the model writes a plain brief, so everything in the brief beyond
//! that text is glrs's own. Every path named in a replaced tool call and
//! every command run is in the brief, or the brief says how many were left
//! out and names the artifact; no compaction grows the context; the
//! compacted session resumes with a valid request.

use serde_json::{Value, json};

use crate::import::{copy_tree, fixtures, sessions};
use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;

const PLAIN_BRIEF: &str = "carried on with the work\n## Goal\nfinish the task";

fn configure(ts: &TestStore, server: &MockServer) {
    ts.config(json!({
        "keepRecentTokens": 10,
        "tools": {"enabled": false},
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
    }));
}

/// The paths and commands of one tool call, read the plain way: the
/// values of the usual path and command keys at any depth, the script of
/// `bash -lc`, every word of another argv list, the files a patch names.
fn what_a_call_did(input: &Value, out: &mut Vec<String>) {
    match input {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("command" | "cmd", Value::String(s)) => out.extend(s.trim().lines().next().map(str::to_string)),
                    ("command" | "cmd", Value::Array(argv)) => {
                        let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
                        match words.as_slice() {
                            [_, flag, script] if flag.ends_with('c') => {
                                out.extend(script.trim().lines().next().map(str::to_string))
                            }
                            // Codex's older `["apply_patch", PATCH]`: the
                            // files the patch names.
                            ["apply_patch", patch] => what_a_call_did(&Value::from(*patch), out),
                            _ => out.extend(words.iter().map(|w| w.to_string())),
                        }
                    }
                    ("path" | "file_path" | "notebook_path", Value::String(s)) => out.push(s.clone()),
                    _ => what_a_call_did(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| what_a_call_did(v, out)),
        Value::String(s) => {
            for line in s.lines() {
                for head in ["*** Update File: ", "*** Add File: ", "*** Delete File: "] {
                    if let Some(path) = line.strip_prefix(head) {
                        out.push(path.trim().to_string());
                    }
                }
            }
        }
        _ => {}
    }
}

/// Compacts `id` against a mock of its own; the compacted entry, or `None`
/// when there was nothing to compact.
fn compact_once(ts: &TestStore, id: &str) -> Option<Value> {
    let server = MockServer::start();
    configure(ts, &server);
    let events_before = sessions(ts)[id]["events"].as_array().unwrap().len();
    if events_before < 3 {
        return None;
    }
    server.push(Reply::sse(openai_text(&[PLAIN_BRIEF], 1, 1, 0)));
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id, "--no-flush", "--json", "-m", "openai/gpt-4.1"])
        .output()
        .unwrap();
    if !out.status.success() && stderr_of(&out).contains("would make the context bigger") {
        // Too little to compact (a spawned thread of two lines): refused,
        // and nothing written.
        return None;
    }
    assert!(out.status.success(), "glrs-compact {id}: {}", stderr_of(&out));
    let report: Value = serde_json::from_str(stdout_of(&out).trim()).unwrap();
    if report["outcome"] != "compacted" {
        server.take_report();
        return None;
    }
    let events = sessions(ts)[id]["events"].as_array().unwrap().clone();
    Some(events.iter().rev().find(|e| e["type"] == "compacted").unwrap().clone())
}

/// (kept, total) of the replaced tool calls' paths and commands of every
/// session imported from `tool`'s fixtures under `dir`.
fn measure(tool: &str, dir: &str) -> (usize, usize) {
    let ts = TestStore::new();
    let src = ts.dir.path().join("sources").join(dir);
    copy_tree(&fixtures().join(dir), &src);
    let out = ts.sessions().args(["import", "--from", tool, src.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "import {dir}: {}", stderr_of(&out));
    let (mut kept, mut total) = (0, 0);
    let ids: Vec<String> = sessions(&ts).into_keys().collect();
    for id in ids {
        // Carried on first, so the recent part kept verbatim is this turn
        // and the whole imported conversation is up for replacing.
        resume(&ts, &id, &"now tidy up the notes and say what is left to do ".repeat(10));
        let Some(compacted) = compact_once(&ts, &id) else { continue };
        let brief = compacted["brief"].as_str().unwrap();
        assert!(brief.starts_with("carried on with the work\n## Goal\nfinish the task"), "{brief}");
        let (before, after) = (compacted["tokensBefore"].as_u64().unwrap(), compacted["tokensAfter"].as_u64().unwrap());
        assert!(after <= before, "{dir} {id}: the context grew from {before} to {after} tokens");
        let first_kept = compacted["firstKept"].as_u64().unwrap() as usize;
        let events = sessions(&ts)[&id]["events"].as_array().unwrap().clone();
        // What this compaction replaced: after the boundary before it (a
        // source's own compaction replaced what came earlier, and its
        // summary is the previous brief).
        let replaced = &events[..first_kept - 1];
        let start = replaced.iter().rposition(|e| e["type"] == "compacted").map_or(0, |i| i + 1);
        let mut did = Vec::new();
        for entry in &replaced[start..] {
            for call in entry["toolCalls"].as_array().into_iter().flatten() {
                what_a_call_did(&call["input"], &mut did);
            }
        }
        did.sort();
        did.dedup();
        let left_out = brief.contains("left out for room; the artifact `") && brief.contains(".md` holds them all");
        for item in &did {
            total += 1;
            if brief.contains(item.as_str()) {
                kept += 1;
            } else {
                assert!(
                    left_out,
                    "{dir} {id}: {item:?} is not in the brief, and the brief does not say it left things out:\n{brief}"
                );
            }
        }
        resumes_with_a_valid_request(&ts, &id);
    }
    eprintln!("{dir}: {kept} of {total} paths and commands of the replaced tool calls kept");
    (kept, total)
}

/// One one-shot turn on `id`: the request body it sent. The mock checks
/// that every call in it has its result.
fn resume(ts: &TestStore, id: &str, prompt: &str) -> String {
    let server = MockServer::start();
    configure(ts, &server);
    server.push(text_reply("noted", 100));
    let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", prompt]).output().unwrap();
    assert!(out.status.success(), "resume {id}: {}", stderr_of(&out));
    server.model_requests()[0].body.to_string()
}

fn resumes_with_a_valid_request(ts: &TestStore, id: &str) {
    let body = resume(ts, id, "continue");
    assert!(body.contains("carried on with the work"), "the brief is sent: {body}");
}

#[test]
fn compacting_claude_code_sessions_keeps_every_path_and_command() {
    let (kept, total) = measure("claude", "claude");
    let (rkept, rtotal) = measure("claude", "recorded/claude");
    assert!(total > 0 && rtotal > 0, "the fixtures have tool calls");
    assert_eq!((kept, rkept), (total, rtotal));
}

#[test]
fn compacting_codex_rollouts_keeps_every_path_and_command() {
    let (kept, total) = measure("codex", "codex");
    assert!(total > 0, "the fixtures have tool calls");
    assert_eq!(kept, total);
}

#[test]
fn compacting_pi_sessions_keeps_every_path_and_command() {
    let (kept, total) = measure("pi", "pi");
    let (rkept, rtotal) = measure("pi", "recorded/pi");
    assert!(total > 0 && rtotal > 0, "the fixtures have tool calls");
    assert_eq!((kept, rkept), (total, rtotal));
}

/// A compaction never makes the context bigger: when the brief alone is
/// larger than what it would replace, nothing is compacted and it says so.
#[test]
fn a_compaction_that_would_grow_the_context_is_refused() {
    let ts = TestStore::new();
    let server = MockServer::start();
    configure(&ts, &server);
    let id = ts.session("/w", &[user("hi"), user("go on"), user(&"now the real work ".repeat(30))]);
    let long_brief = format!("label\n## Goal\n{}", "a very long brief that says far more than was said ".repeat(40));
    server.push(Reply::sse(openai_text(&[&long_brief], 1, 1, 0)));
    let before = std::fs::read(ts.store.session_path(&id)).unwrap();
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "--no-flush", "-m", "openai/gpt-4.1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("would make the context bigger") && err.contains("nothing was compacted"), "{err}");
    assert_eq!(std::fs::read(ts.store.session_path(&id)).unwrap(), before, "the session is unchanged");
}
