//! Benchmark: preparing a compaction of a session of about 1,000,000
//! estimated tokens (load, cut, the summary request serialised, the exact
//! references, the artifact text), model time excluded, against reading the
//! file once, in one run. Target: under 300 ms.
//!
//! Run: `cargo bench --bench compact` (`GLRS_BENCH_RUNS`, default 11).

// A benchmark is not product code: a failed step should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use common::{median, ms};
use glrs::compact::{artifact, brief, plan};
use glrs::provider::{Message, Request, openai};
use glrs::store::{Append, Entry, ToolCall};
use glrs::{Paths, Store};
use serde_json::json;

fn main() {
    if common::listing() {
        return;
    }
    let runs = common::runs(11);
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = Paths::from_vars(Some(dir.path().into()), None, None, Some(dir.path().into())).expect("paths");
    let store = Store::new(paths);
    let id = store.create("/home/ada/src/app").expect("create");
    // 575 turns of about 1,750 tokens: a question, a tool call, a 6 KB result, an answer.
    let mut change = Append::new();
    for n in 0..575 {
        let at = glrs::time::now();
        let call = format!("call_{n}");
        let entries = [
            Entry::User {
                at: at.clone(),
                text: format!(
                    "step {n}: fix src/module{n}/lib.rs and run `cargo test -p m{n}` {}",
                    "please ".repeat(40)
                ),
                steer: false,
                internal: None,
            },
            Entry::Assistant {
                at: at.clone(),
                text: "Reading it.".into(),
                model: "openai/gpt-4.1".into(),
                tool_calls: vec![ToolCall {
                    id: call.clone(),
                    name: "read".into(),
                    input: json!({"path": format!("src/module{n}/lib.rs")}),
                }],
                stop_reason: "tool_calls".into(),
            },
            Entry::Tool {
                at: at.clone(),
                id: call,
                name: "read".into(),
                input: json!({}),
                result: "fn main() { println!(\"hello\"); }\n".repeat(190),
                is_error: false,
            },
            Entry::Assistant {
                at,
                text: format!("Fixed `module{n}::parse`; tests pass. {}", "Details follow. ".repeat(20)).into(),
                model: "openai/gpt-4.1".into(),
                tool_calls: vec![],
                stop_reason: "stop".into(),
            },
        ];
        for e in &entries {
            change = change.entry(e).expect("entry");
        }
    }
    store.append(&id, change).expect("append");
    let path = store.session_path(&id);
    let bytes = std::fs::metadata(&path).expect("stat").len();
    let at = store.resolve(id.as_str()).expect("resolve");

    let mut read_once = Vec::new();
    let mut prepare = Vec::new();
    let mut tokens = 0;
    for _ in 0..runs + 2 {
        let start = Instant::now();
        let data = std::fs::read(&path).expect("read");
        read_once.push(start.elapsed());
        drop(data);

        let start = Instant::now();
        let file = store.read(&at).expect("load").file;
        tokens = glrs::context::estimate(&glrs::context::replay(&file.events));
        let plan = plan::plan(&file.events, 20_000).expect("something to compact");
        let texts = brief::request_texts(256_000, &plan.blocks, plan.previous_brief.as_deref(), Some("the parser"));
        let mut serialised = 0;
        for text in texts {
            let messages = [Message::User { content: text }];
            let body = openai::request_body(&Request {
                model: "gpt-4.1",
                system: Some(brief::SYSTEM_PROMPT),
                messages: &messages,
                tools: &[],
                thinking: Default::default(),
            });
            serialised += serde_json::to_vec(&body).expect("json").len();
        }
        let references = glrs::compact::references::References::of(&plan.blocks);
        let info = artifact::ArtifactInfo {
            file: Default::default(),
            session: id.to_string(),
            created_at: glrs::time::now(),
            label: "bench".into(),
            messages: plan.message_count() as u64,
            note: String::new(),
            entries: format!("1-{}", plan.cut),
        };
        let text = artifact::render(&info, &plan.blocks);
        prepare.push(start.elapsed());
        assert!(serialised > 0 && !references.is_empty() && !text.is_empty());
    }
    let (r, p) = (median(read_once[2..].to_vec()), median(prepare[2..].to_vec()));
    println!("session\t{:.1} MB\t{} estimated tokens", bytes as f64 / 1e6, tokens);
    println!("read the file once\t{:.1} ms", ms(r));
    println!("prepare a compaction\t{:.1} ms\t{:.1}x reading (target under 300 ms)", ms(p), ms(p) / ms(r));
}
