//! Benchmark: what one step of the agent loop costs (issue 32, item 13). A
//! one-shot `glrs-chat -p` turn of 20 steps, each a `bash` call of `echo`
//! scripted by the tests' mock server, then a short answer; the sandbox and
//! checkpoints on (the defaults), in a git repository of 1,000 committed
//! files. Its floor, in the same run and alternating with it: 20 times
//! `bash -c 'echo …'` and a `curl` request of the same mock answer (what a
//! step cannot do without: run the command and ask the model). A step's
//! cost is (turn − one plain `glrs-chat -p` turn) / 20, against the floor
//! / 20. Target: a step at most 2× its floor. Medians.
//!
//! Run: `cargo bench --bench steps` (`GLRS_BENCH_RUNS`, default 11;
//! `GLRS_BENCH_STEPS`, default 20). Needs `git`, `bash` and `curl` on PATH.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use common::mock::{MockServer, Reply};
use common::{glrs_cmd, median, ms, sse};

fn repository(root: &Path, files: usize) {
    for n in 0..files {
        let dir = root.join(format!("src/module_{:02}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("file_{:03}.rs", n % 100)), format!("// file {n}\nfn f() {{}}\n"))
            .expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-q", "-m", "start"]] {
        let status = Command::new("git")
            .current_dir(root)
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgSign=false"])
            .args(args)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }
}

fn echo_call(step: usize) -> Reply {
    let args = json!({"command": format!("echo step {step}")}).to_string();
    Reply::sse(sse::openai_tool_call(&format!("call_{step}"), "bash", &[&args]))
}

fn answer() -> Reply {
    Reply::sse(sse::openai_text(&["done"], 20, 2, 0))
}

/// One `glrs-chat -p` turn in `work`: `steps` bash calls, then the answer.
fn turn(home: &Path, work: &Path, server: &MockServer, steps: usize) -> Duration {
    for step in 0..steps {
        server.push(echo_call(step));
    }
    server.push(answer());
    let mut cmd = glrs_cmd(env!("CARGO_BIN_EXE_glrs-chat"), home);
    cmd.current_dir(work).args(["-p", "go", "-m", "openai/gpt-4.1"]);
    let started = Instant::now();
    let out = cmd.stdin(Stdio::null()).output().expect("glrs-chat");
    let took = started.elapsed();
    assert!(out.status.success(), "glrs-chat failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("done"), "the turn ended with the answer");
    took
}

/// The floor of `steps` steps: each a `bash -c 'echo …'` and a request of
/// one step's answer with `curl`.
fn floor(work: &Path, server: &MockServer, steps: usize) -> Duration {
    let started = Instant::now();
    for step in 0..steps {
        let status = Command::new("bash")
            .current_dir(work)
            .args(["-c", &format!("echo step {step}")])
            .stdout(Stdio::null())
            .status()
            .expect("bash");
        assert!(status.success());
        server.push(echo_call(step));
        let out = Command::new("curl")
            .args(["-sN", "-H", "content-type: application/json", "-d"])
            .arg(r#"{"model":"gpt-4.1","messages":[{"role":"user","content":"go"}],"stream":true}"#)
            .arg(format!("{}/v1/chat/completions", server.url()))
            .output()
            .expect("curl");
        assert!(out.status.success() && !out.stdout.is_empty(), "curl got the answer");
    }
    started.elapsed()
}

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(11);
    let steps = common::setting("GLRS_BENCH_STEPS", 20) as usize;
    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    repository(work.path(), 1000);
    let server = MockServer::start();
    common::write_config(home.path(), &json!({"providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}));

    let (mut turns, mut plain, mut floors) = (vec![], vec![], vec![]);
    for round in 0..runs + 1 {
        let t = turn(home.path(), work.path(), &server, steps);
        let p = turn(home.path(), work.path(), &server, 0);
        let f = floor(work.path(), &server, steps);
        // The first round warms the page cache and the shadow repository.
        if round > 0 {
            turns.push(t);
            plain.push(p);
            floors.push(f);
        }
    }
    let (t, p, f) = (ms(median(turns)), ms(median(plain)), ms(median(floors)));
    let n = steps as f64;
    let step = (t - p) / n;
    let floor_step = f / n;
    println!("{steps}-step turn, median of {runs}\tms");
    println!("glrs-chat -p turn of {steps} echo steps\t{t:.1}");
    println!("glrs-chat -p turn with no tool call\t{p:.1}");
    println!("floor: {steps} x (bash -c echo + curl)\t{f:.1}");
    println!("a step: glrs {step:.2} ms, floor {floor_step:.2} ms, ratio {:.2}", step / floor_step);
}
