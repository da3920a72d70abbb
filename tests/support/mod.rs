//! Test support: a temporary data folder per test, commands run against it,
//! and helpers that build sessions through the library or write raw files.
#![allow(dead_code)]

pub mod mock;
pub mod procs;
pub mod pty;
pub mod sse;

use std::path::{Path, PathBuf};

use glrs::store::{Append, Entry, Store};
use glrs::{Paths, SessionId};

pub struct TestStore {
    pub dir: tempfile::TempDir,
    pub store: Store,
}

impl TestStore {
    pub fn new() -> TestStore {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths::from_vars(
            Some(dir.path().join("data")),
            Some(dir.path().join("config")),
            None,
            Some(dir.path().join("home")),
        )
        .expect("paths");
        // The programs' TMPDIR (a writable root of the sandbox, SPEC 17):
        // its own folder, so the fake home beside it is not writable.
        std::fs::create_dir_all(dir.path().join("tmp")).expect("the test's TMPDIR");
        TestStore { dir, store: Store::new(paths) }
    }

    pub fn data_home(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.store.paths.sessions.clone()
    }

    pub fn legacy_dir(&self) -> PathBuf {
        self.store.paths.legacy_sessions.clone()
    }

    /// A program of this package, run against this store only.
    pub fn cmd(&self, program: &str) -> assert_cmd::Command {
        let exe = match program {
            "glrs-sessions" => env!("CARGO_BIN_EXE_glrs-sessions"),
            "glrs-chat" => env!("CARGO_BIN_EXE_glrs-chat"),
            "glrs" => env!("CARGO_BIN_EXE_glrs"),
            "glrs-compact" => env!("CARGO_BIN_EXE_glrs-compact"),
            "glrs-fork" => env!("CARGO_BIN_EXE_glrs-fork"),
            "glrs-artifacts" => env!("CARGO_BIN_EXE_glrs-artifacts"),
            other => panic!("unknown program {other}"),
        };
        assert_cmd::Command::from_std(self.std_cmd(exe))
    }

    /// A std `Command` for `exe` with this store's environment only.
    pub fn std_cmd(&self, exe: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(exe);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("XDG_DATA_HOME", self.data_home())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .current_dir(self.dir.path());
        cmd
    }

    /// Release an open lock the test took, and wait (at most 20 s) until
    /// the store sees it free: a program another test is starting at that
    /// moment holds a copy of the lock's descriptor until its exec.
    pub fn release(&self, lock: glrs::store::OpenLock, id: &SessionId) {
        drop(lock);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while self.store.open_holder(id).expect("read the open lock").is_some() {
            assert!(std::time::Instant::now() < deadline, "waited 20 s for the open lock of {id} to be released");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Write the config file (the commands find it through XDG_CONFIG_HOME).
    pub fn config(&self, value: serde_json::Value) {
        let dir = self.dir.path().join("config/glrs");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("config.json"), value.to_string()).expect("write config");
    }

    /// A config pointing OpenAI and Anthropic at the mock server. The
    /// memory flush and the built-in agent tools are off: tests of them
    /// turn them on (the agent tests write their own config).
    pub fn config_for(&self, server: &mock::MockServer) {
        self.config(serde_json::json!({
            "memoryFlush": {"enabled": false},
            "tools": {"enabled": false},
            "providers": {
                "openai": {"baseUrl": format!("{}/v1", server.url())},
                "anthropic": {"baseUrl": server.url()},
                "ollama": {"baseUrl": format!("{}/v1", server.url())},
            },
            "retry": {"attempts": 3, "baseDelayMs": 10},
        }));
    }

    /// `glrs-chat` with test keys against this store.
    pub fn chat(&self) -> assert_cmd::Command {
        let mut cmd = self.cmd("glrs-chat");
        cmd.env("OPENAI_API_KEY", OPENAI_KEY).env("ANTHROPIC_API_KEY", ANTHROPIC_KEY);
        cmd
    }

    /// The only session in the store, parsed.
    pub fn only_session(&self) -> (String, serde_json::Value) {
        let mut found: Vec<_> = std::fs::read_dir(self.sessions_dir())
            .expect("sessions folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 13 && n.ends_with(".json"))
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        let name = found.remove(0);
        let text = std::fs::read(self.sessions_dir().join(&name)).expect("read");
        (name[..8].to_string(), serde_json::from_slice(&text).expect("valid session JSON"))
    }

    /// Every byte written under the data folder, as text, to check secrets
    /// never reach a file.
    pub fn all_data_text(&self) -> String {
        self.snapshot().into_iter().map(|(_, b)| String::from_utf8_lossy(&b).into_owned()).collect()
    }

    pub fn sessions(&self) -> assert_cmd::Command {
        self.cmd("glrs-sessions")
    }

    /// A new session with these entries, through the library's write call.
    pub fn session(&self, cwd: &str, entries: &[Entry]) -> SessionId {
        let id = self.store.create(cwd).expect("create");
        let mut change = Append::new();
        for e in entries {
            change = change.entry(e).expect("entry");
        }
        self.store.append(&id, change).expect("append");
        id
    }

    /// Write a session file as raw text, bypassing the library.
    pub fn write_raw(&self, dir: &Path, id: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).expect("mkdir");
        let path = dir.join(format!("{id}.json"));
        std::fs::write(&path, text).expect("write");
        path
    }

    /// A complete, valid session file with fixed times, for whole-value
    /// comparisons of output.
    pub fn write_fixed(&self, id: &str, updated: &str, cwd: &str, entries: &[&str]) -> PathBuf {
        self.write_fixed_in(&self.sessions_dir(), id, updated, cwd, entries)
    }

    pub fn write_fixed_in(&self, dir: &Path, id: &str, updated: &str, cwd: &str, entries: &[&str]) -> PathBuf {
        let text = format!(
            r#"{{"schema":2,"id":"{id}","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"{updated}","cwd":"{cwd}","events":[{}],"contextTokens":{}}}"#,
            entries.join(","),
            entries.len() * 10
        );
        self.write_raw(dir, id, &text)
    }

    /// Every file under the data folder with its bytes: to prove a command
    /// touched nothing.
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    let bytes = std::fs::read(&p).unwrap_or_default();
                    out.push((p, bytes));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out.sort();
        out
    }
}

/// A brief as the model writes one, for compactions the tests script.
pub const BRIEF: &str = "worked on the parser\n## Goal\nfix `src/parse.rs`";

pub const OPENAI_KEY: &str = "sk-test-0penai-SECRET-7f3a";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-SECRET-91c2";

/// Move a session's `updatedAt` back by `ago`, as another program (or a
/// long lunch) would.
pub fn age(ts: &TestStore, id: &SessionId, ago: std::time::Duration) {
    let then = jiff::Timestamp::now() - jiff::SignedDuration::try_from(ago).unwrap();
    ts.store
        .update(id, |f| {
            f.set("updatedAt", serde_json::json!(glrs::time::format_ts(then)));
            Ok(())
        })
        .unwrap();
}

/// The `type`s of a session's entries, in order.
pub fn entry_types(session: &serde_json::Value) -> Vec<String> {
    session["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

pub fn user(text: &str) -> Entry {
    Entry::User { at: "2026-11-01T10:00:01.000Z".into(), text: text.into(), steer: false, internal: None }
}

pub fn notice(text: &str) -> Entry {
    Entry::Notice { at: "2026-11-01T10:00:02.000Z".into(), text: text.into() }
}

pub fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

pub fn json_of(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout_of(output)))
}

/// Fail the test unless `program` is on PATH: a test that cannot run its
/// subject fails rather than pass without running (issue 24). `.ci/run`
/// installs every program the tests drive.
pub fn require(program: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    assert!(found, "this test drives {program}, which is not on PATH: install it (.ci/run does, with apt-get)");
}

/// Fail the test unless `file` (of Debian's package `package`) exists.
pub fn require_file(file: &str, package: &str) {
    let found = std::path::Path::new(file).is_file();
    assert!(found, "this test needs {file}: install {package} (.ci/run does, with apt-get)");
}

/// Run `cmd` (in its own process group) and collect its output; after
/// `limit` the whole group is killed and the test fails naming `what`.
/// The group is killed at the end too, so no helper outlives the test.
pub fn run_bounded(cmd: &mut std::process::Command, limit: std::time::Duration, what: &str) -> std::process::Output {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        b
    });
    let kill_group = |pid: u32| {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stderr(std::process::Stdio::null())
            .status();
    };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            kill_group(child.id());
            let _ = child.wait();
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    kill_group(child.id());
    std::process::Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() }
}

/// Put a program at `to` without writing it: a hard link. A copy is a file
/// open for writing, and a child forked meanwhile by another test's thread
/// holds that open until it execs, so running the copy can fail with "Text
/// file busy". A copy only when linking is impossible (another filesystem).
pub fn install_exe(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).expect("copy a program");
    }
}

/// Config for a 4,000-token window for gpt-4.1 on `server` (the trigger is
/// 3,000 tokens), tools off, one attempt, the memory flush on or off.
pub fn small_window(ts: &TestStore, server: &mock::MockServer, flush: bool) {
    ts.config(serde_json::json!({
        "keepRecentTokens": 100,
        "tools": {"enabled": false},
        "memoryFlush": {"enabled": flush, "softThresholdTokens": 1000},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url()), "models": {"gpt-4.1": {"metadata": {"context": 4000}}}}},
        "retry": {"attempts": 1},
    }));
}

/// An OpenAI stream of `text` reporting a `prompt`-token prompt.
pub fn text_reply(text: &str, prompt: u64) -> mock::Reply {
    mock::Reply::sse(sse::openai_text(&[text], prompt, 5, 0))
}

/// A slow OpenAI stream of the `n` pieces `{word}0 `, `{word}1 `, … (one
/// event each, `delay_ms` apart) reporting a `prompt`-token prompt: a turn
/// still streaming while the test acts.
pub fn slow_words(word: &str, n: usize, prompt: u64, delay_ms: u64) -> mock::Reply {
    let pieces: Vec<String> = (0..n).map(|i| format!("{word}{i} ")).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    mock::Reply::slow_sse(sse::openai_text(&refs, prompt, n as u64, 0), delay_ms)
}

/// A user message of about 150 tokens: `text` and 600 characters of filler.
pub fn long(text: &str) -> String {
    format!("{text} {}", "lorem ipsum ".repeat(50))
}

/// A store and the mock server, with the config the agent's tests share:
/// OpenAI and Anthropic at the mock, one attempt, no memory flush, the
/// agent's tools on (the default); each key of `extra` replaces the
/// config's at the top level.
pub fn agent_store(extra: serde_json::Value) -> (TestStore, mock::MockServer) {
    let ts = TestStore::new();
    let server = mock::MockServer::start();
    let mut config = serde_json::json!({
        "memoryFlush": {"enabled": false},
        "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}, "anthropic": {"baseUrl": server.url()}},
        "retry": {"attempts": 1},
    });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    ts.config(config);
    (ts, server)
}

/// [`agent_store`], and a project folder to work in (`proj`, made).
pub fn agent_setup(extra: serde_json::Value) -> (TestStore, mock::MockServer, PathBuf) {
    let (ts, server) = agent_store(extra);
    let proj = ts.dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    (ts, server, proj)
}

/// Write an executable shell script (its folders made).
pub fn shell_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A fresh store whose config points at a fresh mock server (`config_for`),
/// and the server.
pub fn store_and_server() -> (TestStore, mock::MockServer) {
    let ts = TestStore::new();
    let server = mock::MockServer::start();
    ts.config_for(&server);
    (ts, server)
}

/// Three one-shot turns of long text in `project`, each answered "ok" at a
/// 100-token prompt, all in one session: its id. `project` must outlive the
/// session's use: a memory flush skips a cwd that is gone.
pub fn three_long_turns(ts: &TestStore, server: &mock::MockServer, project: &Path) -> String {
    for n in 0..3 {
        server.push(text_reply("ok", 100));
        let mut args = vec!["-m", "openai/gpt-4.1"];
        if n > 0 {
            args.push("--continue");
        }
        let text = long(&format!("turn {n}"));
        args.extend(["-p", &text]);
        assert!(ts.chat().current_dir(project).args(&args).output().unwrap().status.success());
    }
    ts.only_session().0
}
