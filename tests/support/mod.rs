//! Test support: a temporary data folder per test, commands run against it,
//! and helpers that build sessions through the library or write raw files.
#![allow(dead_code)]

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
            other => panic!("unknown program {other}"),
        };
        let mut cmd = assert_cmd::Command::new(exe);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_DATA_HOME", self.data_home())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .current_dir(self.dir.path());
        cmd
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

pub fn user(text: &str) -> Entry {
    Entry::User { at: "2026-11-01T10:00:01.000Z".into(), text: text.into(), steer: false }
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
