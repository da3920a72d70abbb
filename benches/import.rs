//! Benchmark: `glrs-sessions import --from claude|codex|pi` over about
//! 100 MB of generated transcripts (a third of each tool, files of about
//! 1 MB, tool calls with results of a few KB), into a fresh store each run,
//! against a baseline measured in the same run: `jq -c .` over the same
//! files (parsing and writing every line once), the two alternating. Each
//! is timed by wall clock and by CPU time (user and system of the children,
//! from `getrusage`): on a shared machine the CPU time is what a run costs
//! on one core. SPEC 18 asks for at least 50 MB/s of source on one core;
//! issue 21 for no slower than `jq`.
//!
//! Run: `cargo bench --bench import`. Settings (environment):
//! `GLRS_BENCH_MB` (100), `GLRS_BENCH_RUNS` (5), `GLRS_BENCH_DIR`
//! (target/glrs-bench).

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, ms, setting};
use serde_json::json;

/// About 2 KB of source code, as a tool result holds.
fn code(n: usize) -> String {
    format!(
        "// file {n}\n{}",
        "pub fn parse(input: &str) -> Result<Vec<Token>, Error> { let mut out = Vec::new(); }\n".repeat(24)
    )
}

fn time_of(n: usize) -> String {
    let ts = jiff::Timestamp::from_millisecond(1_795_000_000_000 + n as i64 * 1000).unwrap();
    glrs::time::format_ts(ts)
}

/// One Claude Code turn: a prompt, an answer in three lines, two results,
/// chained by `parentUuid` as Claude Code chains them (each result hangs
/// off its own call's line; the next prompt off the last result written).
fn claude_turn(out: &mut Vec<serde_json::Value>, file: usize, n: usize, session: &str) {
    let base = |kind: &str, uuid: String, parent: Option<String>, message: serde_json::Value| {
        json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/ada/src/app",
            "sessionId": session, "version": "2.1.197", "type": kind, "uuid": uuid, "timestamp": time_of(n), "message": message})
    };
    let after = |uuid: &str| Some(format!("{uuid}{n}"));
    let id = format!("msg_{file}_{n}");
    let call = |k: usize| format!("toolu_{file}_{n}_{k}");
    out.push(base(
        "user",
        format!("u{n}"),
        n.checked_sub(1).map(|last| format!("r{last}_1")),
        json!({"role": "user", "content": format!("Step {n}: read src/parser_{n}.rs and run the tests")}),
    ));
    let answer = |block: serde_json::Value| json!({"id": id, "role": "assistant", "model": "claude-sonnet-4-5", "content": [block], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 50}});
    out.push(base(
        "assistant",
        format!("a{n}"),
        after("u"),
        answer(json!({"type": "text", "text": "Reading the parser and running the tests."})),
    ));
    out.push(base("assistant", format!("b{n}"), after("a"), answer(json!({"type": "tool_use", "id": call(1), "name": "Read", "input": {"file_path": format!("/home/ada/src/app/src/parser_{n}.rs")}}))));
    out.push(base(
        "assistant",
        format!("c{n}"),
        after("b"),
        answer(json!({"type": "tool_use", "id": call(2), "name": "Bash", "input": {"command": "cargo test"}})),
    ));
    for (k, call_line) in [(2, "c"), (1, "b")] {
        let result =
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call(k), "content": code(n)}]});
        out.push(base("user", format!("r{n}_{k}"), after(call_line), result));
    }
}

/// One Codex turn: a prompt, reasoning, a call, its output, an answer, usage.
fn codex_turn(out: &mut Vec<serde_json::Value>, file: usize, n: usize) {
    let line =
        |kind: &str, payload: serde_json::Value| json!({"timestamp": time_of(n), "type": kind, "payload": payload});
    let call = format!("call_{file}_{n}");
    out.push(line("response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Step {n}: read src/parser_{n}.rs")}]})));
    out.push(line("response_item", json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Reading the parser**"}], "encrypted_content": "gAAAA".repeat(40)})));
    let args = json!({"command": ["cat", format!("src/parser_{n}.rs")], "workdir": "/home/ada/src/app"}).to_string();
    out.push(line(
        "response_item",
        json!({"type": "function_call", "name": "shell", "arguments": args, "call_id": call}),
    ));
    out.push(line("response_item", json!({"type": "function_call_output", "call_id": call, "output": json!({"output": code(n), "metadata": {"exit_code": 0}}).to_string()})));
    out.push(line("response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The parser builds a token list."}]})));
    out.push(line("event_msg", json!({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 900, "cached_input_tokens": 400, "output_tokens": 40}}})));
}

/// One pi turn, chained by `parentId`.
fn pi_turn(out: &mut Vec<serde_json::Value>, file: usize, n: usize) {
    let at = time_of(n);
    let id = |k: usize| format!("{:08x}", n * 4 + k);
    let parent =
        |k: usize| if n == 0 && k == 0 { serde_json::Value::Null } else { json!(format!("{:08x}", n * 4 + k - 1)) };
    let call = format!("toolu_{file}_{n}");
    let entry = |k: usize, message: serde_json::Value| json!({"type": "message", "id": id(k), "parentId": parent(k), "timestamp": at, "message": message});
    out.push(entry(0, json!({"role": "user", "content": format!("Step {n}: read src/parser_{n}.rs")})));
    let usage = json!({"input": 900, "output": 40, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.001}});
    out.push(entry(1, json!({"role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "read", "arguments": {"path": format!("src/parser_{n}.rs")}}], "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "toolUse"})));
    out.push(entry(2, json!({"role": "toolResult", "toolCallId": call, "toolName": "read", "content": [{"type": "text", "text": code(n)}], "isError": false})));
    out.push(entry(3, json!({"role": "assistant", "content": [{"type": "text", "text": "The parser builds a token list."}], "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "stop"})));
}

/// Write one file of about `size` bytes of `tool`'s transcript.
fn write_file(path: &Path, tool: &str, file: usize, size: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let session = format!("6f1c2a9e-0000-4c55-9d2e-{file:012}");
    let header = match tool {
        "codex" => Some(
            json!({"timestamp": time_of(0), "type": "session_meta", "payload": {"id": session, "timestamp": time_of(0), "cwd": "/home/ada/src/app", "cli_version": "0.63.0", "source": "cli", "model_provider": "openai"}}),
        ),
        "pi" => Some(
            json!({"type": "session", "version": 3, "id": session, "timestamp": time_of(0), "cwd": "/home/ada/src/app"}),
        ),
        _ => None,
    };
    let mut written = 0;
    if let Some(line) = header {
        written += line.to_string().len() + 1;
        writeln!(out, "{line}").unwrap();
    }
    let mut n = 0;
    while written < size {
        let mut lines = Vec::new();
        match tool {
            "claude" => claude_turn(&mut lines, file, n, &session),
            "codex" => codex_turn(&mut lines, file, n),
            _ => pi_turn(&mut lines, file, n),
        }
        for line in lines {
            let text = line.to_string();
            written += text.len() + 1;
            writeln!(out, "{text}").unwrap();
        }
        n += 1;
    }
    out.flush().unwrap();
}

/// The generated sources: `<dir>/<tool>/…jsonl`, about `mb` MB in all.
fn generate(dir: &Path, mb: usize) -> Vec<PathBuf> {
    let marker = dir.join(format!(".generated-{mb}-v2"));
    let files_per_tool = mb.div_ceil(3);
    let mut files = Vec::new();
    for tool in ["claude", "codex", "pi"] {
        for file in 0..files_per_tool {
            files.push(dir.join(tool).join(format!("s{file:03}.jsonl")));
        }
    }
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(dir);
        for path in &files {
            let tool = path.parent().unwrap().file_name().unwrap().to_str().unwrap().to_string();
            let file: usize = path.file_stem().unwrap().to_str().unwrap()[1..].parse().unwrap();
            write_file(path, &tool, file, 1_000_000);
        }
        std::fs::write(&marker, "").unwrap();
    }
    files
}

/// The CPU time (user and system) of every child waited for so far: what
/// a run costs on one core, whatever else the machine is doing.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// A run's wall time and CPU time.
#[derive(Clone, Copy)]
struct Took {
    wall: Duration,
    cpu: Duration,
}

fn timed(run: impl FnOnce()) -> Took {
    let (cpu, start) = (children_cpu(), Instant::now());
    run();
    Took { wall: start.elapsed(), cpu: children_cpu() - cpu }
}

fn import_all(data: &Path, sources: &Path) {
    let _ = std::fs::remove_dir_all(data);
    std::fs::create_dir_all(data).unwrap();
    let exe = env!("CARGO_BIN_EXE_glrs-sessions");
    for tool in ["claude", "codex", "pi"] {
        let status = Command::new(exe)
            .args(["import", "--from", tool])
            .arg(sources.join(tool))
            .env("XDG_DATA_HOME", data)
            .env("XDG_CONFIG_HOME", data.join("config"))
            .env("HOME", data)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "import --from {tool} failed");
    }
}

fn jq_all(files: &[PathBuf]) {
    let status = Command::new("jq").arg("-c").arg(".").args(files).stdout(Stdio::null()).status().unwrap();
    assert!(status.success(), "jq failed");
}

/// The medians of some runs' wall and CPU times.
fn medians(runs: Vec<Took>) -> Took {
    Took { wall: median(runs.iter().map(|t| t.wall).collect()), cpu: median(runs.iter().map(|t| t.cpu).collect()) }
}

fn main() {
    if common::listing() {
        return;
    }
    if Command::new("jq").arg("--version").stdout(Stdio::null()).status().is_err() {
        eprintln!("import bench: jq is not installed; nothing to compare with");
        std::process::exit(1);
    }
    let mb = setting("GLRS_BENCH_MB", 100) as usize;
    let runs = common::runs(5);
    let root = std::env::var_os("GLRS_BENCH_DIR").map_or_else(|| PathBuf::from("target/glrs-bench"), PathBuf::from);
    // The store's folders must be absolute (XDG says so; glrs refuses others).
    let root = std::path::absolute(root).unwrap();
    let sources = root.join("import-sources");
    let files = generate(&sources, mb);
    let bytes: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    let data = root.join("import-store");
    // One run of each first, not counted: it warms the page cache. Then
    // the two alternate, so a burst of load elsewhere hits both alike.
    import_all(&data, &sources);
    jq_all(&files);
    let (mut import, mut jq) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        import.push(timed(|| import_all(&data, &sources)));
        jq.push(timed(|| jq_all(&files)));
    }
    let (import, jq) = (medians(import), medians(jq));
    let rate = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!("sources: {} files, {:.1} MB (claude, codex, pi); medians of {runs}", files.len(), bytes as f64 / 1e6);
    for (name, t) in [("glrs-sessions import", import), ("jq -c .", jq)] {
        println!(
            "{name:<21} wall {:>6.0} ms ({:>5.1} MB/s)   cpu {:>6.0} ms ({:>5.1} MB/s of one core)",
            ms(t.wall),
            rate(t.wall),
            ms(t.cpu),
            rate(t.cpu)
        );
    }
    println!("import / jq: wall {:.2}×, cpu {:.2}×", ms(import.wall) / ms(jq.wall), ms(import.cpu) / ms(jq.cpu));
    let _ = std::fs::remove_dir_all(&data);
}
