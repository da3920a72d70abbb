//! Loops and surprises of issue 12 item 7, and the compaction's number in
//! the chat's line (item 6): "nothing to compact" is remembered until the
//! context changes, an overflow compaction could not fix runs no memory
//! flush, and the prompt's fill is of the window compaction plans against.

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use rexpect::session::PtySession;

/// Send a line, wait for `reply`, and read up to the next prompt; returns
/// what was shown after the reply began.
fn exchange(p: &mut PtySession, line: &str, reply: &str) -> String {
    p.send_line(line).unwrap();
    p.exp_string(reply).expect("the reply");
    let (shown, _) = p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 \d+% > ").expect("the prompt after the turn");
    shown
}

#[test]
fn nothing_to_compact_is_remembered_until_the_context_grows() {
    let ts = TestStore::new();
    let server = MockServer::start();
    small_window(&ts, &server, false);
    // One huge first message: the only place to cut is before it, so the
    // cut finds nothing however far over the trigger the context is.
    server.push(text_reply("noted", 3_600));
    server.push(text_reply("fine", 3_610));
    server.push(text_reply("still fine", 3_620));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    crate::support::pty::prompt(&mut p);
    let first = exchange(&mut p, &format!("read this {}", "lorem ipsum ".repeat(1_200)), "noted");
    assert!(first.contains("(nothing to compact"), "{first}");
    let later = exchange(&mut p, "and?", "fine") + &exchange(&mut p, "and then?", "still fine");
    assert!(!later.contains("nothing to compact") && !later.contains("(compacting"), "glrs-compact ran again: {later}");
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    assert_eq!(server.model_requests().len(), 3, "no request but the three turns");
}

#[test]
fn an_overflow_compaction_could_not_fix_runs_no_memory_flush() {
    let ts = TestStore::new();
    let server = MockServer::start();
    small_window(&ts, &server, true);
    server.push(text_reply("one", 500));
    let out = ts.chat().args(["-m", "openai/gpt-4.1", "-p", "first"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let overflow = r#"{"error":{"message":"prompt is too long","code":"context_length_exceeded"}}"#;
    server.push(Reply::json(400, overflow));
    server.push(text_reply("worked on the parser\n## Goal\nparse", 10));
    server.push(Reply::json(400, overflow));
    // About 2,500 tokens: over the flush line even after compacting.
    let out = ts.chat().args(["--continue", "-p", &format!("big {}", "lorem ipsum ".repeat(830))]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("(compaction #1: "), "the compaction line names its number: {err}");
    assert!(err.contains("still too large after compacting"), "{err}");
    assert_eq!(server.model_requests().len(), 4, "first, overflow, brief, overflow: no flush re-sends it");
}

#[test]
fn the_prompt_fill_is_of_the_window_compaction_plans_against() {
    let (ts, server) = store_and_server();
    // gpt-4.1's window is 1,047,576 tokens; compaction plans against
    // compactWindow (256,000): 25,600 tokens is 10%, not 2%.
    server.push(Reply::sse(openai_text(&["ok"], 25_595, 5, 0)));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    crate::support::pty::prompt(&mut p);
    p.send_line("hello").unwrap();
    p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 10% > ").expect("10% of the compaction window");
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn an_overflow_with_nothing_to_compact_says_what_to_do_and_names_the_assumed_window() {
    // Issue 24.7: a first turn too large for a model glrs does not know.
    let (ts, server) = store_and_server();
    let overflow = r#"{"error":{"message":"prompt is too long","code":"context_length_exceeded"}}"#;
    server.push(Reply::json(400, overflow));
    let out = ts.chat().args(["-m", "ollama/mystery", "-p", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("context overflow: HTTP 400"), "{err}");
    assert!(err.contains("nothing could be compacted: start the context afresh with /clear"), "{err}");
    assert!(err.contains("a model with a larger window"), "{err}");
    assert!(err.contains("assumed a window of 256,000 tokens"), "{err}");
    assert!(err.contains("providers.ollama.models.mystery.metadata.context"), "{err}");
}
