//! Benchmark: `glrs-sessions blame` (SPEC 24) of a 5,000-line file changed
//! by 200 sessions, against `git blame` of the same history in a git
//! repository, side by side in one run. Each session is one turn of one
//! step that rewrites 25 lines of the file; its checkpoints (before the
//! step, and the turn's end) are taken by the library's own tracker into
//! the shadow repository, as a chat takes them. The git repository holds
//! the same 200 states as 200 commits. Each round times `git blame FILE`
//! then `glrs-sessions blame FILE`; medians. Target: at most 3× `git blame`.
//!
//! Run: `cargo bench --bench blame` (`GLRS_BENCH_RUNS`, default 11;
//! `GLRS_BENCH_SESSIONS`, default 200; `GLRS_BENCH_LINES`, default 5,000).
//! Needs `git` on PATH.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use glrs::checkpoint::{Settings, Tracker, find_git};
use glrs::paths::Paths;
use glrs::store::{Append, Entry, Store};

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

/// The file after session `s`: each line names the last session whose
/// 25-line stretch covers it.
fn state(lines: usize, s: usize) -> String {
    let mut owner = vec![usize::MAX; lines];
    for k in 0..=s {
        let start = (k * 7919) % lines.saturating_sub(25).max(1);
        for slot in owner.iter_mut().skip(start).take(25) {
            *slot = k;
        }
    }
    owner
        .iter()
        .enumerate()
        .map(|(i, o)| if *o == usize::MAX { format!("line {i}: as it was\n") } else { format!("line {i}: by {o}\n") })
        .collect()
}

fn main() {
    if common::listing() {
        return;
    }
    if find_git().is_none() {
        eprintln!("blame benchmark: git is not on PATH; nothing to measure");
        return;
    }
    let runs = common::runs(11);
    let sessions = common::setting("GLRS_BENCH_SESSIONS", 200) as usize;
    let lines = common::setting("GLRS_BENCH_LINES", 5_000) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let (work, baseline) = (dir.path().join("work"), dir.path().join("baseline"));
    for d in [&home, &work, &baseline] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let paths =
        Paths::from_vars(Some(home.join("data")), Some(home.join("config")), None, Some(home.clone())).expect("paths");
    let store = Store::new(paths);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let settings =
        Settings { enabled: true, exclude: Vec::new(), max_file_bytes: glrs::config::DEFAULT_MAX_FILE_BYTES };
    let file = work.join("f.txt");
    std::fs::write(&file, (0..lines).map(|i| format!("line {i}: as it was\n")).collect::<String>()).expect("write");
    std::fs::write(baseline.join("f.txt"), std::fs::read(&file).expect("read")).expect("write");
    git(&baseline, &["init", "-q"]);
    git(&baseline, &["add", "f.txt"]);
    git(&baseline, &["commit", "-q", "-m", "start"]);
    let started = Instant::now();
    for s in 0..sessions {
        let id = store.create(&work.to_string_lossy()).expect("session");
        let user = Entry::User {
            at: glrs::time::now(),
            text: format!("session {s}: rewrite a stretch"),
            steer: false,
            internal: None,
        };
        store.append(&id, Append::new().entry(&user).expect("entry")).expect("append");
        let mut tracker = Tracker::new(&store.paths.data, &work, &id, settings.clone());
        let before = runtime.block_on(tracker.record(false)).expect("checkpoint").0.expect("recorded");
        let text = state(lines, s);
        std::fs::write(&file, &text).expect("write");
        let after = runtime.block_on(tracker.record_turn_end()).expect("checkpoint").0.expect("recorded");
        let append = Append::new().entry(&before.entry()).expect("entry").entry(&after.entry()).expect("entry");
        store.append(&id, append).expect("append");
        std::fs::write(baseline.join("f.txt"), &text).expect("write");
        git(&baseline, &["commit", "-q", "-a", "-m", &format!("session {s}")]);
    }
    eprintln!("blame: {sessions} sessions over a {lines}-line file made in {:.1} s", started.elapsed().as_secs_f64());

    let git_blame = || {
        let out = Command::new("git").current_dir(&baseline).args(["blame", "f.txt"]).output().expect("git blame");
        assert!(out.status.success());
    };
    let glrs_blame = || {
        let out = common::glrs_cmd(env!("CARGO_BIN_EXE_glrs-sessions"), &home)
            .current_dir(&work)
            .args(["blame", "f.txt"])
            .output()
            .expect("glrs-sessions blame");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), lines);
    };
    let (mut g, mut b): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    git_blame();
    glrs_blame();
    for _ in 0..runs {
        let t = Instant::now();
        git_blame();
        g.push(t.elapsed());
        let t = Instant::now();
        glrs_blame();
        b.push(t.elapsed());
    }
    let (g, b) = (common::median(g), common::median(b));
    println!(
        "blame of a {lines}-line file changed by {sessions} sessions, medians of {runs}: git blame {:.1} ms, \
         glrs-sessions blame {:.1} ms, {:.2}x (target: at most 3x)",
        common::ms(g),
        common::ms(b),
        common::ms(b) / common::ms(g)
    );
}
