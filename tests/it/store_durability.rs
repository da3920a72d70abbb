//! The write protocol under pressure: several processes appending to one
//! session at once, writers killed with SIGKILL mid-write, and the
//! permissions of what gets created.
//!
//! Child processes are this same test binary, re-run on one test with
//! `GLRS_TEST_ROLE` set: real processes, real file locks, nothing faked.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::*;
use glrs::store::{Append, Entry, Parsed};
use glrs::{Paths, SessionId, Store};
use serde_json::json;

const ROLE: &str = "GLRS_TEST_ROLE";

/// The store a child writes to: the data folder is passed in the environment.
fn child_store() -> Store {
    let data = std::env::var_os("XDG_DATA_HOME").expect("XDG_DATA_HOME");
    Store::new(Paths::from_vars(Some(data.clone().into()), None, None, Some(data.into())).expect("paths"))
}

fn marker(writer: u64, n: u64) -> Entry {
    Entry::Custom { at: glrs::time::now(), name: "test".into(), data: json!({"writer": writer, "n": n}) }
}

/// Run this test binary as a child in `role`, on the test `test_name` of
/// this module (libtest names it by its path inside the test crate).
fn spawn_child(test_name: &str, role: &str, data_home: &Path) -> std::process::Child {
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest);
    let full_name = format!("{module}::{test_name}");
    Command::new(std::env::current_exe().expect("test exe"))
        .args([full_name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env("XDG_DATA_HOME", data_home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child")
}

/// Markers `(writer, n)` in file order; panics if the file does not parse.
fn markers(store: &Store, id: &SessionId) -> Vec<(u64, u64)> {
    let at = store.locate(id).expect("session exists");
    let loaded = store.read(&at).unwrap_or_else(|e| panic!("session must always parse: {e}"));
    loaded
        .file
        .events
        .iter()
        .filter_map(|raw| match Parsed::from_raw(raw) {
            Parsed::Known(Entry::Custom { data, .. }) => Some((data["writer"].as_u64()?, data["n"].as_u64()?)),
            _ => None,
        })
        .collect()
}

#[test]
fn four_processes_appending_at_once_lose_nothing() {
    if let Ok(role) = std::env::var(ROLE) {
        // Child: "append:<id>:<writer>:<count>".
        let parts: Vec<&str> = role.split(':').collect();
        let store = child_store();
        let id = SessionId::parse(parts[1]).expect("id");
        let writer: u64 = parts[2].parse().expect("writer");
        let count: u64 = parts[3].parse().expect("count");
        for n in 0..count {
            store.append(&id, Append::new().entry(&marker(writer, n)).expect("entry")).expect("append");
        }
        return;
    }
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let children: Vec<_> = (0..4)
        .map(|w| {
            spawn_child(
                "four_processes_appending_at_once_lose_nothing",
                &format!("append:{id}:{w}:250"),
                &ts.data_home(),
            )
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a writer failed");
    }
    let found = markers(&ts.store, &id);
    assert_eq!(found.len(), 1000);
    for w in 0..4 {
        let mine: Vec<u64> = found.iter().filter(|(writer, _)| *writer == w).map(|(_, n)| *n).collect();
        assert_eq!(mine, (0..250).collect::<Vec<_>>(), "writer {w}: every entry, once, in order");
    }
    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    assert_eq!(json_of(&out)[0]["entries"], 1001);
}

#[test]
fn a_writer_killed_at_random_moments_never_corrupts_or_loses_entries() {
    if let Ok(role) = std::env::var(ROLE) {
        // Child: "forever:<id>:<writer>": append until killed, saying after
        // each append returns which entry is committed.
        let parts: Vec<&str> = role.split(':').collect();
        let store = child_store();
        let id = SessionId::parse(parts[1]).expect("id");
        let writer: u64 = parts[2].parse().expect("writer");
        for n in 0.. {
            // Some bulk, so a kill often lands inside a write.
            let mut change = Append::new().entry(&marker(writer, n)).expect("entry");
            change = change.entry(&notice(&"x".repeat(20_000))).expect("entry");
            store.append(&id, change).expect("append");
            println!("committed {n}");
        }
        return;
    }
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let first_ino = std::fs::metadata(ts.store.session_path(&id)).unwrap().ino();
    let mut seed = u64::from(std::process::id()) | 1;
    let mut committed_total = 0;
    let mut interrupted = 0;
    for round in 0..100u64 {
        let mut child = spawn_child(
            "a_writer_killed_at_random_moments_never_corrupts_or_loses_entries",
            &format!("forever:{id}:{round}"),
            &ts.data_home(),
        );
        let stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut last = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("committed ") {
                    last = n.parse::<u64>().ok();
                }
            }
            last
        });
        // xorshift: a different moment each round, reproducible from the pid.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(5 + seed % 60));
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        let last = reader.join().expect("reader");

        // A kill inside an in-place append may leave the file torn; the
        // next reader settles it under the lock (every append the journal
        // committed written again), and then the file is one JSON document
        // for any parser.
        let path = ts.store.session_path(&id);
        interrupted +=
            usize::from(serde_json::from_slice::<serde_json::Value>(&std::fs::read(&path).unwrap()).is_err());
        let found = markers(&ts.store, &id);
        let raw = std::fs::read(ts.store.session_path(&id)).unwrap();
        serde_json::from_slice::<serde_json::Value>(&raw).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let mine: Vec<u64> = found.iter().filter(|(w, _)| *w == round).map(|(_, n)| *n).collect();
        if let Some(last) = last {
            // Everything reported committed is there; at most one more (the
            // write that finished as the kill landed) may follow.
            assert!(
                mine.len() as u64 == last + 1 || mine.len() as u64 == last + 2,
                "round {round}: {mine:?} vs {last}"
            );
        }
        assert_eq!(mine, (0..mine.len() as u64).collect::<Vec<_>>(), "round {round}: in order, none lost");
        if std::env::var_os("GLRS_TEST_VERBOSE").is_some() {
            eprintln!("round {round}: {} committed, last reported {last:?}", mine.len());
        }
        assert!(found.len() >= committed_total, "round {round}: earlier rounds' entries lost");
        committed_total = found.len();
    }
    assert!(committed_total > 0, "the writers never committed anything");
    assert_eq!(std::fs::metadata(ts.store.session_path(&id)).unwrap().ino(), first_ino, "appended in place");
    if std::env::var_os("GLRS_TEST_VERBOSE").is_some() {
        eprintln!("{interrupted} of 100 kills left a torn file, recovered");
    }
    // Leftover temporary files never show up as sessions.
    let out = ts.sessions().arg("ls").output().unwrap();
    assert_eq!(stdout_of(&out).lines().count(), 1);
    assert_eq!(stderr_of(&out), "");
}

#[test]
fn a_reader_looping_during_1000_appends_never_sees_a_broken_file() {
    if let Ok(role) = std::env::var(ROLE) {
        // Child: "appends:<id>:<count>", each with some bulk.
        let parts: Vec<&str> = role.split(':').collect();
        let store = child_store();
        let id = SessionId::parse(parts[1]).expect("id");
        let count: u64 = parts[2].parse().expect("count");
        for n in 0..count {
            let change = Append::new().entry(&marker(0, n)).expect("entry").entry(&notice(&"y".repeat(3_000)));
            store.append(&id, change.expect("entry")).expect("append");
        }
        return;
    }
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let mut child = spawn_child(
        "a_reader_looping_during_1000_appends_never_sees_a_broken_file",
        &format!("appends:{id}:1000"),
        &ts.data_home(),
    );
    let at = ts.store.locate(&id).unwrap();
    let path = ts.store.session_path(&id);
    let (mut reads, mut last) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        assert!(std::time::Instant::now() < deadline, "the writer did not finish 1,000 appends in 120 s");
        let loaded = ts.store.read(&at).unwrap_or_else(|e| panic!("read {reads}: {e}"));
        let summary = glrs::store::listing::summarize(&at).unwrap_or_else(|e| panic!("summary {reads}: {e}"));
        assert!(loaded.file.events.len() >= last, "entries never go away");
        assert!(summary.entries as usize >= loaded.file.events.len());
        last = loaded.file.events.len();
        reads += 1;
    }
    assert!(child.wait().expect("wait").success(), "the writer failed");
    let raw = std::fs::read(&path).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&raw).expect("one JSON document");
    assert_eq!(value["events"].as_array().map(Vec::len), Some(2001));
    assert!(reads > 10, "the reader overlapped the writes ({reads} reads)");
}

#[test]
fn new_folders_are_0700_and_files_0600() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("private")]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&ts.store.paths.data), 0o700);
    assert_eq!(mode(&ts.sessions_dir()), 0o700);
    assert_eq!(mode(&ts.store.session_path(&id)), 0o600);
    let prompt = glrs::store::prompts::Prompt {
        text: "hi".into(),
        at: glrs::time::now(),
        session: id.to_string(),
        cwd: "/w".into(),
        truncated_from: None,
        extra: Default::default(),
    };
    ts.store.add_prompt(prompt, 10).unwrap();
    assert_eq!(mode(&ts.sessions_dir().join("prompts.json")), 0o600);
    let _open = ts.store.open_lock(&id).unwrap();
    for entry in std::fs::read_dir(ts.sessions_dir()).unwrap().flatten() {
        assert_eq!(mode(&entry.path()), 0o600, "{:?}", entry.path());
    }
}

#[test]
fn a_write_that_fails_leaves_the_old_file_and_names_it() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("keep me"), notice(&"x".repeat(20_000))]);
    let path = ts.store.session_path(&id);
    let before = std::fs::read(&path).unwrap();
    // A file-size limit of 8 KiB makes the rewrite fail part-way with EFBIG,
    // as a full disk would (SIGXFSZ ignored so the write returns an error).
    let exe = env!("CARGO_BIN_EXE_glrs-sessions");
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 16; exec \"$EXE\" pin \"$ID\""])
        .env("EXE", exe)
        .env("ID", id.as_str())
        .env("HOME", ts.dir.path())
        .env("XDG_DATA_HOME", ts.data_home())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.starts_with("glrs-sessions: error: cannot write ") && err.contains(&*path.to_string_lossy()), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the old file is intact");
    let leftovers: Vec<_> = std::fs::read_dir(ts.sessions_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Without the limit the same command works.
    ts.sessions().args(["pin", id.as_str()]).assert().success();
}

#[test]
fn a_writer_tracking_its_mark_appends_in_place_and_notices_other_writers() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let add = |text: &str| Append::new().entry(&notice(text)).unwrap();
    let path = ts.store.session_path(&id);
    let ino = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    let mine = ts.store.append(&id, add("mine 1")).unwrap();
    let before = ino();
    // Unchanged since: appended in place, the file is not read whole.
    let seen = std::cell::RefCell::new(Vec::new());
    let merge = |recent: &glrs::store::recent::Recent, change: &mut Append| {
        seen.borrow_mut().push((recent.total, recent.first, recent.lines.len()));
        change.set_field("contextTokens", 77);
    };
    let notices = |hits: &[glrs::store::recent::Hit]| hits.last().map_or(0, |h| h.index);
    let mine = ts.store.append_since(&id, add("mine 2"), Some(&mine.mark), &["notice"], notices, merge).unwrap();
    assert!(mine.rewritten.is_none(), "appended in place");
    assert!(seen.borrow().is_empty(), "nothing to merge");
    assert_eq!(ino(), before, "the same file, extended");
    // Another program writes; the caller's mark no longer matches: the
    // file is read from the entry the caller chose (the last notice) on,
    // and the caller's entries still go in place after what is there.
    ts.store.append(&id, add("theirs")).unwrap();
    let mine = ts.store.append_since(&id, add("mine 3"), Some(&mine.mark), &["notice"], notices, merge).unwrap();
    assert!(mine.rewritten.is_none(), "merged in place");
    assert_eq!(ino(), before);
    assert_eq!(*seen.borrow(), [(4, 3, 1)], "4 entries, read from the 4th");
    let on_disk = ts.store.read(&ts.store.locate(&id).unwrap()).unwrap();
    let texts: Vec<String> = on_disk
        .file
        .events
        .iter()
        .filter_map(|r| match Parsed::from_raw(r) {
            Parsed::Known(Entry::Notice { text, .. }) => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["mine 1", "mine 2", "theirs", "mine 3"]);
    assert_eq!(on_disk.file.get("contextTokens"), Some(&json!(77)), "the merge set it");
    assert_eq!(on_disk.mark, mine.mark);
    // Rewritten whole by another program (a new inode): merged the same way.
    ts.sessions().args(["pin", id.as_str()]).assert().success();
    let mine = ts.store.append_since(&id, add("mine 4"), Some(&mine.mark), &["notice"], notices, merge).unwrap();
    assert!(mine.rewritten.is_none());
    assert_eq!(seen.borrow().len(), 2);
    assert_eq!(ts.store.read(&ts.store.locate(&id).unwrap()).unwrap().file.events.len(), 6);
}

/// Run `args` under `strace`, failing every `fsync` with EIO. The store
/// syncs file data with `fdatasync` and folders with `fsync`, so this fails
/// exactly the folder syncs. The test fails where strace cannot inject
/// faults (not installed, or ptrace not permitted), rather than pass
/// without running its subject (issue 24.6; `.ci/run` installs strace).
fn with_folder_fsync_failing(ts: &TestStore, exe: &str, args: &[&str]) -> std::process::Output {
    let probe = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:error=EIO", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(probe.is_ok_and(|s| s.success()), "this test drives strace with fault injection, which cannot run here");
    let mut cmd = ts.std_cmd("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:error=EIO", exe]).args(args);
    cmd.output().expect("run strace")
}

#[test]
fn pin_whose_folder_sync_fails_is_applied_and_exits_0() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("keep me")]);
    let out = with_folder_fsync_failing(&ts, env!("CARGO_BIN_EXE_glrs-sessions"), &["pin", id.as_str()]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.starts_with("glrs-sessions: warning: ") && err.contains("sync folder"), "{err}");
    let text = std::fs::read_to_string(ts.store.session_path(&id)).unwrap();
    let session: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(session["pinned"], true);
}

#[test]
fn a_chat_whose_folder_sync_fails_writes_each_entry_once() {
    let (ts, server) = store_and_server();
    for _ in 0..2 {
        server.push(crate::support::mock::Reply::sse(crate::support::sse::openai_text(&["noted"], 10, 2, 0)));
    }
    let chat = env!("CARGO_BIN_EXE_glrs-chat");
    let key = format!("OPENAI_API_KEY={OPENAI_KEY}");
    let args = ["env", &key, chat, "-p", "remember 4217", "--model", "openai/gpt-4.1"];
    let out = with_folder_fsync_failing(&ts, "/usr/bin/env", &args[1..]);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("could not save"), "a write that took effect was reported failed: {err}");
    let (id, _) = ts.only_session();
    // A second turn, still failing every folder sync: nothing written twice.
    let args = ["env", &key, chat, "--resume", &id, "-p", "and now?"];
    let out = with_folder_fsync_failing(&ts, "/usr/bin/env", &args[1..]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "turn", "user", "assistant", "usage", "turn"]);
    assert_eq!(session["events"][0]["text"], "remember 4217");
}

#[test]
fn a_torn_tail_left_by_a_crash_is_recovered_by_the_next_reader_never_reported_corrupt() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start"), notice("second")]);
    let path = ts.store.session_path(&id);
    ts.store.append(&id, Append::new().entry(&notice("warm-up")).unwrap()).unwrap();
    let before = std::fs::read(&path).unwrap();
    ts.store.append(&id, Append::new().entry(&notice(&format!("committed {}", "z".repeat(9000)))).unwrap()).unwrap();
    let after = std::fs::read(&path).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    // What a crash can leave of a committed append's in-place write: the
    // tail half written (a process killed), or the old bytes at the new
    // length with only the last page written (a power cut that lost some
    // unsynced pages). Written into the same file, as the crash would.
    let half = after[..(before.len() + after.len()) / 2].to_vec();
    let mut pages = before.clone();
    pages.resize(after.len(), 0);
    pages[after.len() - 4096..].copy_from_slice(&after[after.len() - 4096..]);
    for (what, torn) in [("half written", half), ("pages lost", pages)] {
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, &torn, 0).unwrap();
        file.set_len(torn.len() as u64).unwrap();
        assert!(serde_json::from_slice::<serde_json::Value>(&torn).is_err(), "{what}: torn");
        let out = ts.sessions().args(["show", id.as_str(), "--tail", "1"]).output().unwrap();
        assert!(out.status.success() && stderr_of(&out).is_empty(), "{what}: {}", stderr_of(&out));
        assert!(stdout_of(&out).contains("committed zzz"), "{what}: {}", stdout_of(&out));
        // Recovered under the lock, in place: the file as committed, which
        // any JSON parser reads.
        assert_eq!(std::fs::read(&path).unwrap(), after, "{what}");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
        let value: serde_json::Value = serde_json::from_slice(&after).unwrap();
        assert_eq!(value["events"].as_array().map(Vec::len), Some(4));
    }
    // `ls` and `status` read a torn file the same way.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, b"\0\0\0", after.len() as u64 - 30).unwrap();
    let out = ts.sessions().args(["ls", "--json"]).output().unwrap();
    assert!(out.status.success() && stderr_of(&out).is_empty(), "{}", stderr_of(&out));
    assert_eq!(json_of(&out)[0]["entries"], 4);
    assert_eq!(std::fs::read(&path).unwrap(), after);
}

#[test]
fn a_tracking_writer_finding_a_file_broken_by_hand_gets_an_error_not_a_hang() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let mine = ts.store.append(&id, Append::new().entry(&notice("mine")).unwrap()).unwrap();
    // Replaced by something that is not JSON (another inode: the journal
    // no longer describes it). The writer's mark no longer matches, so it
    // reads the file under its own lock to merge, and must not wait for
    // that lock again.
    let path = ts.store.session_path(&id);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, b"{\"schema\":2, not json").unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (store, id2, mark) = (ts.store.clone(), id.clone(), mine.mark.clone());
    std::thread::spawn(move || {
        let change = Append::new().entry(&notice("more")).expect("entry");
        let result = store.append_since(&id2, change, Some(&mark), &["notice"], |_| 0, |_, _| {});
        let _ = tx.send(result.map(|_| ()).map_err(|e| e.to_string()));
    });
    let result = rx.recv_timeout(Duration::from_secs(30)).expect("append_since returned, without waiting for itself");
    let err = result.expect_err("a broken file is an error");
    assert!(err.contains(&*path.to_string_lossy()), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"schema\":2, not json", "left as it was");
}

#[test]
fn a_writer_leaving_a_session_leaves_its_journal_empty() {
    let ts = TestStore::new();
    let id = ts.session("/w", &[user("start")]);
    let journal = ts.store.journal_path(&id);
    let active = || glrs::store::journal::is_active(&journal);
    // A chat: appends stay in the journal while the session is open, and
    // are checkpointed into the session when the chat lets it go.
    let open = ts.store.open_lock(&id).unwrap();
    ts.store.append(&id, Append::new().entry(&notice("one")).unwrap()).unwrap();
    assert!(active(), "committed in the journal while open");
    drop(open);
    assert!(!active(), "checkpointed on leaving");
    // A one-off writer checkpoints at once.
    ts.sessions().args(["append", id.as_str(), "--notice", "two"]).assert().success();
    assert!(!active());
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(ts.store.session_path(&id)).unwrap()).unwrap();
    assert_eq!(value["events"].as_array().map(Vec::len), Some(3));
    // Cleanup finds nothing to settle.
    let out = ts.sessions().args(["cleanup", "--dry-run"]).output().unwrap();
    assert!(!stdout_of(&out).contains("journal"), "{}", stdout_of(&out));
}
