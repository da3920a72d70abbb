//! Benchmark: the cost of the sandbox (SPEC 17) per `bash` call. The same
//! `bash -c true` run through glrs's process runner, side by side in one
//! run: unsandboxed, in `workspace-write` (Landlock, seccomp, a mount
//! namespace with `.git` read-only and `~/.ssh` hidden) and in `read-only`
//! (which also makes a private temporary folder). Each sandboxed run
//! builds its rules anew, as a call does. Target: under 5 ms extra a call.
//!
//! Run: `cargo bench --bench sandbox` (`GLRS_BENCH_RUNS`, default 101; the three interleaved).
//! Without kernel support it says so and measures nothing.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use glrs::process::{Ending, Spawn, run_process};
use glrs::sandbox::{Mode, Places, Sandbox, SandboxConfig, Support};

/// One `bash -c true` through the runner, confined by `sandbox` (or not).
fn one_call(rt: &tokio::runtime::Runtime, cwd: &Path, out: &Path, sandbox: Option<&Sandbox>) -> Duration {
    let start = Instant::now();
    let confinement = sandbox.map(|s| s.confinement().unwrap().expect("enforced"));
    let spawn = Spawn {
        confine: confinement.as_ref().map(|c| c.confine.clone()),
        ..Spawn::new("bash".as_ref(), &["-c", "true"], cwd)
    };
    let ran = rt.block_on(run_process(&spawn, Duration::from_secs(30), out, "bench")).unwrap();
    let elapsed = start.elapsed();
    assert_eq!(ran.ending, Ending::Exit(0), "the command ran");
    ran.output.remove();
    elapsed
}

fn main() {
    if common::listing() {
        return;
    }
    if let Support::Unavailable(why) = glrs::sandbox::support() {
        println!("sandbox unavailable here ({why}): nothing to measure");
        return;
    }
    let runs = common::runs(101);
    let dir = tempfile::tempdir().unwrap();
    let root = glrs::sandbox::resolve(dir.path());
    let (work, home, out) = (root.join("work"), root.join("home"), root.join("out"));
    for d in [work.join(".git/hooks"), home.join(".ssh"), out.clone(), root.join("tmp")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(work.join("AGENTS.md"), "notes\n").unwrap();
    let places = Places {
        home: Some(home.clone()),
        tmp: root.join("tmp"),
        data: root.join("data"),
        config_dir: home.join(".config/glrs"),
        config_file: home.join(".config/glrs/config.json"),
        own_output: None,
        caches: None,
    };
    let config = SandboxConfig::default();
    let write = Sandbox::new(&config, Mode::WorkspaceWrite, &work, &places).unwrap();
    let read_only = write.with_mode(Mode::ReadOnly);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Interleaved, one of each per round, so a busy machine slows all three alike.
    let (mut plain, mut ww, mut ro) = (Vec::new(), Vec::new(), Vec::new());
    one_call(&rt, &work, &out, Some(&write));
    for _ in 0..runs {
        plain.push(one_call(&rt, &work, &out, None));
        ww.push(one_call(&rt, &work, &out, Some(&write)));
        ro.push(one_call(&rt, &work, &out, Some(&read_only)));
    }
    let (plain, ww, ro) = (common::median(plain), common::median(ww), common::median(ro));
    println!("sandbox: bash -c true, median of {runs} calls ({})", write.describe());
    println!("  unsandboxed      {:>8.2} ms", common::ms(plain));
    for (name, d) in [("workspace-write", ww), ("read-only", ro)] {
        let extra = common::ms(d) - common::ms(plain);
        let verdict = if extra < 5.0 { "within" } else { "OVER" };
        println!("  {name:<16} {:>8.2} ms  ({extra:+.2} ms a call; {verdict} the 5 ms target)", common::ms(d));
    }
}
