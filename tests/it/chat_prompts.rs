//! The REPL's prompts, through a pseudo-terminal: the resume picker (a
//! wrong number said as such, Ctrl-C exits 130, forks marked), `/model`
//! listing and completing the configured models, and `/compact` saying why
//! there is nothing to compact.

use rexpect::process::WaitStatus;
use serde_json::json;

use crate::support::mock::MockServer;
use crate::support::pty::{chat, prompt};
use crate::support::*;

const U1: &str = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"same title"}"#;

#[test]
fn the_picker_says_no_entry_marks_forks_and_ctrl_c_exits_130() {
    let (ts, _server) = store_and_server();
    ts.write_fixed("aaaa0001", "2026-11-02T10:00:00.000Z", "/w", &[U1]);
    let fork = r#"{"schema":2,"id":"bbbb0002","createdAt":"2026-11-03T10:00:00.000Z","updatedAt":"2026-11-03T10:00:00.000Z","cwd":"/w","parent":{"id":"aaaa0001","entry":1},"events":[
{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"same title"}
],"contextTokens":10}"#;
    ts.write_raw(&ts.sessions_dir(), "bbbb0002", fork);

    let mut p = chat(&ts, &["--resume"], &[], false);
    p.exp_regex(r"1  bbbb0002  \S+  same title  \(fork of aaaa0001\)").expect("the fork, marked");
    p.exp_regex(r"2  aaaa0001  \S+  same title\r").expect("the original, unmarked");
    p.exp_string("open which").unwrap();
    p.send_line("99").unwrap();
    p.exp_string("no entry 99: pick 1-2, or give an id").unwrap();
    p.exp_string("open which").unwrap();
    p.send("\x03").unwrap();
    p.flush().unwrap();
    p.exp_eof().expect("the chat to end");
    let status = p.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 130)), "Ctrl-C at the picker: {status:?}");
}

#[test]
fn model_list_and_completion_and_nothing_to_compact() {
    let ts = TestStore::new();
    let server = MockServer::start();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "tools": {"enabled": false},
        "providers": {
            "openai": {"baseUrl": format!("{}/v1", server.url()), "models": {"gpt-4.1-mini": {}}},
            "local": {"type": "openai", "baseUrl": format!("{}/v1", server.url()), "models": {"qwen-7b": {}}},
        },
    }));
    let mut p = chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    prompt(&mut p);
    p.send_line("/model").unwrap();
    p.exp_string("configured models").unwrap();
    p.exp_string("local/qwen-7b").unwrap();
    p.exp_string("* openai/gpt-4.1").unwrap();
    p.exp_string("openai/gpt-4.1-mini").unwrap();
    prompt(&mut p);
    // Tab completes a configured model.
    p.send("/model loc\t").unwrap();
    p.flush().unwrap();
    p.exp_string("al/qwen-7b").unwrap();
    p.send("\x03").unwrap();
    p.flush().unwrap();
    prompt(&mut p);

    p.send_line("/compact").unwrap();
    p.exp_string("nothing to compact: the context is").unwrap();
    p.exp_string("keepRecentTokens").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
}
