//! Benchmark: what a checkpoint (SPEC 19) adds to a model step, against
//! `git status --porcelain` on the same files, side by side in one run. The
//! workspace: 10,000 files (100 folders of 100, about 1 KB each) in a git
//! work tree with everything committed, so `git status` has its index.
//! Measured: a checkpoint when nothing changed (the usual step: a stat per
//! file), and when one file changed (a new commit on the session's ref);
//! the first checkpoint of a session (every file hashed once) and of a
//! second session in the same workspace (its index copied) are printed
//! too. Each round times the three one after the other (git status, the
//! unchanged checkpoint, the one-file checkpoint after the file is written),
//! so a busy machine slows them alike; medians. Target: within 3× of `git
//! status --porcelain`.
//!
//! Run: `cargo bench --bench checkpoint` (`GLRS_BENCH_RUNS`, default 11;
//! `GLRS_BENCH_FILES`, default 10,000). Needs `git` on PATH.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use glrs::checkpoint::{Settings, Tracker, find_git};

fn generate(root: &Path, files: usize) {
    let body: String = (0..20).map(|i| format!("line {i} of a source-like file\n")).collect();
    for n in 0..files {
        let dir = root.join(format!("src/module_{:03}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("file_{:03}.txt", n % 100)), format!("// file {n}\n{body}")).expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(root)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgSign=false"])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn settings_of() -> Settings {
    Settings { enabled: true, exclude: Vec::new(), max_file_bytes: glrs::config::DEFAULT_MAX_FILE_BYTES }
}

fn timed(mut f: impl FnMut()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn main() {
    if common::listing() {
        return;
    }
    if find_git().is_none() {
        eprintln!("checkpoint benchmark: git is not on PATH; nothing to measure");
        return;
    }
    let runs = common::runs(11);
    let files = common::setting("GLRS_BENCH_FILES", 10_000) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, data) = (dir.path().join("work"), dir.path().join("data"));
    std::fs::create_dir_all(&root).expect("mkdir");
    generate(&root, files);
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "all"]);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let settings = settings_of();
    let id = glrs::SessionId::parse("bec00001").expect("id");
    let mut tracker = Tracker::new(&data, &root, &id, settings);
    let started = Instant::now();
    let first = runtime.block_on(tracker.record(true)).expect("first checkpoint").0.expect("recorded");
    let first_took = started.elapsed();

    let status = || {
        let out = Command::new("git").current_dir(&root).args(["status", "--porcelain"]).output().expect("git status");
        assert!(out.status.success() && out.stdout.is_empty(), "a clean work tree");
    };
    // Side by side: each round times all three, so a busy machine slows
    // them alike; the first round warms the page cache and is not counted.
    let mut taken: [Vec<Duration>; 3] = Default::default();
    let changing = root.join("src/module_000/file_000.txt");
    let committed = std::fs::read(&changing).expect("read");
    for round in 0..=runs {
        let a = timed(status);
        let b = timed(|| {
            let (recorded, _) = runtime.block_on(tracker.record(false)).expect("checkpoint");
            assert!(recorded.is_none(), "nothing changed, nothing recorded");
        });
        // The step's write is not the checkpoint's cost: it is made first.
        std::fs::write(&changing, format!("changed {round}\n")).expect("write");
        let started = Instant::now();
        let (recorded, _) = runtime.block_on(tracker.record(false)).expect("checkpoint");
        let c = started.elapsed();
        assert_eq!(recorded.expect("a change is recorded").files, ["src/module_000/file_000.txt"]);
        // Back as committed, and recorded so, for the next round (not timed).
        std::fs::write(&changing, &committed).expect("write");
        runtime.block_on(tracker.record(true)).expect("checkpoint");
        if round > 0 {
            for (all, took) in taken.iter_mut().zip([a, b, c]) {
                all.push(took);
            }
        }
    }
    let [status, unchanged, one_changed] = taken.map(common::median);
    assert_ne!(first.commit, "");
    // A second chat in the same workspace: its index starts from the first's.
    let mut second = Tracker::new(&data, &root, &glrs::SessionId::parse("bec00002").expect("id"), settings_of());
    let started = Instant::now();
    runtime.block_on(second.record(true)).expect("checkpoint").0.expect("recorded");
    let second_took = started.elapsed();

    let base = common::ms(status);
    println!("checkpoints of a workspace of {files} files (a git work tree, all committed), medians of {runs}:");
    println!("  git status --porcelain          {:8.2} ms", base);
    for (label, took) in [("checkpoint, nothing changed", unchanged), ("checkpoint, one file changed", one_changed)] {
        let ms = common::ms(took);
        let ratio = ms / base;
        let verdict = if ratio <= 3.0 { "within" } else { "OVER" };
        println!("  {label:<31} {ms:8.2} ms  {ratio:4.2}× git status ({verdict} the 3× target)");
    }
    println!("  first checkpoint of a session   {:8.2} ms  (every file hashed once)", common::ms(first_took));
    println!(
        "  first of a second session       {:8.2} ms  (its index copied from the first's)",
        common::ms(second_took)
    );
}
