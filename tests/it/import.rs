//! `glrs-sessions import --from claude|codex|pi` (SPEC 18) on the fixtures
//! in `tests/fixtures/import/` (see their README): what each source becomes,
//! that the result is a valid context for any model, and importing again,
//! grown sources, bad lines, a wrong `--from`, an empty folder, a secret.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

/// A copy of the fixtures of `tool` in a folder of the test's own.
fn copy_of(ts: &TestStore, tool: &str) -> PathBuf {
    let to = ts.dir.path().join("sources").join(tool);
    copy_tree(&fixtures().join(tool), &to);
    to
}

pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub(crate) fn import(ts: &TestStore, args: &[&str]) -> std::process::Output {
    ts.sessions().arg("import").args(args).output().unwrap()
}

/// Every session in the store, by id.
pub(crate) fn sessions(ts: &TestStore) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir(ts.sessions_dir()) else { return out };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.len() == 13 && name.ends_with(".json") {
            let value: Value = serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
            out.insert(name[..8].to_string(), value);
        }
    }
    out
}

/// The session imported from the source whose path ends with `tail`.
pub(crate) fn from_source<'a>(all: &'a HashMap<String, Value>, tail: &str) -> (&'a String, &'a Value) {
    let found: Vec<_> = all
        .iter()
        .filter(|(_, s)| {
            s["importedFrom"]["path"].as_str().unwrap().ends_with(tail) && s["importedFrom"]["key"].is_null()
        })
        .collect();
    assert_eq!(found.len(), 1, "one session from {tail}: {:?}", all.keys());
    found[0]
}

pub(crate) fn events(session: &Value) -> &Vec<Value> {
    session["events"].as_array().unwrap()
}

/// How many entries a session shares with its parent: a fork's (SPEC 8,
/// `parent` without `subagent`) first `parent.entry` entries are its
/// parent's, copied whole; a subagent's session shares none.
pub(crate) fn shared_with_parent(all: &HashMap<String, Value>, session: &Value) -> usize {
    let Some(parent) = session["parent"]["id"].as_str() else { return 0 };
    if session["subagent"] == true {
        return 0;
    }
    let n = session["parent"]["entry"].as_u64().unwrap() as usize;
    let from = events(&all[parent]);
    assert_eq!(&events(session)[..n], &from[..n], "a fork of {parent} holds its entries 1..{n}");
    n
}

/// Every tool call is in exactly one session (a fork's shared entries
/// being its parent's), answered exactly once, right after its assistant
/// entry; every result answers a call.
pub(crate) fn check_calls(all: &HashMap<String, Value>) -> Vec<String> {
    let mut seen: HashMap<String, String> = HashMap::new();
    for (id, session) in all {
        let list = events(session);
        let shared = shared_with_parent(all, session);
        for (i, entry) in list.iter().enumerate() {
            if entry["type"] == "assistant" && i >= shared {
                let calls = entry["toolCalls"].as_array().unwrap();
                for (n, call) in calls.iter().enumerate() {
                    let call_id = call["id"].as_str().unwrap().to_string();
                    assert!(seen.insert(call_id.clone(), id.clone()).is_none(), "{call_id} in two sessions");
                    let result = &list[i + 1 + n];
                    assert_eq!(
                        (result["type"].as_str(), result["id"].as_str()),
                        (Some("tool"), Some(call_id.as_str()))
                    );
                }
            }
        }
        let results: Vec<&str> =
            list.iter().filter(|e| e["type"] == "tool").map(|e| e["id"].as_str().unwrap()).collect();
        let calls: usize =
            list.iter().filter(|e| e["type"] == "assistant").map(|e| e["toolCalls"].as_array().unwrap().len()).sum();
        assert_eq!(results.len(), calls, "{id}: a result for every call, none more");
    }
    let mut ids: Vec<String> = seen.into_keys().collect();
    ids.sort();
    ids
}

/// The tool calls of an OpenAI chat request, each checked to be answered
/// by exactly one `tool` message after it, every result answering a call.
pub(crate) fn calls_answered_once(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    let mut calls: Vec<String> = Vec::new();
    for m in messages {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            calls.push(call["id"].as_str().unwrap().to_string());
        }
    }
    let results: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    for call in &calls {
        assert_eq!(calls.iter().filter(|c| *c == call).count(), 1, "{call} called twice: {body}");
        assert_eq!(results.iter().filter(|r| *r == call).count(), 1, "{call} not answered once: {body}");
    }
    assert_eq!(results.len(), calls.len(), "a result without its call: {body}");
    calls
}

pub(crate) fn texts_of(session: &Value, kind: &str) -> Vec<String> {
    let field = if kind == "compacted" { "brief" } else { "text" };
    events(session).iter().filter(|e| e["type"] == kind).map(|e| e[field].as_str().unwrap().to_string()).collect()
}

#[test]
fn claude_code_sessions_and_their_subagent() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "claude");
    let out = import(&ts, &["--from", "claude", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).lines().count(), 2, "{}", stdout_of(&out));
    let all = sessions(&ts);
    let (main_id, main) = from_source(&all, "6f1c2a9e-1b7d-4c55-9d2e-3a8f0c4b7e11.jsonl");
    let (_, agent) = from_source(&all, "agent-a7f3c1d2.jsonl");
    assert_eq!(
        check_calls(&all),
        ["toolu_01Read", "toolu_02Bash", "toolu_03Edit", "toolu_04Task", "toolu_05Bash", "toolu_S1Grep"]
    );
    assert_eq!(main["cwd"], "/home/ada/src/app");
    assert_eq!(main["createdAt"], "2026-11-20T09:00:00.100Z");
    assert_eq!(main["updatedAt"], "2026-11-20T09:01:03.400Z");
    assert_eq!(main["title"], "Fix the failing parser test", "the summary line is the title");
    assert_eq!(main["model"], "anthropic/claude-sonnet-4-5-20250929");
    assert_eq!(main["importedFrom"]["tool"], "claude");
    assert_eq!(main["importedFrom"]["id"], "6f1c2a9e-1b7d-4c55-9d2e-3a8f0c4b7e11");
    assert_eq!(main["importedFrom"]["version"], "2.0.14");
    // The answer's lines are one model call; parallel results pair by id.
    let answers = texts_of(main, "assistant");
    assert_eq!(answers[0], "Let me look at the parser and run the test.");
    assert!(texts_of(main, "reasoning")[0].contains("read the parser"));
    let users = texts_of(main, "user");
    assert!(users.iter().any(|t| t.starts_with("The test parse_empty")));
    let briefs = texts_of(main, "compacted");
    assert_eq!(briefs.len(), 1);
    assert!(briefs[0].contains("s.get(..1)"), "{briefs:?}");
    // The call never answered has an error result.
    let last_tool = events(main).iter().rfind(|e| e["type"] == "tool").unwrap();
    assert_eq!(
        (last_tool["result"].as_str(), last_tool["isError"].as_bool()),
        (Some("no result was recorded"), Some(true))
    );
    // Metadata lines, known and unknown, are kept as custom entries.
    let customs: Vec<&str> =
        events(main).iter().filter(|e| e["type"] == "custom").map(|e| e["name"].as_str().unwrap()).collect();
    for name in ["import:summary", "import:file-history-snapshot", "import:queue-operation", "import:hologram-index"] {
        assert!(customs.contains(&name), "{customs:?}");
    }
    // The subagent is a child of the session that ran it.
    assert_eq!(agent["parent"]["id"].as_str(), Some(main_id.as_str()));
    assert_eq!(agent["importedFrom"]["id"], "a7f3c1d2");
    // The planted key never reached the store.
    let text: String = ts
        .snapshot()
        .into_iter()
        .filter(|(path, _)| path.starts_with(ts.data_home()))
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    assert!(!text.contains("sk-ant-api03-Zq8v"), "the key was written");
    assert!(text.contains("The CI token is [REDACTED:anthropic]"));
}

#[test]
fn codex_rollouts_spawned_threads_and_the_older_layout() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "codex");
    let out = import(&ts, &["--from", "codex", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = sessions(&ts);
    assert_eq!(all.len(), 5);
    let (main_id, main) = from_source(&all, "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
    let (_, child) = from_source(&all, "0199a1b2-ffff-7e5f-8a9b-0c1d2e3f4a5c.jsonl");
    let (_, old) = from_source(&all, "5e8c1d2a-0b3f-4a6e-9c7d-1f2e3a4b5c6d.jsonl");
    let calls = [
        "call_Alias3",
        "call_Doc1",
        "call_Ls1",
        "call_Old1",
        "call_Old2",
        "call_Old3",
        "call_Patch2",
        "call_Rg1",
        "call_Sed2",
        "call_Spawn4",
        "call_Test3",
        "call_Test4",
    ];
    assert_eq!(check_calls(&all), calls);
    assert_eq!(main["cwd"], "/home/ada/src/app");
    assert_eq!(main["createdAt"], "2026-11-21T10:00:00.000Z");
    assert_eq!(main["updatedAt"], "2026-11-21T10:06:31.000Z");
    assert_eq!(main["title"], "List the files and fix the typo in README.md", "injected context is not the title");
    assert_eq!(main["model"], "openai/gpt-5-codex");
    assert_eq!(main["importedFrom"]["version"], "0.63.0");
    let patch = events(main).iter().find(|e| e["type"] == "tool" && e["name"] == "apply_patch").unwrap();
    assert!(patch["input"]["input"].as_str().unwrap().contains("*** Update File: README.md"));
    let shell = events(main).iter().find(|e| e["type"] == "tool" && e["name"] == "shell").unwrap();
    assert_eq!(shell["input"]["command"], serde_json::json!(["bash", "-lc", "ls"]));
    assert!(texts_of(main, "compacted")[0].starts_with("Summary: the user asked to list the files"));
    let compacted = events(main).iter().find(|e| e["type"] == "compacted").unwrap();
    assert_eq!(compacted["tokensBefore"], 5660, "the last token_count before the compaction");
    // A web search (run on OpenAI's side, no result of its own) is kept, not sent.
    let search = events(main).iter().find(|e| e["name"] == "import:web_search_call").unwrap();
    assert_eq!(search["data"]["action"]["query"], "rustdoc broken_intra_doc_links lint");
    assert_eq!(texts_of(main, "reasoning"), ["**Listing the files first**"]);
    // The UI's echo of the history is kept, never mapped twice.
    assert_eq!(texts_of(main, "user").iter().filter(|t| t.starts_with("List the files")).count(), 1);
    assert!(events(main).iter().any(|e| e["name"] == "import:event_msg"));
    assert_eq!(child["parent"]["id"].as_str(), Some(main_id.as_str()), "a spawned thread is a child");
    // The call and the answer after its result are two model calls.
    assert_eq!(texts_of(old, "assistant"), ["", "It prints \"hi\"."]);
    assert_eq!(old["createdAt"], "2025-05-02T08:00:00.000Z");
}

#[test]
fn pi_sessions_branches_and_version_1() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "pi");
    let out = import(&ts, &["--from", "pi", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = sessions(&ts);
    assert_eq!(all.len(), 3, "the session, its branch, the v1 session");
    let (main_id, main) = from_source(&all, "1c9e4f7a-2b3d-4e5f-8a6b-7c8d9e0f1a2b.jsonl");
    let branch = all.values().find(|s| s["importedFrom"]["key"] == "b1000010").unwrap();
    let (_, v1) = from_source(&all, "9d8c7b6a.jsonl");
    assert_eq!(check_calls(&all), ["toolu_P1read", "toolu_P2edit", "toolu_P3bash", "toolu_P4edit"]);
    assert_eq!(main["title"], "Verbose flag for the CLI", "session_info names it");
    assert_eq!(main["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(main["createdAt"], "2026-11-22T14:00:00.000Z");
    assert_eq!(main["importedFrom"]["version"], "3");
    // The branch left is a fork where it left: the entries it shares, then its own.
    assert_eq!(branch["parent"]["id"].as_str(), Some(main_id.as_str()));
    let at = branch["parent"]["entry"].as_u64().unwrap() as usize;
    assert_eq!(shared_with_parent(&all, branch), at);
    assert_eq!(events(main)[at - 1]["type"], "usage");
    assert_eq!(events(main)[at - 2]["text"], "Added the --verbose flag.");
    assert_eq!(texts_of(branch, "user").last().unwrap(), "Actually call it -v only");
    let (mine, theirs) = (texts_of(branch, "user"), texts_of(main, "user"));
    assert_eq!(mine[..mine.len() - 1], theirs[..mine.len() - 1], "the prompts before it are the session's");
    assert_eq!(branch["title"], "Actually call it -v only", "its own first prompt");
    // The compaction keeps from the entry pi named.
    let compacted = events(main).iter().find(|e| e["type"] == "compacted").unwrap();
    assert!(compacted["brief"].as_str().unwrap().contains("Add a --verbose flag."));
    let kept = compacted["firstKept"].as_u64().unwrap() as usize;
    assert_eq!(events(main)[kept - 1]["text"], "Added the --verbose flag.");
    let users = texts_of(main, "user");
    assert!(users.iter().any(|t| t.contains("The user tried renaming the flag to -v")), "branch summary sent");
    assert!(users.iter().any(|t| t == "Open todo: document the flag."), "custom_message sent");
    assert!(users.iter().any(|t| t.starts_with("Ran `git status --short`")), "bashExecution sent");
    for name in ["import:label", "import:custom", "import:model_change", "import:thinking_level_change"] {
        assert!(events(main).iter().any(|e| e["name"] == name), "{name}");
    }
    // Version 1 keeps from firstKeptEntryIndex.
    let compacted = events(v1).iter().find(|e| e["type"] == "compacted").unwrap();
    let kept = compacted["firstKept"].as_u64().unwrap() as usize;
    assert_eq!(events(v1)[kept - 1]["text"], "And the Makefile?");
    assert_eq!(v1["model"], "openai/gpt-4.1");
}

/// `glrs-chat --resume ID -p continue` sends a valid request holding the
/// conversation and none of the kept source lines.
pub(crate) fn resume_sends_a_valid_request(tool: &str, tail: &str, said: &str, kept: &[&str]) {
    let (ts, server) = store_and_server();
    let src = copy_of(&ts, tool);
    assert!(import(&ts, &["--from", tool, src.to_str().unwrap()]).status.success());
    let all = sessions(&ts);
    let (id, _) = from_source(&all, tail);
    server.push(text_reply("continuing", 100));
    let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "continuing\n");
    let body = server.model_requests()[0].body.to_string();
    assert!(body.contains(said), "the conversation is sent: {body}");
    for line in kept {
        assert!(!body.contains(line), "a kept source line ({line}) reached the model: {body}");
    }
    for program in [&["show", id.as_str()][..], &["export", id.as_str()], &["status", id.as_str()]] {
        let out = ts.sessions().args(program).output().unwrap();
        assert!(out.status.success(), "{program:?}: {}", stderr_of(&out));
    }
    let out = ts.sessions().args(["grep", said]).output().unwrap();
    assert!(stdout_of(&out).contains(id.as_str()), "{}", stdout_of(&out));
    let out = ts.sessions().args(["ls"]).output().unwrap();
    assert!(stdout_of(&out).contains(id.as_str()));
}

#[test]
fn a_resumed_claude_code_session_sends_a_valid_request() {
    resume_sends_a_valid_request("claude", "4b7e11.jsonl", "Run the whole suite now", &["hologram"]);
}

#[test]
fn a_resumed_codex_session_sends_a_valid_request() {
    // The web search kept beside the spawn call is not sent: the request
    // holds the call and its result, which the mock checks are paired.
    let kept = ["turn_context", "broken_intra_doc_links"];
    resume_sends_a_valid_request("codex", "3f4a5b.jsonl", "The helper reports the docs build cleanly", &kept);
}

#[test]
fn a_resumed_pi_session_sends_a_valid_request() {
    resume_sends_a_valid_request("pi", "0f1a2b.jsonl", "README.md does not mention it yet", &["todo-ext"]);
}

#[test]
fn glrs_compact_compacts_an_imported_session() {
    let (ts, server) = store_and_server();
    ts.config(serde_json::json!({
        "keepRecentTokens": 10,
        "tools": {"enabled": false},
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
        "retry": {"attempts": 1},
    }));
    let src = copy_of(&ts, "pi");
    assert!(import(&ts, &["--from", "pi", src.to_str().unwrap()]).status.success());
    let all = sessions(&ts);
    let (id, _) = from_source(&all, "0f1a2b.jsonl");
    server.push(Reply::sse(openai_text(&["label\n## Goal\ndocument the flag"], 1, 1, 0)));
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "--model", "openai/gpt-4.1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let session = &sessions(&ts)[id.as_str()];
    assert_eq!(events(session).last().unwrap()["type"], "compacted");
}

#[test]
fn importing_again_changes_nothing() {
    let ts = TestStore::new();
    for tool in ["claude", "codex", "pi"] {
        let src = copy_of(&ts, tool);
        assert!(import(&ts, &["--from", tool, src.to_str().unwrap()]).status.success());
        let before = ts.snapshot();
        let out = import(&ts, &["--from", tool, src.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(stdout_of(&out), "", "{tool}: nothing new to say");
        assert!(stderr_of(&out).contains("unchanged since imported"), "{}", stderr_of(&out));
        assert_eq!(ts.snapshot(), before, "{tool}: the store changed");
    }
}

#[test]
fn a_grown_codex_rollout_appends_only_its_new_entries() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "codex")
        .join("sessions/2026/11/21/rollout-2026-11-21T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
    let whole = std::fs::read_to_string(&src).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    // The file as it was after the first turn: the agent still writing it.
    std::fs::write(&src, lines[..15].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    assert!(import(&ts, &["--from", "codex", src.to_str().unwrap()]).status.success());
    let (id, first) = ts.only_session();
    let before = events(&first).clone();
    std::fs::write(&src, &whole).unwrap();
    let out = import(&ts, &["--from", "codex", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (again, grown) = ts.only_session();
    assert_eq!(again, id, "the same session");
    let after = events(&grown);
    assert_eq!(&after[..before.len()], &before[..], "what was there is untouched");
    assert!(after.len() > before.len());
    assert!(texts_of(&grown, "assistant").contains(&"All 12 tests pass.".to_string()));
    assert_eq!(stdout_of(&out).split('\t').next(), Some(id.as_str()));
    // Imported whole in one go, the same entries.
    let fresh = TestStore::new();
    let copy = fresh.dir.path().join("rollout.jsonl");
    std::fs::write(&copy, &whole).unwrap();
    assert!(import(&fresh, &["--from", "codex", copy.to_str().unwrap()]).status.success());
    let (_, once) = fresh.only_session();
    assert_eq!(events(&once), after);
}

#[test]
fn a_garbage_line_is_named_and_skipped_and_the_rest_imported() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "pi")
        .join("--home-ada-src-app--/2026-11-22T14-00-00-000Z_1c9e4f7a-2b3d-4e5f-8a6b-7c8d9e0f1a2b.jsonl");
    let text = std::fs::read_to_string(&src).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(5, "{\"type\":\"message\",\"id\":\"zz\",\"parentId\":");
    std::fs::write(&src, lines.join("\n") + "\n").unwrap();
    let out = import(&ts, &["--from", "pi", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains(&format!("{}:6: skipped: not JSON", src.display())), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).lines().count(), 2, "the session and its branch: {}", stdout_of(&out));
    let all = sessions(&ts);
    let (_, main) = from_source(&all, "0f1a2b.jsonl");
    assert!(texts_of(main, "user").iter().any(|t| t == "Now document it in README.md"));
}

#[test]
fn a_wrong_from_is_refused_and_an_empty_folder_says_so() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "codex");
    let out = import(&ts, &["--from", "claude", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("is a codex transcript, not claude's: import it with --from codex"),
        "{}",
        stderr_of(&out)
    );
    assert!(sessions(&ts).is_empty());
    let empty = ts.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = import(&ts, &["--from", "pi", empty.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(stderr_of(&out).contains("nothing to import"), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "");
}

#[test]
fn the_default_locations_and_a_dry_run() {
    let ts = TestStore::new();
    let home = ts.dir.path().join("home");
    copy_tree(&fixtures().join("pi"), &home.join(".pi/agent/sessions"));
    let out = import(&ts, &["--from", "pi", "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let records: Vec<Value> = stdout_of(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r["id"] == "-" && r["status"] == "new"));
    assert!(!ts.sessions_dir().exists() || sessions(&ts).is_empty(), "a dry run writes nothing");
    let out = ts
        .sessions()
        .args(["import", "--from", "codex"])
        .env("CODEX_HOME", ts.dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("nowhere/sessions"), "{}", stderr_of(&out));
}

/// Transcripts the real tools wrote (Claude Code 2.1.197 and pi, driven
/// against a scripted model: see the fixtures' README): their shapes, not
/// ours, become valid sessions.
#[test]
fn recorded_claude_code_and_pi_transcripts() {
    let (ts, server) = store_and_server();
    let src = ts.dir.path().join("sources/recorded");
    copy_tree(&fixtures().join("recorded"), &src);
    for tool in ["claude", "pi"] {
        let out = import(&ts, &["--from", tool, src.join(tool).to_str().unwrap()]);
        assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
    }
    let all = sessions(&ts);
    assert_eq!(all.len(), 3, "Claude Code's session and its subagent, pi's session");
    let calls = check_calls(&all);
    assert_eq!(calls.len(), 10, "{calls:?}");
    let (claude_id, claude) = from_source(&all, "040a4136-8c79-4182-afa8-3dcce6912609.jsonl");
    let (_, agent) = from_source(&all, "agent-a65e512f81fd0f5e8.jsonl");
    let (_, pi) = from_source(&all, "01a23360-9e96-7216-bf79-a856c0f65660.jsonl");
    assert_eq!(claude["title"], "What files are here?");
    assert_eq!(claude["cwd"], "/tmp/agents/work");
    assert_eq!(claude["importedFrom"]["version"], "2.1.197");
    assert!(texts_of(claude, "compacted")[0].contains("The summary below covers"), "the summary line is the brief");
    // The subagent is a child at the entry that spawned it, whole with its result.
    assert_eq!(agent["parent"]["id"].as_str(), Some(claude_id.as_str()));
    let at = agent["parent"]["entry"].as_u64().unwrap() as usize;
    assert_eq!(
        (events(claude)[at - 1]["type"].as_str(), events(claude)[at - 1]["name"].as_str()),
        (Some("tool"), Some("Agent"))
    );
    assert_eq!(texts_of(agent, "assistant").last().unwrap(), "Subagent report: README.md and main.rs.");
    assert_eq!(pi["model"], "anthropic/claude-sonnet-4-5");
    assert!(texts_of(pi, "compacted")[0].starts_with("## Goal"));
    assert!(texts_of(pi, "user").iter().any(|t| t.starts_with("Ran `git status --short")));
    assert!(events(claude).iter().chain(events(pi)).all(|e| !e["at"].as_str().unwrap().is_empty()));
    server.push(text_reply("continuing", 100));
    let out = ts.chat().args(["--resume", claude_id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let body = server.model_requests()[0].body.to_string();
    assert!(body.contains("There are two files") && !body.contains("skill_listing"), "{body}");
}

/// On a terminal, a progress bar (by MB of source read, with the file's
/// name) on stderr, cleared before each row and at the end.
#[test]
fn a_progress_bar_on_a_terminal() {
    let ts = TestStore::new();
    let src = copy_of(&ts, "pi");
    let exe = env!("CARGO_BIN_EXE_glrs-sessions");
    let shown = crate::support::pty::run_raw(&ts, exe, &["import", "--from", "pi", src.to_str().unwrap()]);
    assert!(shown.contains("\r\x1b[2K[") && shown.contains(" MB 2025-10-01T09-00-00-000Z_9d8c7b6a.jsonl"), "{shown:?}");
    assert_eq!(sessions(&ts).len(), 3, "{shown:?}");
    let rows: Vec<&str> = shown.lines().filter(|line| line.contains('\t')).collect();
    assert_eq!(rows.len(), 3, "{shown:?}");
    for row in rows {
        // The bar cleared: what the line shows is the row alone.
        let seen = row.rsplit("\x1b[2K").next().unwrap();
        let id = seen.split('\t').next().unwrap();
        assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{row:?}");
    }
}
