//! Provenance (SPEC 24) end to end: sessions edit one file in turns through
//! the mock model, with a person's edits between them, a turn undone by a
//! rewind, and one that deletes a line a rewind puts back; then
//! `glrs-sessions blame`, `diff` (checked with `git apply`) and `log`.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// The ids of the sessions in the store.
fn ids(ts: &TestStore) -> HashSet<String> {
    let Ok(dir) = std::fs::read_dir(ts.sessions_dir()) else { return HashSet::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(str::to_string))
        .filter(|n| n.len() == 8)
        .collect()
}

/// One one-shot turn in a new session (or `resume`): the model calls
/// `tool` once, then says "done". The new session's id.
fn turn(
    ts: &TestStore,
    server: &MockServer,
    proj: &Path,
    resume: Option<&str>,
    prompt: &str,
    tool: (&str, Value),
) -> String {
    let before = ids(ts);
    server.push(Reply::sse(openai_tool_call("call_1", tool.0, &[&tool.1.to_string()])));
    server.push(Reply::sse(openai_text(&["done"], 100, 3, 0)));
    let mut cmd = ts.chat();
    cmd.current_dir(proj).env("XDG_CACHE_HOME", ts.dir.path().join("cache"));
    cmd.args(["-m", "openai/gpt-4.1", "--allow-all"]);
    if let Some(id) = resume {
        cmd.args(["--resume", id]);
    }
    let out = cmd.args(["-p", prompt]).output().unwrap();
    assert!(out.status.success(), "{prompt}: {}", stderr_of(&out));
    match resume {
        Some(id) => id.to_string(),
        None => {
            let new: Vec<String> = ids(ts).difference(&before).cloned().collect();
            assert_eq!(new.len(), 1, "one new session for {prompt}: {new:?}");
            new[0].clone()
        }
    }
}

fn write(path: &str, content: &str) -> (&'static str, Value) {
    ("write", json!({"path": path, "content": content}))
}

/// `glrs-sessions ARGS` run in `cwd`, which must succeed: its stdout.
fn sessions(ts: &TestStore, cwd: &Path, args: &[&str]) -> String {
    let out = ts.sessions().current_dir(cwd).args(args).output().unwrap();
    assert!(out.status.success(), "glrs-sessions {args:?}: {}", stderr_of(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// blame's rows: (session or -, the line's text).
fn owners(ts: &TestStore, proj: &Path, file: &str) -> Vec<(String, String)> {
    let text = sessions(ts, proj, &["blame", file]);
    text.lines()
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            assert_eq!(cells.len(), 6, "line number, session, entry, time, prompt, line: {l:?}");
            (cells[1].to_string(), cells[5].to_string())
        })
        .collect()
}

/// `git apply` of `patch` in a copy of `files` (path, content): the files after.
fn applied(files: &[(&str, &str)], patch: &str) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        std::fs::write(dir.path().join(path), content).unwrap();
    }
    let patch_file = dir.path().join("the.patch");
    std::fs::write(&patch_file, patch).unwrap();
    let out = Command::new("git").current_dir(dir.path()).arg("apply").arg(&patch_file).output().unwrap();
    assert!(out.status.success(), "git apply: {}\n{patch}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(&patch_file).unwrap();
    let mut after: Vec<(String, String)> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap()))
        .collect();
    after.sort();
    after
}

#[test]
fn blame_diff_and_log_tell_each_sessions_lines_from_a_persons() {
    let (ts, server, proj) = agent_setup(json!({}));
    let f = proj.join("f.txt");
    std::fs::write(&f, "a\nb\nc\n").unwrap();

    let s1 = turn(&ts, &server, &proj, None, "add A1\nsecond line", write("f.txt", "a\nA1\nb\nc\n"));
    std::fs::write(&f, "a\nA1\nb\nc\nP1\n").unwrap(); // a person's edit
    let s2 = turn(&ts, &server, &proj, None, "change b", write("f.txt", "a\nA1\nB1\nc\nP1\n"));
    let s3 = turn(&ts, &server, &proj, None, "add C1", write("f.txt", "a\nA1\nB1\nc\nP1\nC1\n"));
    std::fs::write(&f, "a\nA1\nB1\nc\nP2\nC1\n").unwrap(); // the person again

    let got = owners(&ts, &proj, "f.txt");
    let want: Vec<(String, String)> = [("-", "a"), (&s1, "A1"), (&s2, "B1"), ("-", "c"), ("-", "P2"), (&s3, "C1")]
        .iter()
        .map(|(s, l)| (s.to_string(), l.to_string()))
        .collect();
    assert_eq!(got, want);
    let first = sessions(&ts, &proj, &["blame", "f.txt", "-L", "2,2"]);
    let cells: Vec<&str> = first.trim_end().split('\t').collect();
    assert_eq!(cells[0], "2");
    assert_eq!(cells[4], "add A1", "the prompt's first line: {first}");

    // Each session's diff applies to the state before it, and gives the state after it.
    let d1 = sessions(&ts, &proj, &["diff", &s1]);
    assert_eq!(applied(&[("f.txt", "a\nb\nc\n")], &d1), vec![("f.txt".into(), "a\nA1\nb\nc\n".into())]);
    let d2 = sessions(&ts, &proj, &["diff", &s2]);
    assert!(!d2.contains("+P1"), "the person's line is not session 2's: {d2}");
    let before2 = "a\nA1\nb\nc\nP1\n";
    assert_eq!(applied(&[("f.txt", before2)], &d2), vec![("f.txt".into(), "a\nA1\nB1\nc\nP1\n".into())]);
    let stat = sessions(&ts, &proj, &["diff", &s3, "--stat"]);
    assert_eq!(stat, "1\t0\tf.txt\n");

    // log: newest first, with lines added and removed.
    let log = sessions(&ts, &proj, &["log", "f.txt"]);
    let rows: Vec<Vec<&str>> = log.lines().map(|l| l.split('\t').collect()).collect();
    let order: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(order, vec![s3.as_str(), s2.as_str(), s1.as_str()], "{log}");
    assert_eq!((rows[1][3], rows[1][4]), ("+1", "-1"), "{log}");
    let json: Value = serde_json::from_str(&sessions(&ts, &proj, &["log", ".", "--json"])).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 3, "{json}");
}

#[test]
fn a_rewound_turn_owns_nothing_and_a_line_it_put_back_is_its_writers_again() {
    let (ts, server, proj) = agent_setup(json!({}));
    let f = proj.join("f.txt");
    std::fs::write(&f, "a\n").unwrap();
    let s1 = turn(&ts, &server, &proj, None, "add keep", write("f.txt", "a\nkeep\n"));
    // Session 2 deletes s1's line and adds its own; then its files are rewound.
    let s2 = turn(&ts, &server, &proj, None, "replace keep", write("f.txt", "a\nmine\n"));
    assert_eq!(owners(&ts, &proj, "f.txt")[1], (s2.clone(), "mine".to_string()));
    let shown: Value = serde_json::from_str(&sessions(&ts, &proj, &["show", &s2, "--json"])).unwrap();
    let events = shown["events"].as_array().unwrap();
    let user = events.iter().position(|e| e["type"] == "user").unwrap() + 1;
    sessions(&ts, &proj, &["rewind", &s2, &user.to_string(), "--files-only"]);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\nkeep\n");

    let got = owners(&ts, &proj, "f.txt");
    assert_eq!(got, vec![("-".to_string(), "a".to_string()), (s1.clone(), "keep".to_string())]);
    let log = sessions(&ts, &proj, &["log", "f.txt"]);
    assert!(!log.contains(&s2), "the undone turn is not in the log: {log}");
}

#[test]
fn bad_files_are_refused_with_the_reason_and_exit_1() {
    let (ts, server, proj) = agent_setup(json!({}));
    let _s = turn(&ts, &server, &proj, None, "write", write("f.txt", "x\n"));
    std::fs::write(proj.join("bin.dat"), b"a\0b").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("o.txt"), "o\n").unwrap();
    let cases: [(&Path, &str, &str); 3] = [
        (&proj, "bin.dat", "binary"),
        (&proj, "gone.txt", "gone.txt"),
        (outside.path(), "o.txt", "no session recorded checkpoints"),
    ];
    for (cwd, file, says) in cases {
        let out = ts.sessions().current_dir(cwd).args(["blame", file]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{file}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains(says), "{file}: {}", stderr_of(&out));
        assert!(out.stdout.is_empty());
    }
    let out = ts.sessions().current_dir(&proj).args(["blame", "f.txt", "-L", "3,1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

#[test]
fn a_session_with_checkpoints_off_is_claimed_by_no_other() {
    let (ts, server, proj) = agent_setup(json!({}));
    let f = proj.join("f.txt");
    std::fs::write(&f, "a\n").unwrap();
    let s1 = turn(&ts, &server, &proj, None, "add A1", write("f.txt", "a\nA1\n"));
    let config_file = ts.dir.path().join("config/glrs/config.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(&config_file).unwrap()).unwrap();
    let mut off = config.clone();
    off["checkpoints"] = json!({"enabled": false});
    ts.config(off);
    let s2 = turn(&ts, &server, &proj, None, "add X", write("f.txt", "a\nA1\nX\n"));
    ts.config(config);
    let s3 = turn(&ts, &server, &proj, None, "add C1", write("f.txt", "a\nA1\nX\nC1\n"));
    let got = owners(&ts, &proj, "f.txt");
    let want = [("-", "a"), (s1.as_str(), "A1"), ("-", "X"), (s3.as_str(), "C1")];
    assert_eq!(got, want.map(|(s, l)| (s.to_string(), l.to_string())));
    assert!(!sessions(&ts, &proj, &["diff", &s3]).contains("+X"), "X is not session 3's");
    let out = ts.sessions().current_dir(&proj).args(["diff", &s2]).output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("no checkpoints"), "{}", stderr_of(&out));
}

#[test]
fn lines_a_removed_sessions_checkpoints_covered_are_shown_as_no_longer_attributable() {
    let (ts, server, proj) = agent_setup(json!({}));
    let f = proj.join("f.txt");
    std::fs::write(&f, "a\n").unwrap();
    let s1 = turn(&ts, &server, &proj, None, "add A1", write("f.txt", "a\nA1\n"));
    let s2 = turn(&ts, &server, &proj, None, "add B1", write("f.txt", "a\nA1\nB1\n"));
    sessions(&ts, &proj, &["rm", &s1]);
    let out = ts.sessions().current_dir(&proj).args(["blame", "f.txt"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let rows: Vec<Vec<String>> = stdout_of(&out).lines().map(|l| l.split('\t').map(str::to_string).collect()).collect();
    let owners: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(owners, vec!["?", "?", s2.as_str()], "{}", stdout_of(&out));
    assert!(stderr_of(&out).contains("2 line(s) can no longer be attributed"), "{}", stderr_of(&out));
}
