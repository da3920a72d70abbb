//! Benchmark: the store at 100 MB (issues 11 and 24). A generated session
//! of about 100 MB and one of about 1 MB (the same conversation, shorter),
//! side by side in one run, each ending with a compaction boundary so the
//! request a turn sends is small:
//!
//! 1. one resumed one-shot turn (`glrs-chat --resume ID -p`) against the
//!    tests' mock server: the 100 MB turn against the 1 MB one;
//! 2. one append of a 1 KB entry, fsynced (`Store::append`), against
//!    appending 1 KB to a plain file with `O_APPEND` plus fsync;
//! 3. `glrs-sessions show --tail 5` and `status`, against `cat` of the file,
//!    as every run after the first finds them (the scan kept beside the
//!    file) and cold (the kept scan deleted before each run);
//! 4. `glrs-sessions ls` of 10,000 sessions, warm, against `find -printf`
//!    over the same files.
//!
//! Medians; ratios against baselines measured in the same run.
//! Run: `cargo bench --bench store` (`GLRS_BENCH_RUNS`, default 15).

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mock::{MockServer, Reply};
use common::{median_of, ms, sse};
use glrs::store::{Append, Entry, SessionFile};
use glrs::{Paths, SessionId, Store};
use serde_json::json;

/// Run a command, its output read to the end through a pipe.
fn run(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("run");
    let took = start.elapsed();
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    took
}

/// A session of about `size` bytes in the store's layout: turns with tool
/// results of about 1 KB, then a compaction boundary and one short turn.
fn generate(store: &Store, id: &SessionId, size: usize) {
    let at = "2026-11-29T15:24:19.412Z".to_string();
    let mut file = SessionFile::new(id.as_str(), "/home/ada/src/app", &at);
    file.set("model", json!("openai/gpt-4.1"));
    file.set("title", json!("a long agent session"));
    let result = "fn main() { println!(\"hello\"); } // src/main.rs line\n".repeat(20);
    let mut bytes = 0;
    let mut turn = 0;
    while bytes < size {
        let entries = [
            Entry::User { at: at.clone(), text: format!("step {turn}: read the file"), steer: false, internal: None },
            Entry::Tool {
                at: at.clone(),
                id: format!("call_{turn}"),
                name: "read".into(),
                input: json!({"path": "src/main.rs"}),
                result: result.clone(),
                is_error: false,
            },
            Entry::Usage {
                at: at.clone(),
                model: "openai/gpt-4.1".into(),
                input_tokens: 1000,
                output_tokens: 100,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                cost_usd: Some(0.001),
            },
        ];
        for e in entries {
            let raw = e.to_raw().unwrap();
            bytes += raw.get().len() + 2;
            file.events.push(raw);
        }
        turn += 1;
    }
    let first_kept = file.events.len() as u64 + 2;
    let tail = [
        Entry::Compacted {
            at: at.clone(),
            brief: "read src/main.rs many times\n\nGoal: keep reading".into(),
            first_kept,
            tokens_before: (bytes / 4) as u64,
            tokens_after: 200,
            model: "openai/gpt-4.1".into(),
            artifact: "2026-11-29T15-24-19-412Z.md".into(),
            instruction: None,
        },
        Entry::User { at: at.clone(), text: "and now?".into(), steer: false, internal: None },
        Entry::Assistant {
            at: at.clone(),
            text: "Done.".into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        },
    ];
    for e in tail {
        file.events.push(e.to_raw().unwrap());
    }
    file.set("contextTokens", json!(200));
    assert!(store.create_file(id, &file).unwrap(), "a fresh id");
}

struct Case {
    label: &'static str,
    id: SessionId,
    bytes: u64,
}

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(15);
    let home = tempfile::tempdir_in(Path::new(env!("CARGO_MANIFEST_DIR")).join("target")).expect("tempdir");
    let data = home.path().join("data");
    let paths = Paths::from_vars(Some(data.clone()), None, None, Some(home.path().to_path_buf())).unwrap();
    let store = Store::new(paths);
    let server = MockServer::start();
    common::write_config(
        home.path(),
        &json!({"providers": {"openai": {"baseUrl": format!("{}/v1", server.url())}}, "memoryFlush": {"enabled": false}}),
    );

    let mut cases = Vec::new();
    for (label, size) in [("100 MB", 100usize << 20), ("1 MB", 1 << 20)] {
        let id = store.fresh_id().unwrap();
        let start = Instant::now();
        generate(&store, &id, size);
        let bytes = std::fs::metadata(store.session_path(&id)).unwrap().len();
        eprintln!("generated {label} ({bytes} bytes) in {:.1} s", start.elapsed().as_secs_f64());
        cases.push(Case { label, id, bytes });
    }
    let program = |name: &str| {
        let exe = match name {
            "chat" => env!("CARGO_BIN_EXE_glrs-chat"),
            _ => env!("CARGO_BIN_EXE_glrs-sessions"),
        };
        // Its data folder is `data`, the store's.
        common::glrs_cmd(exe, home.path())
    };

    println!("measure (median of {runs})\t100 MB\t1 MB\tbaseline\tresult");
    // 1. A resumed one-shot turn.
    let mut turn = Vec::new();
    for case in &cases {
        turn.push(median_of(runs, || {
            server.push(Reply::sse(sse::openai_text(&["Noted."], 200, 2, 0)));
            run(program("chat").args(["--resume", case.id.as_str(), "-p", "continue"]))
        }));
    }
    println!(
        "resumed one-shot turn (mock server)\t{:.1} ms\t{:.1} ms\t1 MB turn\t{:.2}x (target within 1.2x)",
        ms(turn[0]),
        ms(turn[1]),
        ms(turn[0]) / ms(turn[1])
    );

    // 2. One 1 KB append with its fsync.
    let note = "x".repeat(1000);
    let mut append = Vec::new();
    for case in &cases {
        append.push(median_of(runs * 4, || {
            let change = Append::new().entry(&Entry::Notice { at: glrs::time::now(), text: note.clone() }).unwrap();
            let start = Instant::now();
            store.append(&case.id, change).unwrap();
            start.elapsed()
        }));
    }
    let plain = home.path().join("plain.log");
    let line = vec![b'x'; 1024];
    let baseline = median_of(runs * 4, || {
        let start = Instant::now();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&plain).unwrap();
        f.write_all(&line).unwrap();
        f.sync_all().unwrap();
        start.elapsed()
    });
    println!(
        "append 1 KB, fsynced\t{:.2} ms\t{:.2} ms\t{:.2} ms (O_APPEND + fsync)\t{:.2}x (target within 2x)",
        ms(append[0]),
        ms(append[1]),
        ms(baseline),
        ms(append[0]) / ms(baseline)
    );

    // 3. show --tail 5 and status, against cat of the same file: warm (the
    // scan kept beside the file) and cold (deleted before each run).
    let targets = [("show --tail 5", &["show", "--tail", "5"][..], 0.2), ("status", &["status"][..], 2.0)];
    for (what, args, target) in targets {
        for cold in [false, true] {
            let mut times = Vec::new();
            for case in &cases {
                let kept = store.session_path(&case.id).with_extension("scan");
                times.push(median_of(runs, || {
                    if cold {
                        let _ = std::fs::remove_file(&kept);
                    }
                    run(program("sessions").args(args).arg(case.id.as_str()))
                }));
            }
            let path = store.session_path(&cases[0].id);
            let cat = median_of(runs, || run(Command::new("cat").arg(&path)));
            let (label, goal) =
                if cold { ("cold", String::new()) } else { ("", format!(" (target within {target}x)")) };
            println!(
                "{what} {label}\t{:.1} ms\t{:.1} ms\t{:.1} ms (cat of the 100 MB file)\t{:.2}x{goal}",
                ms(times[0]),
                ms(times[1]),
                ms(cat),
                ms(times[0]) / ms(cat)
            );
        }
    }
    for case in &cases {
        eprintln!("{}: {} bytes after the runs", case.label, case.bytes);
    }

    // 4. ls of 10,000 sessions, warm, against find -printf.
    let many = home.path().join("many");
    let many_paths = Paths::from_vars(Some(many.clone()), None, None, Some(home.path().to_path_buf())).unwrap();
    let many_store = Store::new(many_paths);
    let mut small = SessionFile::new("00000000", "/home/ada/src/app", "2026-11-29T15:24:19.412Z");
    small.set("title", json!("a short session"));
    for i in 0..6 {
        let e = Entry::User {
            at: "2026-11-29T15:24:19.412Z".into(),
            text: format!("message {i} {}", "y".repeat(300)),
            steer: false,
            internal: None,
        };
        small.events.push(e.to_raw().unwrap());
    }
    std::fs::create_dir_all(&many_store.paths.sessions).unwrap();
    for n in 0..10_000u32 {
        // Written plainly (no fsync each): only the listing is measured.
        let id = format!("{:08x}", n.wrapping_mul(2_654_435_761));
        small.set("id", json!(id));
        std::fs::write(many_store.paths.sessions.join(format!("{id}.json")), small.to_bytes()).unwrap();
    }
    let ls = |cmd: &mut Command| {
        cmd.env("XDG_DATA_HOME", &many);
        run(cmd)
    };
    ls(program("sessions").arg("ls")); // builds the index
    let warm = median_of(runs, || ls(program("sessions").arg("ls")));
    let sessions_dir = many.join("glrs/sessions");
    let find = median_of(runs, || {
        run(Command::new("find").arg(&sessions_dir).args([
            "-maxdepth",
            "1",
            "-name",
            "*.json",
            "-printf",
            "%s %T@ %i\n",
        ]))
    });
    println!(
        "ls of 10,000 sessions, warm\t-\t-\t{:.1} ms (find -printf)\t{:.1} ms = {:.2}x (target within 2x)",
        ms(find),
        ms(warm),
        ms(warm) / ms(find)
    );
}
