//! `glrs-sessions ls`: order, forms, filters, legacy sessions, the index
//! cache, and bad files that must not hide the good ones.

use crate::support::*;
use serde_json::json;

const U1: &str = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"fix the login test\nsecond line"}"#;
const A1: &str = r#"{"type":"assistant","at":"2026-11-01T10:00:02.000Z","text":"done","model":"openai/gpt-4.1","toolCalls":[],"stopReason":"stop"}"#;

fn row(
    ts: &TestStore,
    id: &str,
    updated: &str,
    entries: u64,
    cwd: &str,
    title: &str,
    legacy: bool,
) -> serde_json::Value {
    let dir = if legacy { ts.legacy_dir() } else { ts.sessions_dir() };
    json!({
        "id": id, "createdAt": "2026-11-01T10:00:00.000Z", "updatedAt": updated,
        "entries": entries, "contextTokens": entries * 10, "cwd": cwd, "title": title,
        "key": null, "model": null, "parent": null, "pinned": false, "legacy": legacy,
        "path": dir.join(format!("{id}.json")),
    })
}

#[test]
fn lists_newest_first_as_tab_separated_lines_and_json() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w/a", &[U1, A1]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/w/b", &[]);
    ts.write_fixed("cccc0003", "2026-11-01T10:00:00.000Z", "/w/c", &[U1]);

    let out = ts.sessions().arg("ls").output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "bbbb0002\t2026-11-03T10:00:00.000Z\t0\t0\t/w/b\t\n\
         aaaa0001\t2026-11-02T10:00:00.000Z\t2\t20\t/w/a\tfix the login test\n\
         cccc0003\t2026-11-01T10:00:00.000Z\t1\t10\t/w/c\tfix the login test\n"
    );
    assert_eq!(stderr_of(&out), "");

    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    assert_eq!(
        json_of(&out),
        json!([
            row(&ts, "bbbb0002", "2026-11-03T10:00:00.000Z", 0, "/w/b", "", false),
            row(&ts, "aaaa0001", "2026-11-02T10:00:00.000Z", 2, "/w/a", "fix the login test", false),
            row(&ts, "cccc0003", "2026-11-01T10:00:00.000Z", 1, "/w/c", "fix the login test", false),
        ])
    );

    let out = ts.sessions().args(["ls", "--jsonl", "-n", "2"]).output().unwrap();
    let lines: Vec<serde_json::Value> = stdout_of(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        [
            row(&ts, "bbbb0002", "2026-11-03T10:00:00.000Z", 0, "/w/b", "", false),
            row(&ts, "aaaa0001", "2026-11-02T10:00:00.000Z", 2, "/w/a", "fix the login test", false),
        ]
    );
}

#[test]
fn filters_by_cwd_and_key() {
    let ts = TestStore::new();
    let here = ts.dir.path().to_string_lossy().into_owned();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", &here, &[]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/elsewhere", &[]);
    let keyed = ts.session("/k", &[user("keyed")]);
    ts.store
        .update(&keyed, |f| {
            f.set("key", json!("work"));
            Ok(())
        })
        .unwrap();

    let out = ts.sessions().args(["ls", "--cwd"]).output().unwrap();
    let ids: Vec<String> = stdout_of(&out).lines().map(|l| l.split('\t').next().unwrap().to_string()).collect();
    assert_eq!(ids, ["aaaa0001"]);

    let out = ts.sessions().args(["ls", "--key", "work", "--json"]).output().unwrap();
    let rows = json_of(&out);
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["id"], keyed.as_str());
    assert_eq!(rows[0]["key"], "work");
    assert_eq!(rows[0]["title"], "keyed");
}

#[test]
fn legacy_sessions_are_listed_marked_and_shadowed_by_the_store() {
    let ts = TestStore::new();
    let legacy = ts.legacy_dir();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.write_fixed_in(&legacy, "dddd0004", "2026-10-01T10:00:00.000Z", "/old", &[U1]);
    // The same id in both places: the store's copy wins.
    ts.write_fixed_in(&legacy, "aaaa0001", "2020-01-01T00:00:00.000Z", "/stale", &[]);

    let out = ts.sessions().arg("ls").output().unwrap();
    assert_eq!(
        stdout_of(&out),
        "aaaa0001\t2026-11-02T10:00:00.000Z\t1\t10\t/w\tfix the login test\n\
         dddd0004\t2026-10-01T10:00:00.000Z\t1\t10\t/old\t[legacy] fix the login test\n"
    );
    let out = ts.sessions().args(["ls", "--legacy", "--json"]).output().unwrap();
    assert_eq!(
        json_of(&out),
        json!([row(&ts, "dddd0004", "2026-10-01T10:00:00.000Z", 1, "/old", "fix the login test", true)])
    );
}

#[test]
fn an_empty_or_missing_store_lists_nothing() {
    let ts = TestStore::new();
    ts.sessions().arg("ls").assert().success().stdout("").stderr("");
    ts.sessions().args(["ls", "--json"]).assert().success().stdout("[]\n");
    std::fs::create_dir_all(ts.sessions_dir()).unwrap();
    ts.sessions().arg("ls").assert().success().stdout("");
}

#[test]
fn bad_files_are_reported_once_each_and_never_hide_the_others() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    let good = ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/w", &[U1, A1]);
    let text = std::fs::read_to_string(&good).unwrap();
    let truncated =
        ts.write_raw(&ts.sessions_dir(), "cccc0003", &text[..text.len() / 2].replace("bbbb0002", "cccc0003"));
    let corrupt = ts.write_raw(&ts.sessions_dir(), "eeee0005", "{\"schema\":2,\"id\":\"eeee0005\",,}");
    let newer = ts.write_raw(&ts.sessions_dir(), "ffff0006", r#"{"schema":3,"id":"ffff0006","records":{}}"#);
    let mut bytes = text.replace("bbbb0002", "abab0007").into_bytes();
    let at = bytes.windows(5).position(|w| w == b"login").unwrap();
    bytes[at] = 0xff;
    let non_utf8 = ts.sessions_dir().join("abab0007.json");
    std::fs::write(&non_utf8, &bytes).unwrap();

    for _ in 0..2 {
        // Twice: the second run answers from the index and must still warn.
        let out = ts.sessions().arg("ls").output().unwrap();
        assert!(out.status.success());
        let ids: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().map(|l| &l[..8]).collect();
        assert_eq!(ids, ["bbbb0002", "aaaa0001"]);
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 4, "{err}");
        for bad in [&truncated, &corrupt, &newer, &non_utf8] {
            let line = err
                .lines()
                .find(|l| l.contains(&*bad.to_string_lossy()))
                .unwrap_or_else(|| panic!("{bad:?} not named in {err}"));
            assert!(line.starts_with("glrs-sessions: warning: "), "{line}");
        }
        assert!(err.contains("schema 3"), "{err}");
        assert!(err.contains("truncated"), "{err}");
    }
}

fn index_path(ts: &TestStore) -> std::path::PathBuf {
    ts.sessions_dir().join(glrs::store::listing::INDEX_FILE)
}

/// The file names the index holds records for.
fn indexed(ts: &TestStore) -> Vec<String> {
    let bytes = std::fs::read(index_path(ts)).unwrap();
    let mut names: Vec<String> =
        glrs::store::index::decode(&bytes).unwrap().iter().map(|r| r.name.to_string()).collect();
    names.sort();
    names
}

#[test]
fn the_index_follows_every_change_and_is_only_a_cache() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("first")]);
    let entries = |ts: &TestStore| -> u64 {
        let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
        assert_eq!(stderr_of(&out), "");
        json_of(&out)[0]["entries"].as_u64().unwrap()
    };
    assert_eq!(entries(&ts), 1);
    assert!(index_path(&ts).is_file());
    ts.store.append(&id, glrs::store::Append::new().entry(&notice("n")).unwrap()).unwrap();
    assert_eq!(entries(&ts), 2);
    // A session removed behind the index's back disappears from the list.
    std::fs::remove_file(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    ts.sessions().arg("ls").assert().success().stdout("").stderr("");
}

#[test]
fn stale_records_are_never_shown_and_leave_the_index() {
    let ts = TestStore::new();
    let a = ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/w", &[U1, A1]);
    ts.sessions().arg("ls").assert().success();
    assert_eq!(indexed(&ts), ["aaaa0001.json", "bbbb0002.json"]);

    // A file replaced behind the index's back with the same size (so only
    // the inode and time tell): the listing shows the new content.
    let text = std::fs::read_to_string(&a).unwrap().replace("/w", "/x");
    let tmp = ts.sessions_dir().join(".replacement");
    std::fs::write(&tmp, &text).unwrap();
    std::fs::rename(&tmp, &a).unwrap();
    std::fs::remove_file(ts.sessions_dir().join("bbbb0002.json")).unwrap();
    ts.write_fixed("cccc0003", "2026-11-04T10:00:00.000Z", "/w", &[]);
    let out = ts.sessions().args(["ls", "--format", "id,cwd"]).output().unwrap();
    assert_eq!(stdout_of(&out), "cccc0003\t/w\naaaa0001\t/x\n");
    assert_eq!(stderr_of(&out), "");
    // The removed file's record is gone, the new file's is there.
    assert_eq!(indexed(&ts), ["aaaa0001.json", "cccc0003.json"]);
    // And the next listing, answered from the index, is the same.
    let again = ts.sessions().args(["ls", "--format", "id,cwd"]).output().unwrap();
    assert_eq!(stdout_of(&again), stdout_of(&out));
}

#[test]
fn a_damaged_index_is_rebuilt_with_a_warning_never_an_error() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/w", &[U1, A1]);
    let expected = stdout_of(&ts.sessions().arg("ls").output().unwrap());
    let good = std::fs::read(index_path(&ts)).unwrap();
    let damaged: Vec<Vec<u8>> = vec![
        b"garbage".to_vec(),
        Vec::new(),
        good[..good.len() - 3].to_vec(),
        [good.as_slice(), b"x"].concat(),
        good.iter().map(|b| if *b == b'/' { 0xff } else { *b }).collect(),
    ];
    for bytes in damaged {
        std::fs::write(index_path(&ts), &bytes).unwrap();
        let out = ts.sessions().arg("ls").output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(stdout_of(&out), expected);
        let err = stderr_of(&out);
        assert!(
            err.starts_with("glrs-sessions: warning: ") && err.contains("listing index") && err.contains("rebuilt"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        // Rebuilt: the next listing reads it without a word.
        ts.sessions().arg("ls").assert().success().stdout(expected.clone()).stderr("");
        assert_eq!(std::fs::read(index_path(&ts)).unwrap(), good);
    }
    // The JSON index of earlier versions is neither read nor kept.
    std::fs::write(ts.sessions_dir().join(".index.json"), r#"{"version":1,"files":{}}"#).unwrap();
    std::fs::remove_file(index_path(&ts)).unwrap();
    ts.sessions().arg("ls").assert().success().stdout(expected.clone()).stderr("");
    assert!(!ts.sessions_dir().join(".index.json").exists());
}

#[test]
fn lock_temp_and_history_files_are_never_sessions() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("hi")]);
    let dir = ts.sessions_dir();
    let lock = ts.store.open_lock(&id).unwrap();
    for name in [
        "prompts.json",
        "keys.json",
        "aaaa0001.lock",
        "aaaa0001.open",
        ".aaaa0001.json.x1.tmp",
        "AAAA0001.json",
        "aaaa00012.json",
    ] {
        std::fs::write(dir.join(name), "[]").unwrap();
    }
    let out = ts.sessions().arg("ls").output().unwrap();
    assert_eq!(stdout_of(&out).lines().count(), 1, "{}", stdout_of(&out));
    assert_eq!(stderr_of(&out), "");
    drop(lock);
}

#[test]
fn format_chooses_columns_and_a_terminal_gets_aligned_columns() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w/a", &[U1, A1]);
    ts.write_fixed("bbbb0002", "2026-11-03T10:00:00.000Z", "/a/much/longer/folder", &[U1]);

    let out = ts.sessions().args(["ls", "--format", "id,title,entries"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "bbbb0002\tfix the login test\t1\naaaa0001\tfix the login test\t2\n");
    let out = ts.sessions().args(["ls", "--format", "id,colour"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("no column \"colour\""), "{}", stderr_of(&out));

    // On a terminal: a header, and every column starts where its header does.
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-sessions"));
    cmd.arg("ls").env("TERM", "dumb");
    let mut p = rexpect::session::spawn_with_options(cmd, rexpect::reader::Options::new().timeout_ms(Some(20_000)))
        .expect("spawn in a pty");
    let screen = p.exp_eof().expect("ls to finish");
    let lines: Vec<&str> = screen.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{screen:?}");
    assert!(lines.iter().all(|l| !l.contains('\t')), "{screen:?}");
    for header in ["UPDATED", "ENTRIES", "CONTEXT", "CWD", "TITLE"] {
        let col = lines[0].find(header).expect(header);
        for row in &lines[1..] {
            assert!(
                row.len() >= col && row.as_bytes()[col - 1] == b' ' && row.as_bytes()[col] != b' ',
                "{header} in {screen:?}"
            );
        }
    }
}

#[test]
fn tree_lists_every_session_even_when_parents_form_a_cycle() {
    let ts = TestStore::new();
    let with_parent = |id: &str, updated: &str, parent: &str| {
        let text = format!(
            r#"{{"schema":2,"id":"{id}","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"{updated}","cwd":"/w","parent":{{"id":"{parent}","entry":1}},"events":[{U1}],"contextTokens":10}}"#
        );
        ts.write_raw(&ts.sessions_dir(), id, &text);
    };
    // Hand-edited lineage: two sessions each the other's parent, one its
    // own parent, and a fork under one of the cycle.
    with_parent("aaaa0001", "2026-11-02T10:00:00.000Z", "aaaa0002");
    with_parent("aaaa0002", "2026-11-03T10:00:00.000Z", "aaaa0001");
    with_parent("aaaa0003", "2026-11-04T10:00:00.000Z", "aaaa0003");
    with_parent("aaaa0004", "2026-11-05T10:00:00.000Z", "aaaa0001");
    ts.write_fixed("bbbb0001", "2026-11-01T10:00:00.000Z", "/w", &[U1]);
    let out = ts.sessions().args(["ls", "--tree", "--format", "id"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let mut ids: Vec<String> = stdout_of(&out).lines().map(str::to_string).collect();
    ids.sort();
    assert_eq!(ids, ["aaaa0001", "aaaa0002", "aaaa0003", "aaaa0004", "bbbb0001"], "{}", stdout_of(&out));
}

#[test]
fn cwd_in_a_removed_folder_says_which_folder_it_could_not_read() {
    let ts = TestStore::new();
    let gone = ts.data_home().join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let script = format!("cd {} && rmdir {} && exec \"$0\" ls --cwd", gone.display(), gone.display());
    let mut cmd = ts.std_cmd("sh");
    cmd.args(["-c", &script, env!("CARGO_BIN_EXE_glrs-sessions")]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("current directory"), "{}", stderr_of(&out));
}

#[test]
fn a_file_that_fails_to_read_is_retried_never_remembered_in_the_index() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    let corrupt = ts.write_raw(&ts.sessions_dir(), "eeee0005", "{\"schema\":2,\"id\":\"eeee0005\",,}");
    // Reading a folder fails with an I/O error (EISDIR), as a permission
    // or descriptor shortage would: a cause that can go away without the
    // file's inode, size or time changing, so it must not be remembered.
    let unreadable = ts.sessions_dir().join("dddd0004.json");
    std::fs::create_dir(&unreadable).unwrap();
    for _ in 0..2 {
        let out = ts.sessions().args(["ls", "--format", "id"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        assert_eq!(stdout_of(&out), "aaaa0001\n");
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 2, "{err}");
        assert!(err.contains(&*unreadable.to_string_lossy()), "{err}");
        assert!(err.contains(&*corrupt.to_string_lossy()), "{err}");
        // The corrupt file's problem is about its content: kept until it
        // changes. The read failure is not kept: the next listing reads again.
        assert_eq!(indexed(&ts), ["aaaa0001.json", "eeee0005.json"]);
    }
}

#[test]
fn an_unreadable_folder_is_a_warning_naming_it_and_the_others_are_listed() {
    let ts = TestStore::new();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    // Not a folder: reading it fails with ENOTDIR, not NotFound.
    let legacy = ts.legacy_dir();
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    std::fs::write(&legacy, "not a folder").unwrap();
    for args in [&["ls", "--format", "id"][..], &["grep", "login"][..]] {
        let out = ts.sessions().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
        assert!(stdout_of(&out).contains("aaaa0001"), "{args:?}: {}", stdout_of(&out));
        let err = stderr_of(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("glrs-sessions: warning: "), "{err}");
        assert!(err.contains(&*legacy.to_string_lossy()), "{err}");
    }
}

#[test]
fn on_a_terminal_every_listing_lines_up_an_empty_store_says_so_and_rm_says_what_it_removed() {
    // Issue 24.13. Piped, each stays as it was (tab-separated, or nothing).
    use crate::support::pty::run_raw;
    let ts = TestStore::new();
    let sessions = env!("CARGO_BIN_EXE_glrs-sessions");
    let artifacts = env!("CARGO_BIN_EXE_glrs-artifacts");
    assert!(run_raw(&ts, sessions, &["ls"]).contains("no sessions yet"));
    assert_eq!(stdout_of(&ts.sessions().arg("ls").output().unwrap()), "", "piped: nothing");

    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1, A1]);
    let id = glrs::SessionId::parse("aaaa0001").unwrap();
    ts.store.set_key("work", &id).unwrap();
    let mut info = glrs::compact::artifact::ArtifactInfo {
        file: Default::default(),
        session: id.to_string(),
        created_at: "2026-11-02T10:00:00.000Z".into(),
        label: "the login fix".into(),
        messages: 1,
        note: String::new(),
        entries: "1-1".into(),
    };
    let block = glrs::compact::plan::Block { tag: "user".into(), text: "x".into() };
    glrs::compact::artifact::write_new(&ts.store, &id, &mut info, &[block]).unwrap();

    for (exe, args, header) in
        [(artifacts, &["ls", "--all"][..], "FILE"), (sessions, &["keys"], "KEY"), (sessions, &["grep", "login"], "ID")]
    {
        let shown = run_raw(&ts, exe, args);
        assert!(shown.starts_with(header) && !shown.contains('\t'), "{args:?}: {shown:?}");
        let piped = ts.cmd(exe.rsplit('/').next().unwrap()).args(args).output().unwrap();
        assert!(stdout_of(&piped).contains('\t'), "{args:?} piped: {}", stdout_of(&piped));
    }
    let grep = run_raw(&ts, sessions, &["grep", "login"]);
    let lines: Vec<&str> = grep.lines().collect();
    assert_eq!(lines[0].find("TYPE"), lines[1].find("user"), "the columns line up: {grep}");

    let removed = run_raw(&ts, sessions, &["rm", "aaaa0001"]);
    assert!(removed.contains("removed aaaa0001 and its 1 artifact"), "{removed:?}");
    assert!(ts.store.locate(&id).is_none());
}
