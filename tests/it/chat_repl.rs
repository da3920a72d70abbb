//! The REPL through a pseudo-terminal, as a person uses it: type a prompt,
//! watch the reply stream, stop it with Ctrl-C or Esc, steer it, resume,
//! and be refused a session another chat has open.
//!
//! rexpect reads the terminal byte by byte as Latin-1, so expectations here
//! match ASCII text only.

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;
use rexpect::process::WaitStatus;
use rexpect::session::PtySession;
use serde_json::json;

fn repl(ts: &TestStore, args: &[&str]) -> PtySession {
    crate::support::pty::chat(ts, args, &[], false)
}

use crate::support::pty::prompt;

fn quit(mut p: PtySession) -> String {
    p.send_line("/quit").unwrap();
    let rest = p.exp_eof().expect("exit after /quit");
    let status = p.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
    rest
}

#[test]
fn a_reply_streams_and_the_way_back_is_printed() {
    let (ts, server) = store_and_server();
    server.push(Reply::slow_sse(openai_text(&["Hello", " from", " the", " mock"], 10, 4, 0), 30));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    p.exp_regex("session [0-9a-f]{8} .* /help for commands").unwrap();
    prompt(&mut p);
    p.send_line("hi there").unwrap();
    p.exp_string("Hello from the mock").unwrap();
    prompt(&mut p);
    let rest = quit(p);
    let (id, session) = ts.only_session();
    assert!(rest.contains(&format!("to come back: glrs-chat --resume {id}")), "{rest}");
    assert_eq!(entry_types(&session), ["user", "assistant", "usage", "turn"]);
    assert_eq!(session["events"][1]["text"], "Hello from the mock");
    let history = std::fs::read_to_string(ts.sessions_dir().join("prompts.json")).unwrap();
    assert!(history.contains("\"hi there\"") && history.contains(&id), "{history}");
}

fn stop_with(key: &str) {
    let (ts, server) = store_and_server();
    server.push(slow_words("word", 60, 10, 60));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    p.send_line("count slowly").unwrap();
    p.exp_string("word2 ").unwrap();
    p.send(key).unwrap();
    p.flush().unwrap();
    p.exp_string("what arrived is kept").unwrap();
    prompt(&mut p);
    quit(p);
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "notice", "turn"]);
    let assistant = &session["events"][1];
    assert_eq!(assistant["stopReason"], "aborted");
    let text = assistant["text"].as_str().unwrap();
    assert!(text.starts_with("word0 word1 word2 ") && !text.contains("word59"), "{text}");
}

#[test]
fn ctrl_c_stops_a_long_reply_and_keeps_what_arrived() {
    stop_with("\x03");
}

#[test]
fn esc_stops_a_long_reply_too() {
    stop_with("\x1b");
}

#[test]
fn a_line_typed_during_a_turn_joins_it_as_a_steer() {
    let (ts, server) = store_and_server();
    server.push(slow_words("word", 12, 10, 80));
    server.push(Reply::sse(openai_text(&["Cats, then."], 30, 3, 0)));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    p.send_line("tell me about dogs").unwrap();
    p.exp_string("word1 ").unwrap();
    p.send("and cats\r").unwrap();
    p.flush().unwrap();
    p.exp_string("steer joined the turn: and cats").unwrap();
    p.exp_string("Cats, then.").unwrap();
    prompt(&mut p);
    quit(p);
    let (_, session) = ts.only_session();
    let steer = session["events"].as_array().unwrap().iter().find(|e| e["steer"] == true).expect("a steer entry");
    assert_eq!(steer["text"], "and cats");
    let second = &server.model_requests()[1].body["messages"];
    assert_eq!(second.as_array().unwrap().last().unwrap(), &json!({"role": "user", "content": "and cats"}));
}

#[test]
fn resume_shows_the_history_and_a_second_chat_is_refused() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["first answer"], 10, 2, 0)));
    ts.chat().args(["-p", "the first question", "-m", "openai/gpt-4.1"]).assert().success();
    let (id, _) = ts.only_session();

    let mut p = repl(&ts, &["--resume", &id]);
    p.exp_string("> the first question").unwrap();
    p.exp_string("first answer").unwrap();
    prompt(&mut p);

    // A second chat on the same session, in its own terminal.
    let mut second = repl(&ts, &["--resume", &id]);
    second.exp_string(&format!("session {id} is open in another program (pid")).unwrap();
    second.exp_string(&format!("glrs-fork {id}")).unwrap();
    second.exp_eof().unwrap();
    let status = second.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 4)), "{status:?}");

    server.push(Reply::sse(openai_text(&["second answer"], 20, 2, 0)));
    p.send_line("the second question").unwrap();
    p.exp_string("second answer").unwrap();
    prompt(&mut p);
    quit(p);
    let messages = &server.model_requests()[1].body["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 3);
}

#[test]
fn a_change_on_disk_is_picked_up_before_the_next_call() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["one"], 10, 2, 0)));
    server.push(Reply::sse(openai_text(&["two"], 10, 2, 0)));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    p.send_line("first").unwrap();
    p.exp_string("one").unwrap();
    prompt(&mut p);
    // Another program appends a boundary while the chat is open.
    let (id, _) = ts.only_session();
    let id = glrs::SessionId::parse(&id).unwrap();
    let cleared = glrs::store::Entry::Cleared { at: glrs::time::now() };
    ts.store.append(&id, glrs::store::Append::new().entry(&cleared).unwrap()).unwrap();
    p.send_line("second").unwrap();
    p.exp_string("two").unwrap();
    prompt(&mut p);
    quit(p);
    assert_eq!(server.model_requests()[1].body["messages"], json!([{"role": "user", "content": "second"}]));
    let (_, session) = ts.only_session();
    assert_eq!(
        entry_types(&session),
        ["user", "assistant", "usage", "turn", "cleared", "user", "assistant", "usage", "turn"]
    );
}

#[test]
fn slash_commands_tab_completion_and_multi_line_input() {
    let (ts, server) = store_and_server();
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    p.send("/he\t").unwrap();
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string("/sessions").unwrap();
    prompt(&mut p);
    p.send_line("/nonsense").unwrap();
    p.exp_string("unknown command /nonsense").unwrap();
    prompt(&mut p);
    p.send_line("/model").unwrap();
    p.exp_string("openai/gpt-4.1 (window 1047576 tokens)").unwrap();
    prompt(&mut p);

    // A line ending in `\` continues on a line marked `... `; the message
    // joins the lines without the backslash or the marker.
    server.push(Reply::sse(openai_text(&["got both"], 10, 2, 0)));
    p.send("line one\\\r").unwrap();
    p.flush().unwrap();
    p.exp_string("line one\\\r\n... ").unwrap();
    p.send("line two\r").unwrap();
    p.flush().unwrap();
    p.exp_string("got both").unwrap();
    prompt(&mut p);
    // Typed ahead in one go, three lines: nothing is lost between them.
    server.push(Reply::sse(openai_text(&["got three"], 10, 2, 0)));
    p.send("one \\\rtwo \\\rthree\r").unwrap();
    p.flush().unwrap();
    p.exp_string("got three").unwrap();
    prompt(&mut p);
    p.send_line("/status").unwrap();
    p.exp_string("window 256000 tokens").unwrap();
    p.exp_string("trigger 192000 tokens").unwrap();
    p.exp_string("sandbox workspace-write (").unwrap();
    p.exp_string("contextTokens").unwrap();
    prompt(&mut p);
    // SPEC 17: /sandbox shows and sets the mode.
    p.send_line("/sandbox read-only").unwrap();
    p.exp_string("sandbox read-only (").unwrap();
    prompt(&mut p);
    p.send_line("/sandbox strict").unwrap();
    p.exp_string("unknown sandbox mode \"strict\"").unwrap();
    prompt(&mut p);
    p.send_line("/sessions").unwrap();
    p.exp_string("line one").unwrap();
    prompt(&mut p);
    // Ctrl-D leaves too.
    p.send_control('d').unwrap();
    p.exp_string("to come back").unwrap();
    p.exp_eof().unwrap();
    let requests = server.model_requests();
    assert_eq!(requests[0].body["messages"], json!([{"role": "user", "content": "line one\nline two"}]));
    assert_eq!(requests[1].body["messages"][2], json!({"role": "user", "content": "one \ntwo \nthree"}));
}

#[test]
fn the_picker_resume_command_history_and_no_color() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["older answer"], 10, 2, 0)));
    ts.chat().args(["-p", "an older session", "-m", "openai/gpt-4.1"]).assert().success();
    let (old, _) = ts.only_session();

    // --resume alone: a picker, newest first; pick by number.
    let mut p = repl(&ts, &["--resume"]);
    p.exp_string(&format!("1  {old}")).unwrap();
    p.exp_string("open which").unwrap();
    p.send_line("1").unwrap();
    p.exp_string("older answer").unwrap();
    prompt(&mut p);
    quit(p);

    // A new chat: Up recalls the last prompt (from prompts.json), and
    // /resume ID switches sessions.
    server.push(Reply::sse(openai_text(&["again"], 10, 2, 0)));
    let mut cmd_env = repl_no_color(&ts);
    prompt(&mut cmd_env);
    cmd_env.send("\x1b[A").unwrap();
    cmd_env.send("\r").unwrap();
    cmd_env.flush().unwrap();
    cmd_env.exp_string("again").unwrap();
    prompt(&mut cmd_env);
    // Tab completes the id: the whole id is on the line before Enter.
    cmd_env.send(&format!("/resume {}\t", &old[..4])).unwrap();
    cmd_env.flush().unwrap();
    cmd_env.exp_string(&old[4..]).unwrap();
    cmd_env.send("\r").unwrap();
    cmd_env.flush().unwrap();
    cmd_env.exp_string(&format!("session {old}")).unwrap();
    cmd_env.exp_string("> an older session").unwrap();
    prompt(&mut cmd_env);
    quit(cmd_env);
    let replayed = &server.model_requests()[1].body["messages"];
    assert_eq!(replayed, &json!([{"role": "user", "content": "an older session"}]), "Up recalled the history");
}

/// A REPL with NO_COLOR, read without stripping escapes: none may appear.
fn repl_no_color(ts: &TestStore) -> PtySession {
    let mut p = crate::support::pty::chat(ts, &["-m", "openai/gpt-4.1"], &[("NO_COLOR", "1")], true);
    let banner = p.exp_string("/help for commands").expect("banner");
    assert!(!banner.contains("\x1b[2m"), "colour despite NO_COLOR: {banner:?}");
    p
}

#[test]
fn fork_and_new_from_the_repl_with_a_key() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["first reply"], 10, 2, 0)));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1", "--key", "work"]);
    prompt(&mut p);
    // A new keyed session is saved as it starts (one session for a key
    // even when chats start at once), so the key names it already.
    let (first, _) = ts.only_session();
    assert_eq!(ts.store.keys().unwrap()["work"].session, first);
    p.send_line("remember this").unwrap();
    p.exp_string("first reply").unwrap();
    prompt(&mut p);
    let (first, _) = ts.only_session();
    assert_eq!(ts.store.keys().unwrap()["work"].session, first);

    p.send_line("/fork").unwrap();
    let (_, forked) = p.exp_regex(r"forked to [0-9a-f]{8}").unwrap();
    let forked = forked.trim_start_matches("forked to ").to_string();
    p.exp_string(&format!("/resume {forked} opens it")).unwrap();
    prompt(&mut p);
    p.send_line(&format!("/resume {forked}")).unwrap();
    p.exp_string(&format!("session {forked}")).unwrap();
    p.exp_string("> remember this").unwrap();
    prompt(&mut p);
    // The fork has no key (a key belongs to its session); back to the keyed one.
    p.send_line(&format!("/resume {first}")).unwrap();
    p.exp_string(&format!("session {first}")).unwrap();
    prompt(&mut p);

    p.send_line("/new").unwrap();
    let (_, fresh) = p.exp_regex(r"new session [0-9a-f]{8} for key work").unwrap();
    let fresh = fresh[12..20].to_string();
    prompt(&mut p);
    server.push(Reply::sse(openai_text(&["fresh reply"], 10, 2, 0)));
    p.send_line("a new start").unwrap();
    p.exp_string("fresh reply").unwrap();
    prompt(&mut p);
    quit(p);
    assert_eq!(ts.store.keys().unwrap()["work"].session, fresh, "the key moved to the new session");
    assert_eq!(server.model_requests()[1].body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn export_writes_the_transcript_beside_the_chat() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["Exported ", "reply."], 10, 4, 0)));
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    p.send_line("/export").unwrap();
    p.exp_string("nothing to export yet").unwrap();
    prompt(&mut p);
    p.send_line("say it").unwrap();
    p.exp_string("Exported reply.").unwrap();
    prompt(&mut p);
    p.send_line("/export page.html").unwrap();
    p.exp_string("exported to page.html").unwrap();
    prompt(&mut p);
    p.send_line("/export").unwrap();
    p.exp_string(".md").unwrap();
    prompt(&mut p);
    quit(p);
    let (id, _) = ts.only_session();
    let page = std::fs::read_to_string(ts.dir.path().join("page.html")).unwrap();
    assert!(page.contains("Exported reply.") && page.contains("say it"), "{page}");
    let md = std::fs::read_to_string(ts.dir.path().join(format!("{id}.md"))).unwrap();
    assert!(md.contains("## [1] User") && md.contains("Exported reply."), "{md}");
}

/// What the sessions folder holds that belongs to one session: its file,
/// its open lock, its write lock (sorted names).
fn session_files(ts: &TestStore) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(ts.sessions_dir()) else { return Vec::new() };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.split_once('.').is_some_and(|(stem, _)| glrs::SessionId::is_id(stem)))
        .collect();
    names.sort();
    names
}

#[test]
fn starting_and_quitting_leaves_no_session_and_no_lock_file() {
    let (ts, server) = store_and_server();
    let mut p = repl(&ts, &["-m", "openai/gpt-4.1"]);
    prompt(&mut p);
    let open = session_files(&ts);
    assert!(open.len() == 1 && open[0].ends_with(".open"), "the chat holds its open lock: {open:?}");
    quit(p);
    assert_eq!(session_files(&ts), Vec::<String>::new());

    // A new session whose first call fails is not kept: nor is its lock.
    for _ in 0..3 {
        server.push(Reply::json(503, r#"{"error":{"message":"overloaded"}}"#));
    }
    let out = ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).output().unwrap();
    assert!(stderr_of(&out).contains("the new session was not kept"), "{}", stderr_of(&out));
    assert_eq!(session_files(&ts), Vec::<String>::new());

    // A session that was saved keeps its lock file; only cleanup takes it.
    server.push(Reply::sse(openai_text(&["kept"], 10, 2, 0)));
    ts.chat().args(["-p", "hi", "-m", "openai/gpt-4.1"]).assert().success();
    let (id, _) = ts.only_session();
    assert!(session_files(&ts).contains(&format!("{id}.open")), "{:?}", session_files(&ts));
}
