//! Bad and changing input for every tool (SPEC 18): a garbage line in the
//! middle is named by file and line and the rest imported (exit 1); each
//! tool's file refused under each other `--from`; a file of no agent; a
//! planted API key redacted in title and entries; a source rewritten in
//! place imported as a new session, said so; line types of versions to
//! come kept and never sent.

use std::path::{Path, PathBuf};

use crate::import::{calls_answered_once, copy_tree, events, fixtures, from_source, import, sessions, texts_of};
use crate::support::*;

const CLAUDE: &str = "claude/-home-ada-src-app/6f1c2a9e-1b7d-4c55-9d2e-3a8f0c4b7e11.jsonl";
const CODEX: &str = "codex/sessions/2026/11/21/rollout-2026-11-21T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl";
const CODEX_OLD: &str = "codex/old/rollout-2025-05-02-5e8c1d2a-0b3f-4a6e-9c7d-1f2e3a4b5c6d.jsonl";
const PI: &str = "pi/--home-ada-src-app--/2026-11-22T14-00-00-000Z_1c9e4f7a-2b3d-4e5f-8a6b-7c8d9e0f1a2b.jsonl";

/// A copy of one fixture file in the test's folder.
fn copy_file(ts: &TestStore, fixture: &str) -> PathBuf {
    let to = ts.dir.path().join("sources").join(Path::new(fixture).file_name().unwrap());
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join(fixture), &to).unwrap();
    to
}

fn edit(path: &Path, change: impl FnOnce(&mut Vec<String>)) {
    let mut lines: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(str::to_string).collect();
    change(&mut lines);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_garbage_line_in_a_claude_code_or_codex_file_is_named_and_the_rest_imported() {
    for (tool, fixture, last_prompt) in
        [("claude", CLAUDE, "Run the whole suite now."), ("codex", CODEX, "Spawn a helper to check the docs build")]
    {
        let ts = TestStore::new();
        let src = copy_file(&ts, fixture);
        edit(&src, |lines| lines.insert(5, "{\"type\":\"user\",\"message\":{\"role\":".into()));
        let out = import(&ts, &["--from", tool, src.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{tool}: {}", stderr_of(&out));
        let named = format!("{}:6: skipped: not JSON", src.display());
        assert!(stderr_of(&out).contains(&named), "{tool}: {}", stderr_of(&out));
        let (_, session) = ts.only_session();
        assert!(texts_of(&session, "user").iter().any(|t| t.starts_with(last_prompt)), "{tool}: the rest is imported");
    }
}

#[test]
fn each_tools_file_is_refused_under_each_other_from() {
    for (tool, fixture) in [("claude", CLAUDE), ("codex", CODEX), ("codex", CODEX_OLD), ("pi", PI)] {
        for other in ["claude", "codex", "pi"].into_iter().filter(|o| *o != tool) {
            let ts = TestStore::new();
            let src = copy_file(&ts, fixture);
            let out = import(&ts, &["--from", other, src.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(1), "{fixture} as {other}");
            let said = format!("{} is a {tool} transcript, not {other}'s: import it with --from {tool}", src.display());
            assert!(stderr_of(&out).contains(&said), "{fixture} as {other}: {}", stderr_of(&out));
            assert!(sessions(&ts).is_empty(), "{fixture} as {other}: something was imported");
        }
    }
    let ts = TestStore::new();
    let notes = ts.dir.path().join("notes.jsonl");
    std::fs::write(&notes, "{\"todo\": \"buy milk\"}\n{\"todo\": \"call Bob\"}\n").unwrap();
    let out = import(&ts, &["--from", "pi", notes.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let said = format!("{} is not a pi transcript: nothing in it could be imported", notes.display());
    assert!(stderr_of(&out).contains(&said), "{}", stderr_of(&out));
    assert!(sessions(&ts).is_empty());
}

#[test]
fn a_key_planted_in_a_codex_or_pi_session_is_redacted_in_prompts_titles_and_results() {
    let key = format!("sk-proj-{}", "Qw3".repeat(12));
    for (tool, fixture, prompt, result) in [
        ("codex", CODEX, "List the files and fix the typo in README.md", "Cargo.toml"),
        ("pi", PI, "Add a --verbose flag to the CLI in src/main.rs", "Successfully replaced text"),
    ] {
        let ts = TestStore::new();
        let src = copy_file(&ts, fixture);
        // In the first prompt (the title) and in a tool's result.
        let text = std::fs::read_to_string(&src).unwrap();
        let planted = text
            .replacen(result, &format!("OPENAI_API_KEY={key} {result}"), 1)
            .replace(prompt, &format!("{prompt} using {key}"));
        assert_ne!(planted, text);
        std::fs::write(&src, planted).unwrap();
        let out = import(&ts, &["--from", tool, src.to_str().unwrap()]);
        assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
        assert!(!stdout_of(&out).contains(&key[..12]), "{tool}: the key was printed");
        let stored: String = ts
            .snapshot()
            .into_iter()
            .filter(|(path, _)| path.starts_with(ts.data_home()))
            .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
            .collect();
        assert!(stored.contains("[REDACTED:openai]"), "{tool}: nothing was redacted");
        assert!(!stored.contains(&key[..12]), "{tool}: the key was written");
        let all = sessions(&ts);
        let (_, main) = from_source(&all, Path::new(fixture).file_name().unwrap().to_str().unwrap());
        let redacted = format!("{prompt} using [REDACTED:openai]");
        assert!(texts_of(main, "user").contains(&redacted), "{tool}: {:?}", texts_of(main, "user"));
        if tool == "codex" {
            assert_eq!(main["title"].as_str().unwrap(), redacted, "the title, from the first prompt");
        }
        assert!(std::fs::read_to_string(&src).unwrap().contains(&key), "{tool}: the source is only read");
    }
}

#[test]
fn a_source_rewritten_in_place_is_a_new_session_and_the_old_one_stays() {
    let ts = TestStore::new();
    let src = copy_file(&ts, CODEX);
    assert!(import(&ts, &["--from", "codex", src.to_str().unwrap()]).status.success());
    let (old_id, old) = ts.only_session();
    edit(&src, |lines| {
        let at = lines.iter().position(|l| l.contains("All 12 tests pass.")).unwrap();
        lines[at] = lines[at].replace("All 12 tests pass.", "All 13 tests pass.");
    });
    let out = import(&ts, &["--from", "codex", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let note = format!("changed since it was imported as {old_id}: imported as a new session");
    assert!(stderr_of(&out).contains(&note), "{}", stderr_of(&out));
    let all = sessions(&ts);
    assert_eq!(all.len(), 2);
    assert_eq!(all[&old_id], old, "the session imported before is untouched");
    let new = all.iter().find(|(id, _)| **id != old_id).unwrap().1;
    assert!(texts_of(new, "assistant").contains(&"All 13 tests pass.".to_string()));
    assert_eq!(stdout_of(&out).split('\t').next(), all.keys().find(|id| **id != old_id).map(String::as_str));
}

#[test]
fn line_types_of_versions_to_come_are_kept_and_never_sent() {
    let (ts, server) = store_and_server();
    let codex = copy_file(&ts, CODEX);
    edit(&codex, |lines| {
        let at = "\"timestamp\":\"2026-11-21T10:06:40.000Z\"";
        lines.push(format!("{{{at},\"type\":\"hologram_state\",\"payload\":{{\"note\":\"codex future line\"}}}}"));
        lines.push(format!(
            "{{{at},\"type\":\"response_item\",\"payload\":{{\"type\":\"hologram_call\",\"query\":\"codex future item\"}}}}"
        ));
    });
    let pi = copy_file(&ts, PI);
    edit(&pi, |lines| {
        lines.push(
            "{\"type\":\"hologram\",\"id\":\"f1000022\",\"parentId\":\"k1000021\",\
             \"timestamp\":\"2026-11-22T14:05:00.000Z\",\"note\":\"pi future entry\"}"
                .into(),
        );
    });
    for (tool, src, names, said) in [
        ("codex", &codex, &["import:hologram_state", "import:hologram_call"][..], "codex future"),
        ("pi", &pi, &["import:hologram"][..], "pi future entry"),
    ] {
        let out = import(&ts, &["--from", tool, src.to_str().unwrap()]);
        assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
        let all = sessions(&ts);
        let (id, session) = from_source(&all, src.file_name().unwrap().to_str().unwrap());
        for name in names {
            let kept = events(session).iter().find(|e| e["name"] == *name);
            assert!(kept.is_some_and(|e| e["type"] == "custom"), "{tool}: {name} not kept");
        }
        server.push(text_reply("continuing", 100));
        let out = ts.chat().args(["--resume", id, "-m", "openai/gpt-4.1", "-p", "continue"]).output().unwrap();
        assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
        let requests = server.model_requests();
        let body = &requests.last().unwrap().body;
        calls_answered_once(body);
        assert!(!body.to_string().contains(said), "{tool}: a kept line reached the model: {body}");
    }
}

#[test]
fn glrs_compact_compacts_an_imported_claude_code_and_codex_session() {
    use crate::support::mock::Reply;
    use crate::support::sse::openai_text;
    for (tool, folder, tail) in [("claude", "claude", "4b7e11.jsonl"), ("codex", "codex", "3f4a5b.jsonl")] {
        let (ts, server) = store_and_server();
        ts.config(serde_json::json!({
            "keepRecentTokens": 10,
            "tools": {"enabled": false},
            "memoryFlush": {"enabled": false},
            "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}},
            "retry": {"attempts": 1},
        }));
        let src = ts.dir.path().join("sources");
        copy_tree(&fixtures().join(folder), &src);
        assert!(import(&ts, &["--from", tool, src.to_str().unwrap()]).status.success());
        let all = sessions(&ts);
        let (id, before) = from_source(&all, tail);
        server.push(Reply::sse(openai_text(&["label\n## Goal\ngo on"], 1, 1, 0)));
        let out = ts
            .cmd("glrs-compact")
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .args([id.as_str(), "--model", "openai/gpt-4.1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool}: {}", stderr_of(&out));
        let after = &sessions(&ts)[id.as_str()];
        assert_eq!(events(after).last().unwrap()["type"], "compacted", "{tool}");
        assert_eq!(events(after)[..events(before).len()], events(before)[..], "{tool}: appended only");
        calls_answered_once(&server.model_requests()[0].body);
    }
}
