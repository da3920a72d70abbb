//! Escapes from the store and from the session's folder (issue 14, items
//! 13, 14, 16): symbolic links planted in a temporary store never make glrs
//! read, write or delete a file outside it; the memory flush never creates
//! a cwd that is gone; a chat refused while `glrs-compact` flushes is told
//! a compaction is running, and so are `glrs-compact --all` and `status`.

use std::os::unix::fs::symlink;
use std::path::Path;

use glrs::agent::session_tools::{CompactionTool, CompactionToolKind};
use glrs::compact::artifact::{self, ArtifactInfo};
use glrs::compact::plan::Block;
use serde_json::json;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;

const FRONT: &str = "---\nlabel: outside\ncreatedAt: 2026-11-29T10:00:00.000Z\nmessages: 1\nnote:\nsession: aaaa0001\nentries: 1-2\n---\n[user]\nsecret\n";

fn tool(ts: &TestStore, id: &glrs::SessionId, kind: CompactionToolKind) -> CompactionTool {
    CompactionTool { kind, store: ts.store.clone(), id: id.clone() }
}

fn artifacts(ts: &TestStore, args: &[&str]) -> std::process::Output {
    ts.cmd("glrs-artifacts").args(args).output().unwrap()
}

fn info(id: &glrs::SessionId) -> ArtifactInfo {
    ArtifactInfo {
        file: Default::default(),
        session: id.to_string(),
        created_at: "2026-11-29T11:00:00.000Z".into(),
        label: "new".into(),
        messages: 1,
        note: String::new(),
        entries: "1-1".into(),
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_linked_artifacts_folder_is_refused_everywhere() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("hi")]);
    let outside = ts.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.md"), FRONT).unwrap();
    std::fs::create_dir_all(&ts.store.paths.artifacts).unwrap();
    symlink(&outside, ts.store.paths.artifacts_of(&id)).unwrap();
    let linked = ts.store.paths.artifacts_of(&id).join("x.md");
    let linked = linked.to_str().unwrap();

    // The model's tools: nothing read, annotated or deleted outside.
    assert!(ts.store.artifact_count(&id) == 0, "no tools are offered for a linked folder");
    for (kind, input) in [
        (CompactionToolKind::List, json!({})),
        (CompactionToolKind::Read, json!({"file": "x.md"})),
        (CompactionToolKind::Annotate, json!({"file": "x.md", "note": "pwned"})),
        (CompactionToolKind::Delete, json!({"file": "x.md"})),
    ] {
        let out = tool(&ts, &id, kind).act(&input);
        assert!(out.is_error, "{kind:?}: {out:?}");
        assert!(!out.content.contains("secret"), "{kind:?}: {out:?}");
    }
    // The programs: refused, exit 1.
    for args in [
        vec!["ls", id.as_str()],
        vec!["cat", id.as_str()],
        vec!["cat", linked],
        vec!["annotate", linked, "pwned"],
        vec!["rm", linked],
    ] {
        let out = artifacts(&ts, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout_of(&out));
        assert!(!stdout_of(&out).contains("secret"), "{args:?}");
    }
    // glrs-compact's landing writes no artifact there.
    let err = artifact::write_new(&ts.store, &id, &mut info(&id), &[Block { tag: "user".into(), text: "t".into() }])
        .unwrap_err();
    // Said with its cause (the I/O error is the store error's source).
    let shown = err.report().to_string();
    assert!(shown.contains("refused"), "{shown}");
    assert_eq!(files_in(&outside), ["x.md"]);
    assert_eq!(std::fs::read_to_string(outside.join("x.md")).unwrap(), FRONT);
}

#[test]
fn a_linked_artifact_is_never_read_back() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("hi")]);
    let secret = ts.dir.path().join("secret.md");
    std::fs::write(&secret, FRONT).unwrap();
    let dir = ts.store.paths.artifacts_of(&id);
    std::fs::create_dir_all(&dir).unwrap();
    symlink(&secret, dir.join("2026-11-29T10-00-00-000Z.md")).unwrap();
    let out = tool(&ts, &id, CompactionToolKind::Read).act(&json!({"file": "2026-11-29T10-00-00-000Z.md"}));
    assert!(out.is_error && !out.content.contains("secret"), "{out:?}");
    let listed = tool(&ts, &id, CompactionToolKind::List).act(&json!({}));
    assert!(!listed.content.contains("outside"), "{listed:?}");
    let out = artifacts(&ts, &["ls", id.as_str()]);
    assert!(out.status.success() && stdout_of(&out).is_empty(), "{}", stdout_of(&out));
    let out = artifacts(&ts, &["cat", dir.join("2026-11-29T10-00-00-000Z.md").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!stdout_of(&out).contains("secret"));
    assert!(secret.exists());
}

#[test]
fn a_linked_open_lock_is_not_truncated_and_a_linked_session_is_not_read() {
    let (ts, server) = store_and_server();
    let id = ts.session("/w", &[user("hi")]);
    let victim = ts.dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    symlink(&victim, ts.sessions_dir().join(format!("{id}.open"))).unwrap();
    let out = ts.chat().args(["--resume", id.as_str(), "-p", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains(&format!("{id}.open")), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(server.model_requests().is_empty());
    // A session file that is a link out of the folder is not read either.
    let outside = ts.dir.path().join("elsewhere.json");
    std::fs::copy(ts.store.session_path(&id), &outside).unwrap();
    let other = glrs::SessionId::parse("bbbb0002").unwrap();
    symlink(&outside, ts.store.session_path(&other)).unwrap();
    let out = ts.sessions().args(["show", other.as_str()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
    assert!(stderr_of(&out).contains("leads out of"), "{}", stderr_of(&out));
}

/// A 4,000-token window with the memory flush on: over 2,000 tokens flushes.
fn flush_config(ts: &TestStore, server: &MockServer) {
    ts.config(json!({
        "keepRecentTokens": 100,
        "memoryFlush": {"enabled": true, "softThresholdTokens": 1000},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "models": {"gpt-4.1": {"metadata": {"context": 4000}}}}},
        "retry": {"attempts": 1},
    }));
}

#[test]
fn the_memory_flush_never_creates_a_cwd_that_is_gone() {
    let (ts, server) = (TestStore::new(), MockServer::start());
    flush_config(&ts, &server);
    let project = ts.dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    server.push(Reply::sse(openai_text(&["ok"], 100, 5, 0)));
    let out = ts.chat().current_dir(&project).args(["-m", "openai/gpt-4.1", "-p", "first"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    std::fs::remove_dir_all(&project).unwrap();
    // Over the flush line: the flush is due, and the recorded cwd is gone.
    server.push(Reply::sse(openai_text(&["noted"], 2500, 5, 0)));
    let out = ts.chat().args(["--resume", &id, "-p", "second"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("memory flush skipped"), "{}", stderr_of(&out));
    assert!(!project.exists(), "the cwd was recreated");
    assert_eq!(server.model_requests().len(), 2, "no flush turn");
}

#[test]
fn a_chat_refused_during_glrs_compacts_flush_is_told_a_compaction_runs() {
    let (ts, server) = (TestStore::new(), MockServer::start());
    flush_config(&ts, &server);
    let project = tempfile::tempdir().unwrap();
    let id = three_long_turns(&ts, &server, project.path());
    // The flush answers slowly: the session is held meanwhile.
    server.push(Reply::slow_sse(openai_text(&["NO_", "RE", "PLY", ""], 100, 5, 0), 400));
    server.push(Reply::sse(openai_text(&["worked on it\n## Goal\nx"], 10, 5, 0)));
    let mut compact = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"));
    compact.arg(&id).env("OPENAI_API_KEY", OPENAI_KEY);
    compact.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = compact.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.model_requests().len() < 4 {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for the flush's model call");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = ts.chat().args(["--resume", &id, "-p", "hi"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("being compacted") && stderr.contains(&format!("pid {}", child.id())), "{stderr}");
    assert!(!stderr.contains("fork"), "{stderr}");
    let done = child.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", stderr_of(&done));
}

#[test]
fn a_session_held_by_glrs_compacts_flush_is_said_to_be_compacting_everywhere() {
    let (ts, server) = (TestStore::new(), MockServer::start());
    flush_config(&ts, &server);
    let project = tempfile::tempdir().unwrap();
    let id = three_long_turns(&ts, &server, project.path());
    // Over its trigger (3,000 of a 4,000 window), so `--all` looks at it.
    let sid = glrs::SessionId::parse(&id).unwrap();
    ts.store
        .update(&sid, |f| {
            f.set("contextTokens", json!(3500));
            Ok(())
        })
        .unwrap();
    // The flush answers slowly: the session is held meanwhile.
    let pieces = ["NO_", "RE", "PLY", "", "", "", "", "", "", ""];
    server.push(Reply::slow_sse(openai_text(&pieces, 100, 5, 0), 400));
    server.push(Reply::sse(openai_text(&["worked on it\n## Goal\nx"], 10, 5, 0)));
    let compact = |args: &[&str]| {
        let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"));
        cmd.args(args).env("OPENAI_API_KEY", OPENAI_KEY);
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        cmd
    };
    let first = compact(&[&id]).spawn().unwrap();
    server.wait_for_model_requests(4, "the flush's model call");
    let held = ts.store.open_holder(&sid).unwrap();
    assert_eq!(held, Some(Some(first.id())), "the flush holds the session open");

    let out = compact(&["--all"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("note: skipped {id}: a compaction is running (pid {})", first.id())), "{stderr}");
    assert!(!stderr.contains("open in a chat"), "{stderr}");
    assert_eq!(stdout_of(&out), "");

    let out = ts.chat().args(["--resume", &id, "-p", "hi"]).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains(&format!("session {id} is being compacted (pid {})", first.id())), "{stderr}");
    assert!(!stderr.contains("fork"), "{stderr}");

    let out = ts.sessions().args(["status", &id]).output().unwrap();
    assert!(stdout_of(&out).contains(&format!("pid {} (glrs-compact: a compaction is running)", first.id())));

    // A second `glrs-compact ID` is not refused: it waits for the first,
    // sees its boundary, and does nothing.
    let second = compact(&[&id]).output().unwrap();
    assert!(second.status.success(), "{}", stderr_of(&second));
    assert_eq!(stdout_of(&second), format!("{id}: another compaction landed meanwhile; nothing to compact\n"));
    let done = first.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", stderr_of(&done));
    assert!(stdout_of(&done).starts_with(&format!("{id}: compacted, ")));
    assert_eq!(server.model_requests().len(), 5, "one flush, one brief");
}
