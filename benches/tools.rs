//! Benchmark: the agent's tools against the programs they stand in for, in
//! one run: the `grep` tool over a generated tree of 10,000 files against
//! `rg` itself (the same pattern, `.gitignore` honoured by both), and
//! `read` of a 10 MB file against `cat`; then the overhead of one call
//! through the registry (parse, permission check, run) on a small file.
//! Targets: `grep` within 2× of `rg`; under 5 ms a call.
//!
//! Run: `cargo bench --bench tools` (`GLRS_BENCH_RUNS`, default 11). `rg`
//! is needed for the comparison only (`apt-get install ripgrep`); without
//! it the tool's own figures are still printed.

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::time;
use glrs::permissions::{Answer, Asked, Asker, Question};
use glrs::provider::Cancel;
use glrs::store::ToolCall;
use glrs::tools::search::{GrepQuery, grep};
use glrs::tools::{Permissions, Registry, Situation, ToolContext};
use serde_json::json;

/// A figure as this benchmark prints it: `1.23 ms`.
fn ms(d: Duration) -> String {
    format!("{:.2} ms", common::ms(d))
}

/// A tree of `dirs` × `files` source-like files (about 3 KB each), a rare
/// marker in 1 file of 200, and an ignored folder that must not be searched.
fn generate(root: &Path, dirs: usize, files: usize) {
    let body: String = (0..60).map(|i| format!("    let value_{i} = compute(input, {i}); // step {i}\n")).collect();
    for d in 0..dirs {
        let dir = root.join(format!("src/module_{d:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..files {
            let n = d * files + f;
            let marker = if n % 200 == 7 { format!("fn needle_{n}() {{}}\n") } else { String::new() };
            let text = format!("// file {n}\nfn run_{n}(input: u64) -> u64 {{\n{body}{marker}    0\n}}\n");
            std::fs::write(dir.join(format!("file_{f:03}.rs")), text).expect("write");
        }
    }
    let ignored = root.join("target");
    std::fs::create_dir_all(&ignored).expect("mkdir");
    std::fs::write(ignored.join("big.rs"), "fn needle_ignored() {}\n".repeat(10_000)).expect("write");
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
}

struct Never;
impl Asker for Never {
    fn ask(&mut self, _: &Question<'_>) -> Asked {
        Asked::Now(Answer::Cannot)
    }
}

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(11);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("tree");
    generate(&root, 100, 100);
    let have_rg = Command::new("rg").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success());

    println!("grep over 10,000 files (about 27 MB), medians of {runs}:");
    let stop = AtomicBool::new(false);
    for (label, pattern) in [("rare literal", r"fn needle_\d+"), ("no match", "zebra_crossing")] {
        let query = GrepQuery { pattern, path: None, glob: None, ignore_case: false, context: 0, limit: 100 };
        let out = grep(&root, &query, &Default::default(), &stop);
        assert!(!out.is_error, "{}", out.content);
        let tool = time(runs, || {
            let _ = grep(&root, &query, &Default::default(), &stop);
        });
        let line = format!("  {label:<13} grep tool {:>10}", ms(tool));
        if have_rg {
            let rg = time(runs, || {
                let out = Command::new("rg").args(["-n", pattern]).current_dir(&root).output().expect("rg");
                assert!(out.status.code().is_some_and(|c| c <= 1), "rg failed");
            });
            println!("{line}   rg {:>10}   ratio {:.2}", ms(rg), tool.as_secs_f64() / rg.as_secs_f64());
        } else {
            println!("{line}   (rg not installed: no comparison)");
        }
    }

    // read of a 10 MB file against cat.
    let big = dir.path().join("big.log");
    let line = "2026-11-30T08:00:00.000Z INFO request handled in 12 ms path=/api/v1/items status=200\n";
    let text = line.repeat(10 * 1024 * 1024 / line.len());
    std::fs::write(&big, &text).expect("write");
    let lines = text.lines().count();
    println!("read of a 10 MB file ({lines} lines), medians of {runs}:");
    let first = time(runs, || {
        let out = glrs::tools::fs::read_file(dir.path(), "big.log", 1, None, &Default::default());
        assert!(!out.is_error);
    });
    let middle = time(runs, || {
        let out = glrs::tools::fs::read_file(dir.path(), "big.log", lines / 2, None, &Default::default());
        assert!(!out.is_error);
    });
    let cat = time(runs, || {
        let out = Command::new("cat").arg(&big).output().expect("cat");
        assert_eq!(out.stdout.len(), text.len());
    });
    println!("  read (first page)      {:>10}", ms(first));
    println!("  read (offset = middle) {:>10}", ms(middle));
    println!("  cat (whole file)       {:>10}", ms(cat));

    // One call through the registry: input parsing, the permission check,
    // the run, the result.
    let work = dir.path().join("small");
    std::fs::create_dir_all(work.join("src")).expect("mkdir");
    let small = work.join("small.rs");
    std::fs::write(&small, "fn main() {}\n".repeat(50)).expect("write");
    for i in 0..20 {
        std::fs::write(work.join(format!("src/m{i}.rs")), "fn f() {}\n").expect("write");
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut registry = Registry::with_builtins(Default::default(), Permissions::default());
    let cancel = Cancel::default();
    let out_dir = dir.path().join("out");
    let redactor = glrs::redact::Redactor::default();
    let ctx = ToolContext {
        cwd: &work,
        cancel: &cancel,
        session_id: "bench",
        session_file: &small,
        output_dir: &out_dir,
        judged: Default::default(),
        redactor: &redactor,
        sandbox: glrs::sandbox::Sandbox::off(),
        model: "",
        entries: 0,
    };
    let situation = Situation::default();
    println!("one call through the registry, medians of {} calls:", runs * 20);
    for (name, input) in
        [("read", json!({"path": "small.rs"})), ("ls", json!({})), ("find", json!({"pattern": "*.rs"}))]
    {
        let call = ToolCall { id: "c".into(), name: name.into(), input };
        let per_call = time(runs * 20, || {
            let out = runtime.block_on(registry.call(&call, &ctx, &mut Never, &situation));
            assert!(!out.is_error, "{}", out.content);
        });
        println!("  {name:<5} {:>10}", ms(per_call));
    }
}
