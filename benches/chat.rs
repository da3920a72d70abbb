//! Benchmark: `glrs-chat -p` against `curl` on the same local mock server,
//! in one run: time to the first byte of the reply and total time, medians.
//! Then the REPL (in a pseudo-terminal) showing a 10,000-token streamed
//! reply, against `curl` reading the same stream: a ratio near 1 means the
//! REPL keeps up with the stream.
//!
//! Run: `cargo bench --bench chat` (`GLRS_BENCH_RUNS`, default 31).

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use common::mock::{MockServer, Reply};
use common::{chat_cmd, glrs_cmd, median, ms, sse};

/// Time to the first stdout byte, and to the end, of a command.
fn timed(mut cmd: Command) -> (Duration, Duration) {
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).expect("a first byte");
    let ttfb = start.elapsed();
    std::io::copy(&mut stdout, &mut std::io::sink()).expect("read");
    assert!(child.wait().expect("wait").success(), "{cmd:?} failed");
    (ttfb, start.elapsed())
}

fn curl_cmd(server: &MockServer) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["-sN", "-H", "content-type: application/json", "-H", "authorization: Bearer sk-bench", "-d"])
        .arg(r#"{"model":"gpt-4.1","messages":[{"role":"user","content":"hello"}],"stream":true,"stream_options":{"include_usage":true}}"#)
        .arg(format!("{}/v1/chat/completions", server.url()));
    cmd
}

/// A reply whose first event already carries text, so the first byte on
/// stdout means the same thing for glrs-chat and curl.
fn reply(pieces: &[String], delay_ms: u64) -> Reply {
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut events = sse::openai_text(&refs, 20, pieces.len() as u64, 0);
    events.remove(0);
    Reply::slow_sse(events, delay_ms)
}

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(31);
    let home = tempfile::tempdir().expect("tempdir");
    let server = MockServer::start();
    common::write_config(home.path(), &json!({"providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}));

    // 1. One-shot latency: a short answer in 5 events, 2 ms apart.
    let short: Vec<String> = ["Hello", ", ", "world", "!", " Bye."].iter().map(|s| s.to_string()).collect();
    let (mut glrs_first, mut glrs_total, mut curl_first, mut curl_total) = (vec![], vec![], vec![], vec![]);
    for i in 0..runs + 3 {
        server.push(reply(&short, 2));
        server.push(reply(&short, 2));
        let (gf, gt) = timed(chat_cmd(home.path()));
        let (cf, ct) = timed(curl_cmd(&server));
        if i >= 3 {
            glrs_first.push(gf);
            glrs_total.push(gt);
            curl_first.push(cf);
            curl_total.push(ct);
        }
    }
    let (gf, gt, cf, ct) = (median(glrs_first), median(glrs_total), median(curl_first), median(curl_total));
    println!("one-shot, median of {runs}\tglrs-chat -p ms\tcurl ms\toverhead ms");
    println!("time to first byte\t{:.1}\t{:.1}\t{:.1}", ms(gf), ms(cf), ms(gf) - ms(cf));
    println!("total\t{:.1}\t{:.1}\t{:.1}", ms(gt), ms(ct), ms(gt) - ms(ct));
    println!("glrs-chat -p / curl, total\t{:.2}", ms(gt) / ms(ct));

    // 1b. What the one-shot asks of the kernel (issue 32: at most 800
    // system calls, none under /etc/ssl for an http:// endpoint).
    server.push(reply(&short, 2));
    let glrs_calls = syscalls(chat_cmd(home.path()));
    server.push(reply(&short, 2));
    let curl_calls = syscalls(curl_cmd(&server));
    server.push(reply(&short, 2));
    let ssl = files_opened(chat_cmd(home.path())).iter().filter(|f| f.starts_with("/etc/ssl")).count();
    println!(
        "system calls (strace -f -c)\tglrs-chat -p {glrs_calls}\tcurl {curl_calls}\tfiles under /etc/ssl opened {ssl}"
    );

    // 2. The REPL showing 10,000 tokens (2,500 events of about 4 tokens).
    let long: Vec<String> = (0..2500).map(|i| format!("tok{i:05} ab ")).chain(["END-OF-REPLY".to_string()]).collect();
    for (label, delay) in [("1 event/ms", 1u64), ("as fast as possible", 0)] {
        server.push(reply(&long, delay));
        let (_, curl) = timed(curl_cmd(&server));
        server.push(reply(&long, delay));
        let repl = repl_time(home.path());
        println!(
            "REPL, 10,000 tokens, {label}\trepl {:.0} ms\tcurl {:.0} ms\trepl/curl {:.2}",
            ms(repl),
            ms(curl),
            ms(repl) / ms(curl)
        );
    }
}

/// `cmd` under `strace -f -c`: how many system calls it made, with its
/// threads and children.
fn syscalls(cmd: Command) -> u64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("counts");
    let mut traced = strace(&cmd, &["-f", "-c", "-o"], &out);
    assert!(traced.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("strace").success(), "{cmd:?}");
    let text = std::fs::read_to_string(&out).expect("strace's counts");
    let total = text.lines().find(|l| l.trim_end().ends_with("total")).expect("a total line");
    // `% time, seconds, usecs/call, calls, [errors,] total`.
    total.split_whitespace().nth(3).and_then(|n| n.parse().ok()).expect("the count of calls")
}

/// The files `cmd` (and its threads and children) opened or looked at.
pub fn files_opened(cmd: Command) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("files");
    let mut traced = strace(&cmd, &["-f", "-e", "trace=%file", "-o"], &out);
    assert!(traced.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("strace").success(), "{cmd:?}");
    let text = std::fs::read_to_string(&out).expect("strace's output");
    text.lines().filter_map(|l| Some(l.split('"').nth(1)?.to_string())).collect()
}

/// `strace FLAGS OUT` running what `cmd` runs, in its environment.
fn strace(cmd: &Command, flags: &[&str], out: &Path) -> Command {
    let mut traced = Command::new("strace");
    traced.args(flags).arg(out).arg(cmd.get_program()).args(cmd.get_args());
    traced.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            traced.env(k, v);
        }
    }
    traced
}

/// Time from sending a prompt in the REPL to the whole reply being shown.
fn repl_time(home: &Path) -> Duration {
    let mut cmd = glrs_cmd(env!("CARGO_BIN_EXE_glrs-chat"), home);
    cmd.args(["-m", "openai/gpt-4.1"]).env("TERM", "xterm-256color");
    let options = rexpect::reader::Options::new().timeout_ms(Some(60_000));
    let mut p = rexpect::session::spawn_with_options(cmd, options).expect("pty");
    p.exp_string("% > ").expect("prompt");
    let start = Instant::now();
    p.send_line("go").expect("send");
    p.exp_string("END-OF-REPLY").expect("the whole reply");
    let took = start.elapsed();
    p.exp_string("% > ").expect("prompt again");
    p.send_line("/quit").expect("quit");
    let _ = p.exp_eof();
    took
}
