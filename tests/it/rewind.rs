//! Rewind (SPEC 19) end to end against the mock model: three one-shot turns
//! that `write`, `edit` and run `bash` (creating, changing, deleting files,
//! flipping an executable bit), in a git work tree and in a plain folder;
//! then `glrs-sessions checkpoints`/`rewind` and `glrs-fork --files`, and
//! the limits (too-large files, checkpoints off, no git, an open session,
//! `rm`).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// One one-shot turn: the model calls `tool` once, then says "done".
fn turn(
    ts: &TestStore,
    server: &MockServer,
    proj: &Path,
    resume: Option<&str>,
    n: usize,
    tool: (&str, Value),
    env: &[(&str, &std::ffi::OsStr)],
) -> String {
    server.push(Reply::sse(openai_tool_call(&format!("call_{n}"), tool.0, &[&tool.1.to_string()])));
    server.push(Reply::sse(openai_text(&["done"], 100, 3, 0)));
    // The sandbox off: the third turn's command writes outside the
    // workspace too (which a rewind must leave alone), and inside the
    // sandbox it could not.
    let mut cmd = ts.chat();
    cmd.current_dir(proj).env("XDG_CACHE_HOME", ts.dir.path().join("cache")).args([
        "-m",
        "openai/gpt-4.1",
        "--allow-all",
        "--sandbox",
        "off",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(id) = resume {
        cmd.args(["--resume", id]);
    }
    let out = cmd.args(["-p", &format!("turn {n}")]).output().unwrap();
    assert!(out.status.success(), "turn {n}: {}", stderr_of(&out));
    match resume {
        Some(id) => id.to_string(),
        None => ts.only_session().0,
    }
}

fn session(ts: &TestStore, id: &str) -> Value {
    let out = ts.sessions().args(["show", id, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    json_of(&out)
}

/// Entry numbers (from 1) of the entries of `kind`.
fn numbers(session: &Value, kind: &str) -> Vec<usize> {
    let events = session["events"].as_array().unwrap();
    events.iter().enumerate().filter(|(_, e)| e["type"] == kind).map(|(i, _)| i + 1).collect()
}

/// Every file under `dir` but `.git`: its bytes and mode.
fn files(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), (std::fs::read(&p).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Every file under `.git` with its bytes (and mode): the user's repository.
fn git_dir(proj: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let dot = proj.join(".git");
    let mut all = BTreeMap::new();
    fn walk(dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(&p, out);
            } else {
                out.insert(p.display().to_string(), (std::fs::read(&p).unwrap_or_default(), meta.permissions().mode()));
            }
        }
    }
    walk(&dot, &mut all);
    all
}

fn git(proj: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .current_dir(proj)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every file of the workspace: its bytes and mode.
type Files = BTreeMap<String, (Vec<u8>, u32)>;

/// The workspace before the turns, and the three turns. Returns the session
/// id, the user entries' numbers and the workspace before each message.
fn three_turns(ts: &TestStore, server: &MockServer, proj: &Path) -> (String, Vec<usize>, Vec<Files>) {
    std::fs::write(proj.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(proj.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(proj.join("del.txt"), "delete me\n").unwrap();
    std::fs::write(proj.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    set_mode(&proj.join("run.sh"), 0o644);
    std::fs::write(proj.join("build.log"), "ignored\n").unwrap();
    std::fs::write(ts.dir.path().join("outside.txt"), "outside\n").unwrap();
    let mut before = vec![files(proj)];
    let id = turn(ts, server, proj, None, 1, ("write", json!({"path": "new.txt", "content": "new\n"})), &[]);
    before.push(files(proj));
    turn(
        ts,
        server,
        proj,
        Some(&id),
        2,
        ("edit", json!({"path": "keep.txt", "oldText": "keep", "newText": "changed"})),
        &[],
    );
    let command = "rm del.txt && chmod +x run.sh && echo more >> build.log && echo more >> ../outside.txt && echo made > sub/made.txt";
    std::fs::create_dir_all(proj.join("sub")).unwrap();
    before.push(files(proj));
    turn(ts, server, proj, Some(&id), 3, ("bash", json!({"command": command})), &[]);
    let users = numbers(&session(ts, &id), "user");
    assert_eq!(users.len(), 3);
    (id, users, before)
}

fn rewind(ts: &TestStore, args: &[&str]) -> std::process::Output {
    ts.sessions().arg("rewind").args(args).output().unwrap()
}

/// `M path` lines of a dry run, sorted.
fn dry_run(ts: &TestStore, id: &str, n: usize) -> Vec<String> {
    let out = rewind(ts, &[id, &n.to_string(), "--files-only", "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let report = json_of(&out);
    assert_eq!(report["dryRun"], true);
    let mut lines: Vec<String> = report["files"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {}", c["status"].as_str().unwrap(), c["path"].as_str().unwrap()))
        .collect();
    lines.sort();
    lines
}

fn the_whole_story(in_git: bool) {
    let (ts, server, proj) = agent_setup(json!({}));
    if in_git {
        git(&proj, &["init", "-q"]);
        std::fs::write(proj.join("README"), "tracked by the user\n").unwrap();
        git(&proj, &["add", "README"]);
        git(&proj, &["commit", "-q", "-m", "first"]);
    }
    let user_git = in_git.then(|| git_dir(&proj));
    let (id, users, before) = three_turns(&ts, &server, &proj);
    if let Some(git) = &user_git {
        assert_eq!(&git_dir(&proj), git, "the turns and their checkpoints left the user's .git alone");
    }
    let s = session(&ts, &id);
    let checkpoints = numbers(&s, "checkpoint");
    // Two a turn: before its step, and what the step left at the turn's
    // end (SPEC 24: what the session changed, told from what others did).
    assert_eq!(checkpoints.len(), 6, "two a turn: {checkpoints:?}");
    for (u, c) in users.iter().zip(checkpoints.chunks(2)) {
        assert!(c[0] > *u, "each turn's checkpoints follow its message");
        assert!(users.iter().all(|other| other <= u || *other > c[1]), "both in the turn: {users:?} {checkpoints:?}");
    }
    let commits: Vec<String> =
        checkpoints.iter().map(|n| s["events"][n - 1]["commit"].as_str().unwrap().to_string()).collect();
    for request in server.model_requests() {
        let body = request.body.to_string();
        assert!(!body.contains("checkpoint") && commits.iter().all(|c| !body.contains(c.as_str())), "{body}");
    }
    let listed = ts.sessions().args(["checkpoints", &id]).output().unwrap();
    assert_eq!(stdout_of(&listed).lines().count(), 6, "{}", stdout_of(&listed));

    // Before the second message: as the first turn left it.
    assert_eq!(dry_run(&ts, &id, users[1]), ["A del.txt", "D sub/made.txt", "M keep.txt", "M run.sh"]);
    assert_eq!(dry_run(&ts, &id, users[0]), ["A del.txt", "D new.txt", "D sub/made.txt", "M keep.txt", "M run.sh"]);
    let present = files(&proj);
    let out = rewind(&ts, &[&id, &users[1].to_string(), "--files-only", "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let report = json_of(&out);
    assert!(report["fork"].is_null());
    let now = files(&proj);
    // As before the second message, contents and modes, but the ignored
    // file, which stays as the third turn left it.
    let mut expected = before[1].clone();
    expected.insert("build.log".into(), present["build.log"].clone());
    assert_eq!(now, expected);
    assert_eq!(now["keep.txt"].0, b"keep\n");
    assert_eq!(now["del.txt"].0, b"delete me\n");
    assert_eq!(now["run.sh"].1 & 0o111, 0, "the executable bit is put back");
    assert!(now.contains_key("new.txt") && !now.contains_key("sub/made.txt"));
    assert_eq!(now["build.log"].0, b"ignored\nmore\n", "ignored files are left alone");
    assert_eq!(std::fs::read_to_string(ts.dir.path().join("outside.txt")).unwrap(), "outside\nmore\n");

    // And undone.
    let undo = report["files"]["undoEntry"].as_u64().unwrap().to_string();
    let out = rewind(&ts, &[&id, &undo, "--files-only"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(files(&proj), present, "the rewind is undone");

    // glrs-fork ID N --files: both halves; the original is byte for byte
    // as it was (the fork records the checkpoint of the present).
    let original = ts.sessions_dir().join(format!("{id}.json"));
    let before_fork = std::fs::read(&original).unwrap();
    let out = ts.cmd("glrs-fork").args([&id, &users[1].to_string(), "--files"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let fork = stdout_of(&out).trim().to_string();
    assert_eq!(files(&proj), expected, "the files as they were at that message");
    assert!(std::fs::read(&original).unwrap() == before_fork, "glrs-fork --files changed the original {id}");
    assert!(stderr_of(&out).contains(&format!("undo with: glrs-sessions rewind {fork} ")), "{}", stderr_of(&out));
    let forked = session(&ts, &fork);
    let checkpoints = numbers(&forked, "checkpoint");
    assert_eq!(
        forked["events"].as_array().unwrap().len(),
        users[1] + 2,
        "its entries, the present's checkpoint, a notice"
    );
    assert_eq!(checkpoints.last(), Some(&(users[1] + 1)), "the fork records the present");
    assert_eq!(forked["parent"]["id"], id.as_str());
    if let Some(git) = user_git {
        assert_eq!(git_dir(&proj), git, "the user's .git is byte for byte as it was");
    }

    // rm takes a session's checkpoints with it; the fork keeps its own.
    let shadows = ts.data_home().join("glrs/checkpoints");
    let shadow = std::fs::read_dir(&shadows).unwrap().flatten().next().unwrap().path();
    assert!(shadow.join(format!("refs/glrs/{fork}")).is_file());
    // The original's newest checkpoints are its own (the fork's go back
    // to the message it was made at): rm takes them at once.
    let newest = std::fs::read_to_string(shadow.join(format!("refs/glrs/{id}"))).unwrap().trim().to_string();
    let object = shadow.join("objects").join(&newest[..2]).join(&newest[2..]);
    assert!(object.is_file(), "{newest} is a loose object");
    let out = ts.sessions().args(["rm", &id]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!shadow.join(format!("refs/glrs/{id}")).exists() && shadow.join(format!("refs/glrs/{fork}")).is_file());
    assert!(!object.exists(), "rm left the removed session's checkpoint {newest} in the shadow");
    let out = ts.sessions().args(["rm", &fork]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!shadow.exists(), "the last session's checkpoints go with the shadow");
}

#[test]
fn three_turns_in_a_git_work_tree_rewind_and_the_users_git_is_untouched() {
    the_whole_story(true);
}

#[test]
fn three_turns_in_a_plain_folder_rewind() {
    the_whole_story(false);
}

#[test]
fn the_conversation_part_forks_to_before_the_message() {
    let (ts, server, proj) = agent_setup(json!({}));
    let (id, users, _) = three_turns(&ts, &server, &proj);
    let out = rewind(&ts, &[&id, &users[2].to_string(), "--json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let report = json_of(&out);
    let fork = report["fork"].as_str().unwrap();
    assert_eq!(session(&ts, fork)["events"].as_array().unwrap().len(), users[2] - 1);
    assert!(files(&proj).contains_key("del.txt") && !files(&proj).contains_key("sub/made.txt"));
    let out = rewind(&ts, &[&id, &(users[2] + 1).to_string()]);
    assert_eq!(out.status.code(), Some(1), "not a user message");
    assert!(stderr_of(&out).contains("not a user message"), "{}", stderr_of(&out));
}

#[test]
fn a_file_over_max_file_bytes_is_left_out_and_named() {
    let (ts, server, proj) = agent_setup(json!({"checkpoints": {"maxFileBytes": 100}}));
    std::fs::write(proj.join("big.bin"), vec![b'x'; 500]).unwrap();
    let id =
        turn(&ts, &server, &proj, None, 1, ("bash", json!({"command": "echo y >> big.bin; echo s > small.txt"})), &[]);
    let s = session(&ts, &id);
    let n = numbers(&s, "checkpoint")[0];
    assert_eq!(s["events"][n - 1]["tooLarge"], json!(["big.bin"]));
    let said = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["type"] == "notice" && e["text"].as_str().unwrap().contains("big.bin"));
    assert!(said, "{s}");
    let out = rewind(&ts, &[&id, "1", "--files-only", "--dry-run"]);
    assert_eq!(stdout_of(&out), "D\tsmall.txt\n", "{}", stderr_of(&out));
}

#[test]
fn checkpoints_off_records_none() {
    let (ts, server, proj) = agent_setup(json!({"checkpoints": {"enabled": false}}));
    let id = turn(&ts, &server, &proj, None, 1, ("write", json!({"path": "a.txt", "content": "a"})), &[]);
    assert!(numbers(&session(&ts, &id), "checkpoint").is_empty());
    assert!(!ts.data_home().join("glrs/checkpoints").exists());
    let out = rewind(&ts, &[&id, "1", "--files-only"]);
    assert!(out.status.success() && stderr_of(&out).contains("no checkpoint"), "{}", stderr_of(&out));
    assert!(proj.join("a.txt").exists());
}

#[test]
fn without_git_on_path_it_says_so_once_and_works() {
    let (ts, server, proj) = agent_setup(json!({}));
    let empty = ts.dir.path().join("no-git-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = empty.as_os_str();
    let id = turn(&ts, &server, &proj, None, 1, ("write", json!({"path": "a.txt", "content": "a"})), &[("PATH", path)]);
    turn(&ts, &server, &proj, Some(&id), 2, ("write", json!({"path": "b.txt", "content": "b"})), &[("PATH", path)]);
    let s = session(&ts, &id);
    assert!(numbers(&s, "checkpoint").is_empty());
    let notices: Vec<&Value> = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "notice" && e["text"].as_str().unwrap().contains("git is not on PATH"))
        .collect();
    assert_eq!(notices.len(), 2, "once a chat: {s}");
    assert!(proj.join("a.txt").exists() && proj.join("b.txt").exists());
}

#[test]
fn an_open_session_is_refused_for_the_files_part() {
    let (ts, server, proj) = agent_setup(json!({}));
    let (id, users, _) = three_turns(&ts, &server, &proj);
    let before = files(&proj);
    let sid = glrs::SessionId::parse(&id).unwrap();
    let lock = ts.store.open_lock(&sid).unwrap();
    let out = rewind(&ts, &[&id, &users[0].to_string(), "--files-only"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let out = ts.cmd("glrs-fork").args([&id, &users[0].to_string(), "--files"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    assert_eq!(files(&proj), before, "nothing changed");
    let out = rewind(&ts, &[&id, &users[0].to_string(), "--files-only", "--dry-run"]);
    assert!(out.status.success(), "a dry run changes nothing, so it may: {}", stderr_of(&out));
    ts.release(lock, &sid);
    assert_eq!(ts.sessions().args(["ls", "--json"]).output().unwrap().status.code(), Some(0));
    let listed = json_of(&ts.sessions().args(["ls", "--json"]).output().unwrap());
    assert_eq!(listed.as_array().unwrap().len(), 1, "the refused fork was not kept");
}

/// A hostile model plants a `.gitattributes`: line endings converted on the
/// way in and out, and a filter the user's git config defines (as Git LFS
/// does) run on every file. Checkpoints (glrs's own git, outside the
/// sandbox) follow neither: no filter runs, and a rewind puts the bytes
/// back as they were.
#[test]
fn a_planted_gitattributes_changes_no_byte_and_runs_no_filter() {
    let (ts, server, proj) = agent_setup(json!({}));
    let marker = ts.dir.path().join("filter-ran");
    let global = ts.dir.path().join("user.gitconfig");
    let clean = format!("sh -c 'touch {}; cat'", marker.display());
    std::fs::write(&global, format!("[filter \"evil\"]\n\tclean = {clean}\n\tsmudge = {clean}\n")).unwrap();
    let env = [("GIT_CONFIG_GLOBAL", global.as_os_str())];
    std::fs::write(proj.join("a.txt"), "one\ntwo\n").unwrap();
    let plant = r"printf '* text eol=crlf filter=evil\n' > .gitattributes; printf 'new\nfile\n' > b.txt";
    let id = turn(&ts, &server, &proj, None, 1, ("bash", json!({"command": plant})), &env);
    let change = "printf 'changed\n' > a.txt; printf 'changed\n' > b.txt";
    turn(&ts, &server, &proj, Some(&id), 2, ("bash", json!({"command": change})), &env);
    let users = numbers(&session(&ts, &id), "user");
    let out = ts.sessions().envs(env).args(["rewind", &id, &users[1].to_string(), "--files-only"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(std::fs::read(proj.join("a.txt")).unwrap(), b"one\ntwo\n");
    assert_eq!(std::fs::read(proj.join("b.txt")).unwrap(), b"new\nfile\n");
    assert!(!marker.exists(), "a filter of the user's git config ran on a checkpoint");
}

/// Issue 33 item 11: a dry run says what the real run does. `--files-only`
/// forks nothing, so its dry run must not say it would; without it, the
/// dry run says it would fork and the real run does.
#[test]
fn a_dry_run_says_the_fork_the_real_run_makes() {
    let (ts, server, proj) = agent_setup(json!({}));
    let (id, users, _) = three_turns(&ts, &server, &proj);
    let n = users[1].to_string();
    let count =
        || ts.sessions().args(["ls"]).output().unwrap().stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
    let before = count();
    let dry = rewind(&ts, &[&id, &n, "--files-only", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr_of(&dry));
    assert!(!stderr_of(&dry).contains("fork"), "--files-only forks nothing: {}", stderr_of(&dry));
    let real = rewind(&ts, &[&id, &n, "--files-only"]);
    assert!(real.status.success(), "{}", stderr_of(&real));
    assert!(!stderr_of(&real).contains("continues in"), "{}", stderr_of(&real));
    assert_eq!(count(), before, "the real --files-only run made no fork");
    let dry = rewind(&ts, &[&id, &n, "--dry-run"]);
    assert!(stderr_of(&dry).contains("would fork"), "{}", stderr_of(&dry));
    assert_eq!(count(), before, "a dry run made no fork");
    let real = rewind(&ts, &[&id, &n]);
    assert!(stderr_of(&real).contains("continues in"), "{}", stderr_of(&real));
    assert_eq!(count(), before + 1, "the real run forked, as its dry run said");
}
