//! Compaction inside the chat (SPEC 6 "When", 7): at idle, at the line in
//! a multi-step turn, overflow recovery, the memory flush, NO_REPLY, and the
//! compaction tools. The chat runs glrs-compact as a child process; both talk
//! to the same mock server, whose replies are consumed in order.

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use rexpect::session::PtySession;
use serde_json::{Value, json};

fn setup(flush: bool) -> (TestStore, MockServer) {
    let ts = TestStore::new();
    let server = MockServer::start();
    small_window(&ts, &server, flush);
    (ts, server)
}

fn oneshot(ts: &TestStore, args: &[&str]) -> std::process::Output {
    ts.chat().args(args).output().unwrap()
}

fn content(r: &crate::support::mock::Captured, i: usize) -> String {
    r.body["messages"][i]["content"].as_str().unwrap_or("").to_string()
}

#[test]
fn an_overflow_compacts_and_retries_once_and_a_second_one_stops() {
    let (ts, server) = setup(false);
    server.push(text_reply("one", 500));
    assert!(oneshot(&ts, &["-m", "openai/gpt-4.1", "-p", &long("first")]).status.success());
    let overflow = r#"{"error":{"message":"This model's maximum context length is 4000 tokens.","code":"context_length_exceeded"}}"#;
    server.push(Reply::json(400, overflow));
    server.push(text_reply(BRIEF, 10));
    server.push(text_reply("recovered", 300));
    let out = oneshot(&ts, &["--continue", "-p", &long("second")]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "recovered\n");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4);
    assert!(content(&requests[3], 0).starts_with("<earlier-conversation>"), "the retry runs on the brief");

    // Again: one compaction, then the retry overflows too, and the turn stops.
    server.push(text_reply("two", 500));
    assert!(oneshot(&ts, &["--continue", "-p", &long("third")]).status.success());
    server.push(Reply::json(400, overflow));
    server.push(text_reply(BRIEF, 10));
    server.push(Reply::json(400, overflow));
    let out = oneshot(&ts, &["--continue", "-p", &long("fourth")]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains("still too large after compacting: try /compact with an instruction"), "{err}");
    assert_eq!(server.model_requests().len(), 8, "exactly one compact-and-retry");
    let (_, session) = ts.only_session();
    let kinds: Vec<String> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "error")
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["overflow"]);
}

#[test]
fn the_memory_flush_runs_once_a_cycle_silently_then_compaction_follows() {
    let (ts, server) = setup(true);
    let project = tempfile::tempdir().unwrap();
    server.push(text_reply("noted", 2500));
    // The flush: the model saves a note, then answers NO_REPLY.
    server.push(Reply::sse(openai_tool_call(
        "m1",
        "memory_append",
        &["{\"text\": \"- the parser lives in src/parse.rs\"}"],
    )));
    server.push(text_reply("NO_REPLY", 2600));
    let out =
        ts.chat().current_dir(project.path()).args(["-m", "openai/gpt-4.1", "-p", &long("first")]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "noted\n", "the flush shows nothing");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 3);
    let flush = &requests[1].body;
    assert_eq!(flush["messages"][0]["role"], "system");
    assert!(content(&requests[1], 0).contains("Use the memory_append tool"), "{}", content(&requests[1], 0));
    assert!(
        content(&requests[1], flush["messages"].as_array().unwrap().len() - 1)
            .starts_with("Pre-compaction memory flush")
    );
    assert_eq!(flush["tools"][0]["function"]["name"], "memory_append");
    assert!(requests[0].body.get("tools").is_none(), "memory_append only during the flush");
    let date = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
    let dir = glrs::compact::flush::memory_dir(&ts.data_home().join("glrs"), project.path());
    let memory = std::fs::read_to_string(dir.join(format!("{date}.md"))).unwrap();
    assert_eq!(memory, "- the parser lives in src/parse.rs\n");
    let (id, session) = ts.only_session();
    let custom = session["events"].as_array().unwrap().iter().find(|e| e["type"] == "custom").unwrap().clone();
    assert_eq!((custom["name"].clone(), custom["data"].clone()), (json!("memoryFlush"), json!({"compactionCount": 0})));
    let silent = session["events"].as_array().unwrap().iter().filter(|e| e["text"] == "NO_REPLY").count();
    assert_eq!(silent, 1, "a silent reply is still recorded");

    // Over the trigger now: no second flush this cycle; compaction follows.
    server.push(text_reply("big", 3500));
    server.push(text_reply(BRIEF, 10));
    let out = ts.chat().current_dir(project.path()).args(["--resume", &id, "-p", &long("second")]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let requests = server.model_requests();
    assert_eq!(requests.len(), 5);
    assert!(content(&requests[4], 1).contains("<conversation>"));
    assert_eq!(ts.store.keys().unwrap().len(), 0);
    let status = json_of(&ts.sessions().args(["status", &id, "--json"]).output().unwrap());
    assert_eq!(status["compactions"], 1);
    assert!(status["lastMemoryFlush"].is_string());
}

#[test]
fn glrs_compact_flushes_first_unless_told_not_to() {
    let (ts, server) = setup(true);
    let project = tempfile::tempdir().unwrap();
    let id = three_long_turns(&ts, &server, project.path());
    server.push(text_reply("NO_REPLY", 100));
    server.push(text_reply(BRIEF, 10));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(&id).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let requests = server.model_requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[3].body["tools"][0]["function"]["name"], "memory_append");
    assert!(content(&requests[4], 1).contains("<conversation>"));
    // Nothing is ever made in the project (issue 24.4, issue 33).
    assert!(!project.path().join("memory").exists(), "a memory/ in the project");
    // The next cycle, with --no-flush: straight to the compaction.
    for n in 3..6 {
        server.push(text_reply("ok", 100));
        let text = long(&format!("turn {n}"));
        assert!(
            ts.chat().current_dir(project.path()).args(["--continue", "-p", &text]).output().unwrap().status.success()
        );
    }
    server.push(text_reply(BRIEF, 10));
    ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).args([id.as_str(), "--no-flush"]).assert().success();
    let requests = server.model_requests();
    assert_eq!(requests.len(), 9);
    assert!(content(&requests[8], 1).contains("<previous-brief>"));
}

/// glrs-compact runs the flush on an agent of its own: what the flush
/// would tell a chat's user (here, a cwd it cannot write to) is a warning
/// naming the session, and the compaction goes on.
#[test]
fn glrs_compact_warns_when_the_flush_cannot_write_its_notes() {
    let (ts, server) = setup(true);
    let project = tempfile::tempdir().unwrap();
    let id = three_long_turns(&ts, &server, project.path());
    // A file where the memory folder would go: it cannot be made.
    std::fs::write(ts.data_home().join("glrs/memory"), "").unwrap();
    server.push(text_reply(BRIEF, 10));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(&id).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("glrs-compact: warning: {id}: memory flush skipped: ")), "{err}");
    assert!(err.contains("glrs/memory/") && err.contains(" is not writable"), "{err}");
    assert_eq!(server.model_requests().len(), 4, "three turns and the brief: no flush turn");
    let (_, session) = ts.only_session();
    let events = session["events"].as_array().unwrap();
    let flush = events.iter().find(|e| e["type"] == "custom" && e["name"] == "memoryFlush").unwrap();
    assert_eq!(flush["data"], json!({"compactionCount": 0, "skipped": "memory folder not writable"}));
    assert_eq!(events.last().unwrap()["type"], "compacted");
}

/// SPEC 7: the flush never stops the compaction it precedes. A flush that
/// overflows the window ends with its error recorded; it does not start an
/// overflow compaction of its own (a child glrs-compact that would wait for
/// the compaction this one holds, while this one waits for it).
#[test]
fn an_overflowing_flush_in_glrs_compact_is_reported_and_the_compaction_goes_on() {
    let (ts, server) = setup(true);
    let project = tempfile::tempdir().unwrap();
    let id = three_long_turns(&ts, &server, project.path());
    let overflow = r#"{"error":{"message":"This model's maximum context length is 4000 tokens.","code":"context_length_exceeded"}}"#;
    server.push(Reply::json(400, overflow));
    server.push(text_reply(BRIEF, 10));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-compact"));
    cmd.env("OPENAI_API_KEY", OPENAI_KEY).arg(&id);
    let out = run_bounded(&mut cmd, std::time::Duration::from_secs(30), "glrs-compact after an overflowing flush");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains(": compacted, "), "{}", stdout_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("memory flush failed") && err.contains("maximum context length"), "{err}");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 5, "three turns, the flush, the brief: no overflow compaction");
    assert_eq!(requests[3].body["tools"][0]["function"]["name"], "memory_append");
    assert!(content(&requests[4], 1).contains("<conversation>"));
    let (_, session) = ts.only_session();
    let events = session["events"].as_array().unwrap();
    let flush = events.iter().find(|e| e["type"] == "custom" && e["name"] == "memoryFlush").unwrap();
    assert_eq!(flush["data"]["compactionCount"], 0);
    assert!(flush["data"]["error"].as_str().unwrap().contains("maximum context length"), "{flush}");
    assert_eq!(events.last().unwrap()["type"], "compacted");
}

/// The chat's own flush at idle: an overflow ends the flush (no overflow
/// compaction inside it), is told, and the compaction runs right after.
#[test]
fn an_overflowing_flush_at_idle_is_told_and_compaction_follows() {
    let (ts, server) = setup(true);
    let project = tempfile::tempdir().unwrap();
    server.push(text_reply("first", 500));
    let out = ts.chat().current_dir(project.path()).args(["-m", "openai/gpt-4.1", "-p", &long("first")]).output();
    assert!(out.unwrap().status.success());
    let overflow = r#"{"error":{"message":"prompt is too long","code":"context_length_exceeded"}}"#;
    server.push(text_reply("second", 2500));
    server.push(Reply::json(400, overflow));
    server.push(text_reply(BRIEF, 10));
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.current_dir(project.path()).env("OPENAI_API_KEY", OPENAI_KEY).args(["--continue", "-p", &long("second")]);
    let out = run_bounded(&mut cmd, std::time::Duration::from_secs(30), "a chat whose flush overflows");
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "second\n");
    let err = stderr_of(&out);
    assert!(err.contains("(memory flush failed: context overflow: "), "{err}");
    assert!(err.contains(": compacted, "), "{err}");
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4, "two turns, the flush, the brief");
    assert_eq!(requests[2].body["tools"][0]["function"]["name"], "memory_append");
    assert!(content(&requests[3], 1).contains("<conversation>"));
}

#[test]
fn no_reply_is_recorded_but_never_shown() {
    let (ts, server) = setup(false);
    server.push(Reply::sse(openai_text(&["NO", "_RE", "PLY"], 10, 2, 0)));
    let out = oneshot(&ts, &["-m", "openai/gpt-4.1", "-p", "hi", "--json"]);
    assert_eq!(json_of(&out)["reply"], "");
    server.push(Reply::sse(openai_text(&["NO", "_RE", "PLY"], 10, 2, 0)));
    assert_eq!(stdout_of(&oneshot(&ts, &["--continue", "-p", "again"])), "");
    server.push(Reply::sse(openai_text(&["Sure. ", "NO_REPLY"], 10, 2, 0)));
    assert_eq!(stdout_of(&oneshot(&ts, &["--continue", "-p", "more"])), "Sure. NO_REPLY\n");
    let (_, session) = ts.only_session();
    let texts: Vec<Value> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "assistant")
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(texts, [json!("NO_REPLY"), json!("NO_REPLY"), json!("Sure. NO_REPLY")]);
}

#[test]
fn compaction_tools_appear_with_the_first_artifact_and_stay_in_their_session() {
    let (ts, server) = setup(false);
    let mut ids = Vec::new();
    for name in ["mine", "other"] {
        for n in 0..3 {
            server.push(text_reply("ok", 100));
            let text = long(&format!("{name} {n}"));
            let args: Vec<&str> = if n == 0 {
                vec!["-m", "openai/gpt-4.1", "-p", &text]
            } else {
                vec!["--resume", ids.last().map(String::as_str).unwrap_or(""), "-p", &text]
            };
            let out = oneshot(&ts, &args);
            assert!(out.status.success(), "{}", stderr_of(&out));
            if n == 0 {
                ids.push(stderr_of(&out).trim().to_string());
            }
        }
    }
    assert!(server.model_requests().iter().all(|r| r.body.get("tools").is_none()), "no tools before any artifact");
    for id in &ids {
        server.push(text_reply(BRIEF, 10));
        ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(id).assert().success();
    }
    let theirs = glrs::compact::artifact::list(&ts.store, &glrs::SessionId::parse(&ids[1]).unwrap()).unwrap().remove(0);
    let theirs_name = theirs.file.file_name().unwrap().to_string_lossy().into_owned();
    let before = std::fs::read(&theirs.file).unwrap();
    // The model tries to delete another session's artifact, then lists its own.
    server.push(Reply::sse(openai_tool_call(
        "t1",
        "compaction_delete",
        &[&json!({"file": format!("../{}/{theirs_name}", ids[1])}).to_string()],
    )));
    server.push(Reply::sse(openai_tool_call("t2", "compaction_list", &["{}"])));
    server.push(text_reply("done", 100));
    assert!(oneshot(&ts, &["--resume", &ids[0], "-p", "tidy up"]).status.success());
    let requests = server.model_requests();
    let n = requests.len();
    let names: Vec<&str> = requests[n - 3].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compaction_list", "compaction_read", "compaction_annotate", "compaction_delete"]);
    assert_eq!(std::fs::read(&theirs.file).unwrap(), before, "another session's artifact is untouched");
    let session: Value = serde_json::from_slice(
        &std::fs::read(ts.store.session_path(&glrs::SessionId::parse(&ids[0]).unwrap())).unwrap(),
    )
    .unwrap();
    let tools: Vec<Value> =
        session["events"].as_array().unwrap().iter().filter(|e| e["type"] == "tool").cloned().collect();
    assert_eq!(tools[0]["isError"], true);
    assert!(tools[1]["result"].as_str().unwrap().contains("worked on the parser"), "{}", tools[1]);
    assert!(!tools[1]["result"].as_str().unwrap().contains(&theirs_name) || ids[0] == ids[1]);
}

// ---- the REPL ----

fn repl(ts: &TestStore, args: &[&str]) -> PtySession {
    crate::support::pty::chat(ts, args, &[], false)
}

use crate::support::pty::prompt;

/// A REPL on gpt-4.1 after one finished turn per answer in `answers`
/// (their replies already queued), at the prompt.
fn repl_after(ts: &TestStore, answers: &[&str]) -> PtySession {
    let mut p = repl(ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    for (i, answer) in answers.iter().enumerate() {
        p.send_line(&long(&format!("turn {i}"))).unwrap();
        p.exp_string(answer).unwrap();
        prompt(&mut p);
    }
    p
}

fn slow_brief() -> Reply {
    let mut events = vec![": thinking\n\n".to_string(); 6];
    events.extend(openai_text(&[BRIEF], 10, 5, 0));
    Reply::slow_sse(events, 150)
}

#[test]
fn at_idle_compaction_holds_typed_lines_then_runs_them_on_the_brief() {
    let (ts, server) = setup(false);
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 3500));
    server.push(slow_brief());
    server.push(text_reply("after compaction", 300));
    let mut p = repl_after(&ts, &["first answer"]);
    p.send_line(&long("second")).unwrap();
    p.exp_string("second answer").unwrap();
    p.exp_string("(compacting ").unwrap();
    p.send("queued line\r").unwrap();
    p.flush().unwrap();
    p.exp_string(": compacted, ").unwrap();
    p.exp_string("after compaction").unwrap();
    prompt(&mut p);
    p.send_line("/artifacts").unwrap();
    p.exp_string("worked on the parser").unwrap();
    prompt(&mut p);
    p.send_line("/clear").unwrap();
    p.exp_string("(cleared").unwrap();
    prompt(&mut p);
    server.push(text_reply("fresh", 10));
    p.send_line("after clear").unwrap();
    p.exp_string("fresh").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let requests = server.model_requests();
    let queued = &requests[3];
    assert!(content(queued, 0).starts_with("<earlier-conversation>\nworked on the parser"));
    assert_eq!(queued.body["messages"].as_array().unwrap().last().unwrap()["content"], "queued line");
    assert_eq!(requests[4].body["messages"], json!([{"role": "user", "content": "after clear"}]));
    let (_, session) = ts.only_session();
    assert!(entry_types(&session).contains(&"cleared".to_string()));
}

#[test]
fn esc_abandons_an_idle_compaction_and_the_queue_stays_held() {
    let (ts, server) = setup(false);
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 3500));
    let mut events = vec![": thinking\n\n".to_string(); 60];
    events.extend(openai_text(&[BRIEF], 10, 5, 0));
    server.push(Reply::slow_sse(events, 200));
    let mut p = repl_after(&ts, &["first answer"]);
    p.send_line(&long("second")).unwrap();
    p.exp_string("(compacting ").unwrap();
    let (id, _) = ts.only_session();
    let before = std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    p.send("held line\r").unwrap();
    p.flush().unwrap();
    // Esc (which the terminal delivers after the held line) must find the
    // summary request in flight.
    server.wait_for_model_requests(3, "the compaction's summary request");
    p.send("\x1b").unwrap();
    p.flush().unwrap();
    p.exp_string("(compaction abandoned: nothing was written)").unwrap();
    p.exp_regex(r"% > held line").unwrap();
    assert_eq!(
        std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).unwrap(),
        before,
        "the session is unchanged"
    );
    assert!(glrs::compact::artifact::list(&ts.store, &glrs::SessionId::parse(&id).unwrap()).unwrap().is_empty());
    // Sending releases the held line.
    server.push(text_reply("released", 100));
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string("released").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let last_turn = server
        .model_requests()
        .into_iter()
        .find(|r| r.body["messages"].as_array().unwrap().last().unwrap()["content"] == "held line");
    assert!(last_turn.is_some(), "the held line was sent");
}

#[test]
fn in_the_repl_a_tool_turn_crossing_the_line_stops_and_continue_resumes() {
    let (ts, server) = setup(false);
    server.push(text_reply("first answer", 500));
    let mut call = openai_tool_call("call_9", "read_file", &["{\"path\": \"a.rs\"}"]);
    let at = call.len() - 2;
    call[at] = openai_usage(3500, 10, 0);
    server.push(Reply::sse(call));
    server.push(text_reply(BRIEF, 10));
    server.push(text_reply("picked up where we left off", 200));
    let mut p = repl_after(&ts, &["first answer"]);
    p.send_line(&long("second")).unwrap();
    p.exp_string("(compacting to make room: send \"continue\" to resume)").unwrap();
    p.exp_string(": compacted, ").unwrap();
    prompt(&mut p);
    p.send_line("continue").unwrap();
    p.exp_string("picked up where we left off").unwrap();
    prompt(&mut p);
    p.send_line("/status").unwrap();
    p.exp_string("compactions 1").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let requests = server.model_requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3].body["messages"].as_array().unwrap();
    assert_eq!(last.last().unwrap()["content"], "continue");
}

#[test]
fn the_flush_is_skipped_with_a_notice_when_the_memory_folder_is_not_writable() {
    let (ts, server) = setup(true);
    server.push(text_reply("noted", 2500));
    // A file where the memory folder would go: it cannot be made.
    std::fs::create_dir_all(ts.data_home().join("glrs")).unwrap();
    std::fs::write(ts.data_home().join("glrs/memory"), "").unwrap();
    let out = ts.chat().args(["-m", "openai/gpt-4.1", "-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains("memory flush skipped: ") && err.contains("glrs/memory/"), "{err}");
    assert_eq!(server.model_requests().len(), 1, "no flush turn");
    let (_, session) = ts.only_session();
    let custom = session["events"].as_array().unwrap().iter().find(|e| e["type"] == "custom").unwrap().clone();
    assert_eq!(custom["data"], json!({"compactionCount": 0, "skipped": "memory folder not writable"}));
    // Once per cycle: the next turn does not try again.
    server.push(text_reply("again", 2600));
    let id = ts.only_session().0;
    let out = ts.chat().args(["--resume", &id, "-p", "more"]).output().unwrap();
    assert!(!stderr_of(&out).contains("memory flush skipped"), "{}", stderr_of(&out));
}

#[test]
fn compact_typed_during_a_turn_runs_in_the_background_and_loses_nothing() {
    let (ts, server) = setup(false);
    server.push(text_reply("first answer", 500));
    server.push(text_reply("second answer", 600));
    server.push(slow_words("w", 15, 600, 100));
    server.push(text_reply(BRIEF, 10));
    server.push(text_reply("third answer", 300));
    let mut p = repl_after(&ts, &["first answer", "second answer"]);
    p.send_line(&long("streaming")).unwrap();
    p.exp_string("w1 ").unwrap();
    p.send("/compact keep the parser work\r").unwrap();
    p.flush().unwrap();
    p.exp_string("(compacting in the background").unwrap();
    // Started while the reply still streams.
    p.exp_string("w14").unwrap();
    p.exp_string(": compacted, ").unwrap();
    prompt(&mut p);
    p.send_line("third").unwrap();
    p.exp_string("third answer").unwrap();
    prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let requests = server.model_requests();
    assert!(content(&requests[3], 1).ends_with("Additional focus: keep the parser work"));
    let (_, session) = ts.only_session();
    let types = entry_types(&session);
    let compacted = types.iter().position(|t| t == "compacted").unwrap();
    // The second turn's answer was written after the brief landed, and kept.
    let second_answer = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["text"].as_str().is_some_and(|t| t.starts_with("w0 w1")))
        .unwrap();
    assert!(second_answer > compacted, "{types:?}");
    let third = &requests[4].body["messages"];
    assert!(third[0]["content"].as_str().unwrap().starts_with("<earlier-conversation>"));
    assert!(
        third.as_array().unwrap().iter().any(|m| m["content"].as_str().is_some_and(|t| t.starts_with("w0 w1"))),
        "the turn's answer survives"
    );
}
