//! What the benchmarks share: the tests' mock model server and SSE
//! builders (`tests/support/`, so a benchmark's model answers as the tests'
//! does), the settings they read, the environment they run glrs in, and the
//! figures they print (medians, milliseconds). Each benchmark includes it
//! with `mod common;` and uses part of it.
#![allow(dead_code)]

#[path = "../../tests/support/mock.rs"]
pub mod mock;
#[path = "../../tests/support/sse.rs"]
pub mod sse;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Whether cargo is only asking for the list of benchmarks (`cargo test
/// --benches` does): then there is nothing to run.
pub fn listing() -> bool {
    std::env::args().any(|a| a == "--list")
}

/// A whole-number setting from the environment, `default` when unset or
/// not a number.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// How many measured runs: `GLRS_BENCH_RUNS`, else `default`.
pub fn runs(default: usize) -> usize {
    setting("GLRS_BENCH_RUNS", default as u64) as usize
}

/// The median of some timings (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A duration in milliseconds, for printing and ratios.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of `runs` timings `f` returns, after one run not counted
/// (it warms the page cache).
pub fn median_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    f();
    median((0..runs).map(|_| f()).collect())
}

/// The median time of `runs` calls of `f`, after one not counted.
pub fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median_of(runs, || {
        let start = Instant::now();
        f();
        start.elapsed()
    })
}

/// Program `exe` of this package with only `home` for its environment:
/// data in `home/data`, config in `home/config`, and a bench OpenAI key.
pub fn glrs_cmd(exe: &str, home: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("OPENAI_API_KEY", "sk-bench");
    cmd
}

/// `glrs-chat -p hello` with gpt-4.1 in `home`'s environment.
pub fn chat_cmd(home: &Path) -> Command {
    let mut cmd = glrs_cmd(env!("CARGO_BIN_EXE_glrs-chat"), home);
    cmd.args(["-p", "hello", "-m", "openai/gpt-4.1"]);
    cmd
}

/// Write `home`'s glrs config (where `glrs_cmd` looks for it).
pub fn write_config(home: &Path, config: &serde_json::Value) {
    let dir = home.join("config/glrs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("config.json"), config.to_string()).expect("config");
}
