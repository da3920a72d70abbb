//! Benchmark: `glrs-sessions ls` over a large store (issue: 10,000 sessions
//! averaging 200 KB, a few of 50 MB), warm and cold, against a baseline
//! measured in the same run: `find` stat-ing the same files. Then the same
//! number of sessions 10 times larger, to show the warm cost does not grow
//! with the sessions' size.
//!
//! Run: `cargo bench --bench ls`. Settings (environment):
//! - `GLRS_BENCH_SESSIONS` (10000), `GLRS_BENCH_AVG_KB` (200),
//!   `GLRS_BENCH_BIG` (3 files), `GLRS_BENCH_BIG_MB` (50), `GLRS_BENCH_RUNS` (21);
//! - `GLRS_BENCH_DIR` (target/glrs-bench), `GLRS_BENCH_KEEP=1` to keep the
//!   generated stores (about 23 GB with the defaults) for the next run.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{median, ms, setting};

/// Deterministic sizes: uniform around the average, a few big ones.
fn sizes(count: u64, avg: u64, big: u64, big_size: u64) -> Vec<u64> {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..count)
        .map(|i| {
            if i < big {
                return big_size;
            }
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            avg / 10 + seed % (avg * 9 / 5)
        })
        .collect()
}

/// Write one session file of about `size` bytes, as glrs writes them.
fn write_session(dir: &Path, n: u64, size: u64, block: &[u8]) -> std::io::Result<()> {
    let id = format!("{:08x}", n.wrapping_mul(2_654_435_761) & 0xffff_ffff);
    let updated = 1_700_000_000_000u64 + n * 1000;
    let ts = jiff::Timestamp::from_millisecond(updated as i64).map_err(std::io::Error::other)?;
    let stamp = glrs::time::format_ts(ts);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(format!("{id}.json")))?);
    writeln!(
        out,
        "{{\"schema\":2,\"id\":\"{id}\",\"createdAt\":\"{stamp}\",\"updatedAt\":\"{stamp}\",\"cwd\":\"/home/ada/src/app{}\",\"title\":\"session number {n}\",\"events\":[",
        n % 50
    )?;
    let mut written = 200u64;
    let mut first = true;
    while written < size {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        out.write_all(block)?;
        written += block.len() as u64 + 2;
    }
    write!(out, "\n],\"contextTokens\":{}}}\n", size / 4)?;
    out.flush()
}

fn generate(dir: &Path, count: u64, avg: u64, big: u64, big_size: u64) -> std::io::Result<()> {
    let marker = dir.join(format!(".generated-{count}-{avg}-{big}-{big_size}"));
    if marker.exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(dir);
    let sessions = dir.join("glrs/sessions");
    std::fs::create_dir_all(&sessions)?;
    let text = "Reading src/auth/redirect.ts: export const redirect = (url) => url.split('?')[0]; ".repeat(12);
    let block = format!(
        "{{\"type\":\"user\",\"at\":\"2026-11-29T15:24:19.412Z\",\"text\":\"{text}\"}},\n{{\"type\":\"assistant\",\"at\":\"2026-11-29T15:24:20.412Z\",\"text\":\"{text}\",\"model\":\"openai/gpt-4.1\",\"toolCalls\":[],\"stopReason\":\"stop\"}}"
    );
    let start = Instant::now();
    for (n, size) in sizes(count, avg, big, big_size).into_iter().enumerate() {
        write_session(&sessions, n as u64, size, block.as_bytes())?;
    }
    std::fs::write(&marker, "")?;
    eprintln!("  generated {} in {:.1}s", dir.display(), start.elapsed().as_secs_f64());
    Ok(())
}

fn run_once(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::inherit()).status().expect("run");
    let took = start.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    took
}

fn median_run(cmd: &mut Command, runs: u64) -> Duration {
    median((0..runs).map(|_| run_once(cmd)).collect())
}

fn ls_cmd(data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_glrs-sessions"));
    cmd.arg("ls").env("XDG_DATA_HOME", data).env("HOME", data);
    cmd
}

fn stat_cmd(data: &Path) -> Command {
    let mut cmd = Command::new("find");
    cmd.arg(data.join("glrs/sessions")).args(["-maxdepth", "1", "-name", "*.json", "-printf", "%s %T@ %i\n"]);
    cmd
}

struct Measured {
    cold: Duration,
    warm: Duration,
    baseline: Duration,
    bytes: u64,
}

fn measure(data: &Path, runs: u64) -> Measured {
    let _ = std::fs::remove_file(data.join("glrs/sessions").join(glrs::store::listing::INDEX_FILE));
    let cold = run_once(&mut ls_cmd(data));
    let warm = median_run(&mut ls_cmd(data), runs);
    let baseline = median_run(&mut stat_cmd(data), runs);
    let bytes = std::fs::read_dir(data.join("glrs/sessions"))
        .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0);
    Measured { cold, warm, baseline, bytes }
}

fn main() -> std::io::Result<()> {
    if common::listing() {
        return Ok(());
    }
    let count = setting("GLRS_BENCH_SESSIONS", 10_000);
    let avg = setting("GLRS_BENCH_AVG_KB", 200) * 1024;
    let big = setting("GLRS_BENCH_BIG", 3);
    let big_size = setting("GLRS_BENCH_BIG_MB", 50) << 20;
    let runs = setting("GLRS_BENCH_RUNS", 21);
    let root = std::env::var_os("GLRS_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/glrs-bench"));

    let small = root.join("x1");
    let large = root.join("x10");
    eprintln!("glrs-sessions ls: {count} sessions, average {} KB, {big} of {} MB", avg / 1024, big_size >> 20);
    generate(&small, count, avg, big, big_size)?;
    let a = measure(&small, runs);
    eprintln!("the same {count} sessions 10 times larger");
    generate(&large, count, avg * 10, big, big_size * 10)?;
    let b = measure(&large, runs);

    println!("store\tsessions\tGB\tcold ms\twarm ms\tstat ms\twarm/stat");
    for (name, m) in [("x1", &a), ("x10", &b)] {
        println!(
            "{name}\t{count}\t{:.2}\t{:.0}\t{:.1}\t{:.1}\t{:.2}",
            m.bytes as f64 / 1e9,
            ms(m.cold),
            ms(m.warm),
            ms(m.baseline),
            ms(m.warm) / ms(m.baseline)
        );
    }
    println!("warm x10 / warm x1: {:.2} (target at most 1.5)", ms(b.warm) / ms(a.warm));
    println!("warm x1: {:.1} ms (target under 150 ms)", ms(a.warm));
    if std::env::var_os("GLRS_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}
