//! Benchmark: hostile-sized streams (issue 14). In one run, against the
//! tests' mock server on 127.0.0.1:
//! 1. one SSE line of 16 MB (a single 16 MB text chunk): `glrs-chat -p`
//!    against `curl` reading the same stream, medians; the ratio shows the
//!    line is parsed in linear time (the old parser took 17.6 s);
//! 2. a 100 MB reply (1,600 events of 64 KB): peak resident memory of
//!    `glrs-chat -p` and of `glrs-chat -p --json` (from `/usr/bin/time`),
//!    against the reply's size and curl's peak.
//!
//! Run: `cargo bench --bench stream` (`GLRS_BENCH_RUNS`, default 5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use common::mock::{MockServer, Reply};
use common::{chat_cmd, median, ms, sse};

fn curl_cmd(server: &MockServer) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["-sN", "-o", "/dev/null", "-H", "content-type: application/json", "-d"])
        .arg(r#"{"model":"gpt-4.1","messages":[{"role":"user","content":"hello"}],"stream":true}"#)
        .arg(format!("{}/v1/chat/completions", server.url()));
    cmd
}

/// Run to the end with stdout discarded: the time taken, and the peak
/// resident memory in KB as `/usr/bin/time` saw it.
fn run(cmd: Command) -> (Duration, u64) {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let mut timed = Command::new("/usr/bin/time");
    timed.args(["-f", "%M", "-o"]).arg(report.path()).arg(cmd.get_program()).args(cmd.get_args());
    timed.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            timed.env(k, v);
        }
    }
    let start = Instant::now();
    let status = timed.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("spawn");
    let took = start.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    let kb = std::fs::read_to_string(report.path()).expect("report").trim().parse().expect("a number of KB");
    (took, kb)
}

/// A reply of `pieces` as OpenAI chunks.
fn reply(pieces: &[String]) -> Reply {
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    Reply::sse(sse::openai_text(&refs, 20, pieces.len() as u64, 0))
}

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(5);
    let home = tempfile::tempdir().expect("tempdir");
    let server = MockServer::start();
    common::write_config(
        home.path(),
        &json!({"memoryFlush": {"enabled": false}, "providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}}),
    );

    // 1. One 16 MB line.
    let line = vec!["y".repeat(16 << 20)];
    let (mut glrs, mut curl) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        server.push(reply(&line));
        glrs.push(run(chat_cmd(home.path())).0);
        server.push(reply(&line));
        curl.push(run(curl_cmd(&server)).0);
    }
    let (g, c) = (median(glrs), median(curl));
    println!(
        "one 16 MB SSE line, median of {runs}\tglrs-chat -p {:.0} ms\tcurl {:.0} ms\tratio {:.1}",
        ms(g),
        ms(c),
        ms(g) / ms(c)
    );

    // 2. A 100 MB reply in 64 KB events.
    let pieces: Vec<String> = (0..1600)
        .map(|i: usize| {
            let n = i.to_string();
            format!("{}{n}", "0".repeat((64 << 10) - n.len()))
        })
        .collect();
    let size_mb = pieces.iter().map(String::len).sum::<usize>() as f64 / (1 << 20) as f64;
    server.push(reply(&pieces));
    let (took, glrs_kb) = run(chat_cmd(home.path()));
    server.push(reply(&pieces));
    let mut json = chat_cmd(home.path());
    json.arg("--json");
    let (_, json_kb) = run(json);
    server.push(reply(&pieces));
    let (_, curl_kb) = run(curl_cmd(&server));
    let (glrs_mb, json_mb) = (glrs_kb as f64 / 1024.0, json_kb as f64 / 1024.0);
    println!(
        "a {size_mb:.0} MB reply\tglrs-chat -p peak {glrs_mb:.0} MB ({:.1}× the reply) in {:.1} s\twith --json {json_mb:.0} MB ({:.1}×)\tcurl peak {:.0} MB",
        glrs_mb / size_mb,
        took.as_secs_f64(),
        json_mb / size_mb,
        curl_kb as f64 / 1024.0
    );
}
