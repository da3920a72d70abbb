//! `glrs-sessions show`, `status`, `grep`, `path`, `rm`, `pin`/`unpin`, and
//! ids that must be refused before any path is built.

use crate::support::*;
use serde_json::json;

const U1: &str = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"the login redirect test is failing"}"#;
const A1: &str = r#"{"type":"assistant","at":"2026-11-01T10:00:02.000Z","text":"Let me read it.","model":"openai/gpt-4.1","toolCalls":[{"id":"call_1","name":"read","input":{"path":"src/auth/redirect.ts"}}],"stopReason":"tool_use"}"#;
const T1: &str = r#"{"type":"tool","at":"2026-11-01T10:00:03.000Z","id":"call_1","name":"read","input":{"path":"src/auth/redirect.ts"},"result":"export const redirect = (url) => url.split('?')[0];","isError":false}"#;
const US: &str = r#"{"type":"usage","at":"2026-11-01T10:00:04.000Z","model":"openai/gpt-4.1","inputTokens":100,"outputTokens":20,"cacheReadTokens":5,"cacheWriteTokens":1,"costUsd":0.25}"#;
const US2: &str = r#"{"type":"usage","at":"2026-11-01T10:00:05.000Z","model":"openai/gpt-4.1","inputTokens":300,"outputTokens":40,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.5}"#;
const CP: &str = r#"{"type":"compacted","at":"2026-11-01T10:00:06.000Z","brief":"fixed the redirect\n## Goal\nmake `npm test` pass","firstKept":3,"tokensBefore":900,"tokensAfter":120,"model":"openai/gpt-4.1-mini","artifact":"2026-11-01T10-00-06-000Z.md"}"#;
const MF: &str =
    r#"{"type":"custom","at":"2026-11-01T10:00:07.000Z","name":"memoryFlush","data":{"compactionCount":1}}"#;
const UNKNOWN: &str = r#"{"type":"hologram","at":"2026-11-01T10:00:08.000Z","beam":"ultraviolet"}"#;

#[test]
fn show_prints_numbered_entries_and_the_raw_file() {
    let ts = TestStore::new();
    let path = ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1, A1, T1, US, UNKNOWN]);
    let out = ts.sessions().args(["show", "aaaa"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.starts_with("session aaaa0001\ncreated 2026-11-01T10:00:00.000Z · updated 2026-11-02T10:00:00.000Z · cwd /w\n5 entries · context 50 tokens\n"), "{text}");
    for expected in [
        "[1] user · 2026-11-01T10:00:01.000Z\nthe login redirect test is failing\n",
        "[2] assistant · openai/gpt-4.1 · tool_use · 2026-11-01T10:00:02.000Z\nLet me read it.\n→ read src/auth/redirect.ts (call_1)\n",
        "[3] tool read (call_1) · 2026-11-01T10:00:03.000Z\nread src/auth/redirect.ts\nexport const redirect",
        "[4] usage · openai/gpt-4.1 · in 100 · out 20 · cache read 5 · cache write 1 · $0.2500 · 2026-11-01T10:00:04.000Z\n",
        "[5] hologram · 2026-11-01T10:00:08.000Z\n{\"type\":\"hologram\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    assert!(!text.contains('\x1b'), "no colour when piped");

    let out = ts.sessions().args(["show", "aaaa0001", "--tail", "2"]).output().unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("[4] usage") && text.contains("[5] hologram") && !text.contains("[3] tool"), "{text}");
    let out = ts.sessions().args(["show", "aaaa0001", "--from", "3", "--tail", "9"]).output().unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("[3] tool") && !text.contains("[2] assistant"), "{text}");

    let out = ts.sessions().args(["show", "aaaa0001", "--json"]).output().unwrap();
    assert_eq!(out.stdout, std::fs::read(&path).unwrap());
    let out = ts.sessions().args(["show", "aaaa0001", "--json", "--from", "5"]).output().unwrap();
    assert_eq!(
        json_of(&out),
        json!([{"entry": 5, "value": {"type": "hologram", "at": "2026-11-01T10:00:08.000Z", "beam": "ultraviolet"}}])
    );
}

#[test]
fn show_marks_a_forks_parent_and_pins() {
    let ts = TestStore::new();
    let text = r#"{"schema":2,"id":"aaaa0001","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"2026-11-01T10:00:00.000Z","cwd":"/w","parent":{"id":"bbbb0002","entry":42},"model":"anthropic/claude-sonnet-4-5","key":"work","pinned":true,"title":"a fork","events":[],"contextTokens":7}"#;
    ts.write_raw(&ts.sessions_dir(), "aaaa0001", text);
    let out = ts.sessions().args(["show", "aaaa0001"]).output().unwrap();
    assert_eq!(
        stdout_of(&out),
        "session aaaa0001 · a fork\ncreated 2026-11-01T10:00:00.000Z · updated 2026-11-01T10:00:00.000Z · cwd /w\n\
         0 entries · context 7 tokens · model anthropic/claude-sonnet-4-5 · key work · forked from bbbb0002 at entry 42 · pinned\n"
    );
}

#[test]
fn bad_session_files_fail_show_and_status_with_the_file_line_and_column() {
    let ts = TestStore::new();
    let corrupt = ts.write_raw(&ts.sessions_dir(), "aaaa0001", "{\"schema\":2,\n\"id\":\"aaaa0001\",\n\"events\":[}\n");
    let newer = ts.write_raw(&ts.sessions_dir(), "bbbb0002", r#"{"schema":3,"id":"bbbb0002","events":[]}"#);
    let mut bytes = br#"{"schema":2,"id":"cccc0003","createdAt":"x","updatedAt":"x","cwd":"/","events":[{"type":"user","at":"x","text":"caf"#.to_vec();
    bytes.extend_from_slice(&[0xe9, b'"', b'}', b']', b'}']);
    let latin1 = ts.sessions_dir().join("cccc0003.json");
    std::fs::write(&latin1, &bytes).unwrap();
    for cmd in ["show", "status"] {
        let out = ts.sessions().args([cmd, "aaaa0001"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr_of(&out);
        assert!(err.starts_with("glrs-sessions: error: ") && err.contains(&*corrupt.to_string_lossy()), "{err}");
        assert!(err.contains("line 3 column"), "{err}");

        let out = ts.sessions().args([cmd, "bbbb0002"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr_of(&out).contains("schema 3") && stderr_of(&out).contains(&*newer.to_string_lossy()));

        let out = ts.sessions().args([cmd, "cccc0003"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr_of(&out);
        assert!(err.contains("cccc0003.json") && err.contains("line 1 column") && !err.contains("panicked"), "{err}");
    }
    // Refused files are never rewritten, not even by pin.
    let before = std::fs::read(&newer).unwrap();
    ts.sessions().args(["pin", "bbbb0002"]).assert().code(1);
    assert_eq!(std::fs::read(&newer).unwrap(), before);
}

#[test]
fn status_reports_usage_compactions_flush_artifacts_and_the_holder() {
    let ts = TestStore::new();
    let path = ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1, A1, T1, US, US2, CP, MF]);
    let artifacts = ts.store.paths.artifacts.join("aaaa0001");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("2026-11-01T10-00-06-000Z.md"), "---\n").unwrap();
    let expected = |open: bool, pid: Option<u32>| {
        json!({
            "id": "aaaa0001", "path": path, "legacy": false, "title": null, "key": null, "model": null, "thinking": null,
            "sandbox": "workspace-write",
            "sandboxEnforced": matches!(glrs::sandbox::support(), glrs::sandbox::Support::Enforced(_)),
            "cwd": "/w", "createdAt": "2026-11-01T10:00:00.000Z", "updatedAt": "2026-11-02T10:00:00.000Z",
            "parent": null, "pinned": false, "bytes": std::fs::metadata(&path).unwrap().len(),
            "entries": 7, "contextTokens": 70, "window": 256000, "trigger": 192000, "compactions": 1,
            "lastCompaction": "2026-11-01T10:00:06.000Z", "lastMemoryFlush": "2026-11-01T10:00:07.000Z",
            "artifacts": 1,
            "usage": {"modelCalls": 2, "inputTokens": 400, "outputTokens": 60, "cacheReadTokens": 5, "cacheWriteTokens": 1, "costUsd": 0.75},
            "open": open, "openBy": pid, "compacting": false,
        })
    };
    let out = ts.sessions().args(["status", "aaaa0001", "--json"]).output().unwrap();
    assert_eq!(json_of(&out), expected(false, None));

    let id = glrs::SessionId::parse("aaaa0001").unwrap();
    let held = ts.store.open_lock(&id).unwrap();
    let out = ts.sessions().args(["status", "aaaa", "--json"]).output().unwrap();
    assert_eq!(json_of(&out), expected(true, Some(std::process::id())));
    let out = ts.sessions().args(["status", "aaaa"]).output().unwrap();
    let text = stdout_of(&out);
    for line in
        ["id\taaaa0001", "entries\t7", "inputTokens\t400", "costUsd\t0.750000", "artifacts\t1", "compactions\t1"]
    {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    assert!(text.contains(&format!("openBy\tpid {}", std::process::id())), "{text}");
    drop(held);
}

#[test]
fn grep_finds_lines_across_sessions() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1, A1, T1, CP]);
    ts.write_fixed(
        "bbbb0002",
        "2026-11-03T10:00:00.000Z",
        "/w",
        &[r#"{"type":"user","at":"x","text":"no match here\nREDIRECT\tloop"}"#],
    );
    ts.write_raw(&ts.sessions_dir(), "cccc0003", "{broken");

    let out = ts.sessions().args(["grep", "-i", "redirect"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        stdout_of(&out),
        "bbbb0002\t1\tuser\tREDIRECT loop\n\
         aaaa0001\t1\tuser\tthe login redirect test is failing\n\
         aaaa0001\t2\tassistant\tread {\"path\":\"src/auth/redirect.ts\"}\n\
         aaaa0001\t3\ttool\tread {\"path\":\"src/auth/redirect.ts\"}\n\
         aaaa0001\t3\ttool\texport const redirect = (url) => url.split('?')[0];\n\
         aaaa0001\t4\tcompacted\tfixed the redirect\n"
    );
    assert!(stderr_of(&out).contains("cccc0003.json"), "a bad file is named: {}", stderr_of(&out));

    let out = ts.sessions().args(["grep", "npm test", "--json"]).output().unwrap();
    assert_eq!(
        json_of(&out),
        json!([{"id": "aaaa0001", "entry": 4, "type": "compacted", "line": "make `npm test` pass"}])
    );

    ts.sessions().args(["grep", "nothing-like-this"]).assert().code(1).stdout("");
    let out = ts.sessions().args(["grep", "("]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an invalid pattern is a usage error, as in grep(1)");
    assert!(stderr_of(&out).contains("invalid pattern \"(\""), "{}", stderr_of(&out));
}

#[test]
fn path_names_the_folder_or_the_file() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[]);
    ts.write_fixed_in(&ts.legacy_dir(), "dddd0004", "2026-11-02T10:00:00.000Z", "/w", &[]);
    ts.sessions().arg("path").assert().success().stdout(format!("{}\n", ts.sessions_dir().display()));
    ts.sessions()
        .args(["path", "aaaa"])
        .assert()
        .success()
        .stdout(format!("{}\n", ts.sessions_dir().join("aaaa0001.json").display()));
    ts.sessions()
        .args(["path", "dddd0004"])
        .assert()
        .success()
        .stdout(format!("{}\n", ts.legacy_dir().join("dddd0004.json").display()));
}

#[test]
fn rm_removes_sessions_with_artifacts_but_never_an_open_or_legacy_one() {
    let ts = TestStore::new();
    let a = ts.session("/w", &[user("one")]);
    let b = ts.session("/w", &[user("two")]);
    let c = ts.session("/w", &[user("three")]);
    let art = ts.store.paths.artifacts_of(&a);
    std::fs::create_dir_all(&art).unwrap();
    std::fs::write(art.join("x.md"), "x").unwrap();
    ts.write_fixed_in(&ts.legacy_dir(), "dddd0004", "2026-11-02T10:00:00.000Z", "/w", &[]);

    let held = ts.store.open_lock(&b).unwrap();
    let out = ts.sessions().args(["rm", a.as_str(), b.as_str(), "dddd0004"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "busy wins the exit code");
    let err = stderr_of(&out);
    assert!(err.contains(&format!("session {b} is open in another program (pid {})", std::process::id())), "{err}");
    assert!(err.contains(&format!("glrs-fork {b}")), "hint to fork: {err}");
    assert!(err.contains("dddd0004 is in the legacy glorious folder"), "{err}");
    assert!(!ts.sessions_dir().join(format!("{a}.json")).exists());
    assert!(!art.exists());
    assert!(ts.sessions_dir().join(format!("{b}.json")).exists());
    assert!(ts.legacy_dir().join("dddd0004.json").exists());
    ts.release(held, &b);

    ts.sessions().args(["rm", b.as_str(), c.as_str()]).assert().success().stdout("");
    ts.sessions().arg("ls").assert().success().stdout("dddd0004\t2026-11-02T10:00:00.000Z\t0\t0\t/w\t[legacy]\n");
    ts.sessions().args(["rm", a.as_str()]).assert().code(1).stderr(format!("glrs-sessions: error: no session {a}\n"));
}

#[test]
fn pin_and_unpin_keep_updated_at() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.sessions().args(["pin", "aaaa"]).assert().success().stdout("");
    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    let row = &json_of(&out)[0];
    assert_eq!((row["pinned"].clone(), row["updatedAt"].clone()), (json!(true), json!("2026-11-02T10:00:00.000Z")));
    ts.sessions().args(["unpin", "aaaa0001"]).assert().success();
    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    assert_eq!(json_of(&out)[0]["pinned"], json!(false));
}

#[test]
fn pinning_a_legacy_session_saves_it_to_the_store_and_leaves_the_original() {
    let ts = TestStore::new();
    let legacy = ts.write_fixed_in(&ts.legacy_dir(), "dddd0004", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    let before = std::fs::read(&legacy).unwrap();
    ts.sessions().args(["pin", "dddd"]).assert().success();
    assert_eq!(std::fs::read(&legacy).unwrap(), before);
    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    let rows = json_of(&out);
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!((rows[0]["legacy"].clone(), rows[0]["pinned"].clone()), (json!(false), json!(true)));
    assert_eq!(rows[0]["entries"], 1);
}

#[test]
fn bad_ids_are_refused_and_touch_nothing() {
    let ts = TestStore::new();
    ts.write_fixed("abcd0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.write_fixed("abcd0002", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    // A file outside the store that a path trick would reach.
    std::fs::write(ts.store.paths.data.join("x.json"), "{}").unwrap();
    let before = ts.snapshot();
    let cases: [(&str, i32, &str); 6] = [
        ("../x", 2, "invalid session id \"../x\""),
        ("3f9a/..", 2, "invalid session id \"3f9a/..\""),
        ("abc", 2, "at least 4 characters"),
        ("abcd00011", 2, "8 hex characters"),
        ("abcd", 1, "ambiguous: it matches abcd0001, abcd0002"),
        ("abcd0009", 1, "no session abcd0009"),
    ];
    for (id, code, message) in cases {
        for args in [vec!["show", id], vec!["status", id], vec!["rm", id], vec!["pin", id], vec!["path", id]] {
            let out = ts.sessions().args(&args).output().unwrap();
            assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr_of(&out));
            let err = stderr_of(&out);
            assert!(err.starts_with("glrs-sessions: error: ") && err.contains(message), "{args:?}: {err}");
        }
    }
    let out = ts.sessions().args(["show", "3f9a\u{0}"]).output();
    // A NUL cannot even be passed as an argument on Unix; either way nothing is touched.
    if let Ok(out) = out {
        assert_ne!(out.status.code(), Some(0));
    }
    assert_eq!(ts.snapshot(), before);
}

#[test]
fn a_rewrite_keeps_unknown_fields_and_entry_types() {
    let ts = TestStore::new();
    let text = r#"{"schema":2,"id":"aaaa0001","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"2026-11-01T10:00:00.000Z","cwd":"/w","future":{"nested":[1,2.5,"x"]},"events":[{"type":"user","at":"t","text":"hi","mood":"curious"},{"type":"hologram","at":"t","beam":{"nm":350}}],"contextTokens":3,"trailer":true}"#;
    let path = ts.write_raw(&ts.sessions_dir(), "aaaa0001", text);
    ts.sessions().args(["pin", "aaaa0001"]).assert().success();
    let mut expected: serde_json::Value = serde_json::from_str(text).unwrap();
    expected["pinned"] = json!(true);
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written, expected);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("\n{\"type\":\"hologram\",\"at\":\"t\",\"beam\":{\"nm\":350}}\n"), "{written}");
    let keys: Vec<String> =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&written).unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        ["schema", "id", "createdAt", "updatedAt", "cwd", "future", "pinned", "events", "contextTokens", "trailer"]
    );
}

#[test]
fn status_totals_never_overflow_on_huge_usage_counts() {
    let ts = TestStore::new();
    let huge = r#"{"type":"usage","at":"2026-11-01T10:00:04.000Z","model":"openai/gpt-4.1","inputTokens":18446744073709551615,"outputTokens":18446744073709551615,"cacheReadTokens":18446744073709551615,"cacheWriteTokens":18446744073709551615}"#;
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1, huge, huge]);
    let out = ts.sessions().args(["status", "aaaa0001", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let usage = &json_of(&out)["usage"];
    assert_eq!(usage["modelCalls"], 2);
    assert_eq!(usage["inputTokens"], u64::MAX, "saturated, not wrapped: {usage}");
    assert_eq!(usage["cacheWriteTokens"], u64::MAX, "{usage}");
}

#[test]
fn keys_never_calls_an_unreadable_session_gone() {
    let ts = TestStore::new();
    let id = ts.session("/tmp", &[user("hi")]);
    ts.store.set_key("work", &id).unwrap();
    let path = ts.sessions_dir().join(format!("{id}.json"));
    std::fs::write(&path, "{\"schema\":2,").unwrap();
    let out = ts.sessions().args(["keys", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let row = &json_of(&out)[0];
    assert_eq!(row["session"], id.as_str());
    let next = row["nextReset"].as_str().unwrap();
    assert!(!next.contains("gone"), "the session is there, only unreadable: {next}");
    assert!(stderr_of(&out).contains(&path.display().to_string()), "the bad file is named: {}", stderr_of(&out));
}
