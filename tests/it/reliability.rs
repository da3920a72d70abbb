//! Reliability under attack (issue 14): a chat killed mid-turn, saves that
//! fail on a full disk or under injected I/O errors. Each test reproduces
//! the attack: a real SIGKILL/SIGTERM/SIGHUP of a running chat against the
//! mock server, a small tmpfs filled to the last byte (as root), and
//! strace's `-e inject=`. Where either cannot run, the test fails rather
//! than pass without running (`.ci/run` runs as root and installs strace).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use rexpect::process::WaitStatus;
use serde_json::Value;

/// `glrs-chat ARGS` as a std command (keys set, this store only).
fn chat_cmd(ts: &TestStore, program: &str, args: &[&str]) -> Command {
    let mut cmd = ts.std_cmd(program);
    cmd.args(args)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("TMPDIR", ts.dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

const CHAT: &str = env!("CARGO_BIN_EXE_glrs-chat");

/// Wait (at most 20 s) for `what` to become true.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out after 20 s waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (at most 20 s) for a child to exit.
fn wait_exit(child: &mut Child) -> ExitStatus {
    let mut status = None;
    wait_until("the chat to exit", || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    status.expect("exited")
}

/// Wait (at most 20 s) until the chat has printed `text` on its stdout
/// (piped); what follows is drained on a thread until it exits.
fn wait_for_stdout(child: &mut Child, text: &str) {
    use std::io::Read;
    let mut out = child.stdout.take().expect("stdout is piped");
    let (chunks, arrived) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = out.read(&mut buffer) {
            if chunks.send(buffer[..n].to_vec()).is_err() {
                // The test has seen what it waited for: keep the pipe drained.
                while let Ok(1..) = out.read(&mut buffer) {}
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains(text) {
        let left = deadline.saturating_duration_since(Instant::now());
        match arrived.recv_timeout(left) {
            Ok(chunk) => seen.extend(chunk),
            Err(_) => {
                panic!("waited 20 s for {text:?} on the chat's stdout; it printed {:?}", String::from_utf8_lossy(&seen))
            }
        }
    }
}

fn send_signal(child: &Child, signal: &str) {
    let ok = Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().expect("run kill");
    assert!(ok.success(), "kill -s {signal} failed");
}

fn session_of(ts: &TestStore, id: &str) -> Value {
    let text = std::fs::read(ts.sessions_dir().join(format!("{id}.json"))).expect("session file");
    serde_json::from_slice(&text).expect("valid session JSON")
}

/// A killed chat (SIGKILL, SIGTERM, SIGHUP) during the model call after a
/// saved tool step: the next turn's request is valid, though the ids repeat
/// across turns; SIGTERM and SIGHUP also keep what arrived, and exit 128+N.
fn killed_during_the_next_model_call(signal: &str) {
    let (ts, server) = store_and_server();
    // Turn 1: a tool call `call_0` and its result.
    server.push(Reply::sse(openai_tool_call("call_0", "lookup", &["{}"])));
    server.push(Reply::sse(openai_text(&["first done"], 20, 2, 0)));
    let out = chat_cmd(&ts, CHAT, &["-m", "openai/gpt-4.1", "-p", "one"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    // Turn 2: `call_0` again, then a slow answer during which it is killed.
    server.push(Reply::sse(openai_tool_call("call_0", "lookup", &["{}"])));
    server.push(slow_words("w", 40, 20, 100));
    let mut child = chat_cmd(&ts, CHAT, &["--resume", &id, "-p", "two"]).spawn().unwrap();
    wait_until("the model call after the tool step", || server.model_requests().len() >= 4);
    // Some of the reply has arrived (and been shown).
    wait_for_stdout(&mut child, "w1 ");
    if signal == "KILL" {
        child.kill().unwrap();
    } else {
        send_signal(&child, signal);
    }
    let status = wait_exit(&mut child);
    let killed = session_of(&ts, &id);
    if signal != "KILL" {
        let expected = if signal == "TERM" { 143 } else { 129 };
        assert_eq!(status.code(), Some(expected), "{status:?}");
        let types = entry_types(&killed);
        assert_eq!(types[types.len() - 4..], ["tool", "assistant", "notice", "turn"], "{killed:#}");
        let events = killed["events"].as_array().unwrap();
        let kept = events.iter().rev().find(|e| e["type"] == "assistant").unwrap();
        assert_eq!(kept["stopReason"], "aborted", "{kept}");
        assert!(kept["text"].as_str().unwrap().starts_with("w0 w1 "), "{kept}");
        assert!(events.iter().rev().take(6).any(|e| e["type"] == "tool"), "the tool step was saved: {killed:#}");
    }
    // Turn 3: the request carries no call without its result (the mock
    // checks that on every request).
    server.push(Reply::sse(openai_text(&["ok"], 20, 2, 0)));
    let out = chat_cmd(&ts, CHAT, &["--resume", &id, "-p", "three"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let last = server.model_requests().pop().unwrap();
    let contents: Vec<String> =
        last.body["messages"].as_array().unwrap().iter().map(|m| m["content"].to_string()).collect();
    assert!(contents.iter().any(|c| c.contains("two")), "turn 2's message is still in the context: {contents:?}");
}

#[test]
fn sigkill_during_a_model_call_leaves_no_orphan_tool_call() {
    killed_during_the_next_model_call("KILL");
}

#[test]
fn sigterm_stops_a_turn_like_ctrl_c() {
    killed_during_the_next_model_call("TERM");
}

#[test]
fn sighup_stops_a_turn_like_ctrl_c() {
    killed_during_the_next_model_call("HUP");
}

/// A tmpfs mounted at a path for one test, unmounted when dropped.
pub(crate) struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    /// Mount a small tmpfs at `at`. The test fails unless it runs where
    /// mounting works (as root: `.ci/run` runs as root), rather than pass
    /// without running its subject (issue 24.6).
    pub(crate) fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).expect("mkdir mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(at)
            .output()
            .unwrap_or_else(|e| panic!("this test mounts a tmpfs, and mount cannot run: {e}"));
        assert!(
            mounted.status.success(),
            "this test mounts a tmpfs, which needs root: {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        Tmpfs { at: at.to_path_buf() }
    }

    /// Fill the file system to the last byte; the filler is returned so it
    /// can be removed to free the space.
    pub(crate) fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.at.join("filler");
        let mut file = std::fs::File::create(&path).expect("create filler");
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        while file.write_all(&[0]).is_ok() {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Fail the test unless strace can trace here (it injects the faults):
/// a test that cannot run its subject fails (issue 24.6); `.ci/run`
/// installs strace.
pub(crate) fn require_strace() {
    let ok = Command::new("strace").args(["-f", "-qq", "-o", "/dev/null", "true"]).output();
    let ok = ok.is_ok_and(|out| out.status.success());
    assert!(ok, "this test drives strace, which cannot run here (not installed, or ptrace is not allowed)");
}

/// `glrs-chat ARGS` under strace with `inject` (e.g. `fdatasync:error=EIO`:
/// the session's data sync; folders and recovery files use `fsync`).
fn chat_with_fault(ts: &TestStore, syscalls: &str, error: &str, args: &[&str]) -> Command {
    let mut all = vec![
        "-f".to_string(),
        "-qq".into(),
        "-o".into(),
        "/dev/null".into(),
        "-e".into(),
        format!("trace={syscalls}"),
        "-e".into(),
        format!("inject={syscalls}:error={error}"),
        CHAT.into(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    chat_cmd(ts, "strace", &refs)
}

/// The recovery file a failed chat named on stderr.
fn recovery_path(stderr: &str) -> PathBuf {
    let at = stderr.find("glrs-sessions import ").unwrap_or_else(|| panic!("no import hint: {stderr}"));
    let rest = &stderr[at + "glrs-sessions import ".len()..];
    PathBuf::from(rest.split_whitespace().next().expect("a path"))
}

/// A one-shot turn whose save fails: exit 1, said plainly, the turn in a
/// recovery file that `glrs-sessions import` puts back.
fn assert_turn_recovered(ts: &TestStore, id: &str, out: &std::process::Output) {
    let stderr = stderr_of(out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(json_of(out)["reply"], "Noted.", "the reply is still printed");
    assert!(stderr.contains(&format!("session {id} could not be saved")), "{stderr}");
    let recovery = recovery_path(&stderr);
    let text = std::fs::read_to_string(&recovery).expect("recovery file");
    assert!(text.contains("remember 4217") && text.contains("Noted."), "{text}");
    assert!(!session_of(ts, id).to_string().contains("remember 4217"), "the write failed");
    let out = ts.sessions().args(["import"]).arg(&recovery).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let session = session_of(ts, id);
    let types = entry_types(&session);
    // The failed write is on record too.
    assert_eq!(types[types.len() - 5..], ["user", "assistant", "usage", "turn", "error"][..], "{session:#}");
    assert!(session.to_string().contains("remember 4217"));
    // Imported once only.
    let again = ts.sessions().args(["import"]).arg(&recovery).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
}

fn first_turn(ts: &TestStore, server: &MockServer) -> String {
    server.push(Reply::sse(openai_text(&["Hi."], 10, 2, 0)));
    let out = chat_cmd(ts, CHAT, &["-m", "openai/gpt-4.1", "-p", "hello"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    ts.only_session().0
}

#[test]
fn a_turn_on_a_full_disk_is_never_dropped_silently() {
    let (ts, server) = store_and_server();
    let disk = Tmpfs::mount(&ts.data_home(), "2m");
    let id = first_turn(&ts, &server);
    let filler = disk.fill();
    server.push(Reply::sse(openai_text(&["Noted."], 10, 2, 0)));
    let out = chat_cmd(&ts, CHAT, &["--resume", &id, "-p", "remember 4217", "--json"]).output().unwrap();
    // Space is freed; the recovery file (in TMPDIR, off the full disk) goes back in.
    std::fs::remove_file(filler).unwrap();
    assert_turn_recovered(&ts, &id, &out);
}

#[test]
fn a_turn_whose_fsync_fails_is_recovered() {
    let (ts, server) = store_and_server();
    require_strace();
    let id = first_turn(&ts, &server);
    server.push(Reply::sse(openai_text(&["Noted."], 10, 2, 0)));
    let out =
        chat_with_fault(&ts, "fdatasync", "EIO", &["--resume", &id, "-p", "remember 4217", "--json"]).output().unwrap();
    assert_turn_recovered(&ts, &id, &out);
}

#[test]
fn a_turn_whose_rename_fails_is_recovered() {
    let (ts, server) = store_and_server();
    require_strace();
    let id = first_turn(&ts, &server);
    server.push(Reply::sse(openai_text(&["Noted."], 10, 2, 0)));
    // Another model: its longer name grows the header, so this write is a
    // full rewrite (a rename), not an append in place.
    let args = ["--resume", &id, "-m", "openai/gpt-4.1-mini", "-p", "remember 4217", "--json"];
    let out = chat_with_fault(&ts, "rename,renameat,renameat2", "EXDEV", &args).output().unwrap();
    assert_turn_recovered(&ts, &id, &out);
}

fn repl_prompt(p: &mut rexpect::session::PtySession) {
    p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 \d+% > ").expect("the prompt");
}

/// The REPL under strace with every fdatasync failing (EIO): one turn,
/// "remember 4217", whose save failed, and the prompt back.
fn repl_after_a_failed_save(ts: &TestStore) -> rexpect::session::PtySession {
    let mut cmd = ts.std_cmd("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=fdatasync", "-e", "inject=fdatasync:error=EIO", CHAT])
        .args(["-m", "openai/gpt-4.1"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("TMPDIR", ts.dir.path())
        .env("TERM", "xterm-256color");
    let options = rexpect::reader::Options::new().timeout_ms(Some(20_000)).strip_ansi_escape_codes(true);
    let mut p = rexpect::session::spawn_with_options(cmd, options).expect("spawn in a pty");
    repl_prompt(&mut p);
    p.send_line("remember 4217").unwrap();
    p.exp_string("could not save the session (will retry)").unwrap();
    repl_prompt(&mut p);
    p
}

fn import_ok(ts: &TestStore, path: &str) {
    let out = ts.sessions().args(["import", path]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
}

#[test]
fn the_repl_saves_once_more_before_new_and_ctrl_d_and_says_where_the_turn_went() {
    let (ts, server) = store_and_server();
    require_strace();
    server.push(Reply::sse(openai_text(&["Noted."], 10, 2, 0)));
    server.push(Reply::sse(openai_text(&["Also noted."], 10, 2, 0)));
    let mut p = repl_after_a_failed_save(&ts);
    p.send_line("/new").unwrap();
    p.exp_string("could not be saved").unwrap();
    let (_, first) = p.exp_regex(r"glrs-sessions import \S+\.json").unwrap();
    repl_prompt(&mut p);
    p.send_line("remember 9").unwrap();
    p.exp_string("could not save the session (will retry)").unwrap();
    repl_prompt(&mut p);
    p.send_control('d').unwrap();
    p.exp_string("could not be saved").unwrap();
    let (_, second) = p.exp_regex(r"glrs-sessions import \S+\.json").unwrap();
    p.exp_eof().unwrap();
    let status = p.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 1)), "exit status {status:?}");
    // Nothing reached the store; both turns come back from their files.
    assert!(!ts.sessions_dir().exists() || ts.store.all().unwrap().is_empty());
    import_ok(&ts, &first["glrs-sessions import ".len()..]);
    import_ok(&ts, &second["glrs-sessions import ".len()..]);
    let text: String = ts.store.all().unwrap().iter().map(|l| std::fs::read_to_string(&l.path).unwrap()).collect();
    assert!(text.contains("remember 4217") && text.contains("Also noted."), "{text}");
    assert_eq!(ts.store.all().unwrap().len(), 2);
}

#[test]
fn sigterm_in_the_repl_stops_the_turn_saves_and_exits() {
    let (ts, server) = store_and_server();
    server.push(slow_words("word", 60, 10, 60));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    repl_prompt(&mut p);
    p.send_line("count slowly").unwrap();
    p.exp_string("word2 ").unwrap();
    p.process_mut().signal(rexpect::process::Signal::SIGTERM).expect("send SIGTERM");
    p.exp_string("stopped by SIGTERM").unwrap();
    p.exp_eof().unwrap();
    let status = p.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 143)), "exit status {status:?}");
    let (_, session) = ts.only_session();
    assert_eq!(entry_types(&session), ["user", "assistant", "notice", "turn"]);
    assert_eq!(session["events"][1]["stopReason"], "aborted");
    assert!(session["events"][1]["text"].as_str().unwrap().starts_with("word0 word1 word2 "));
}

/// The pid of the `glrs-chat` working on `ts`'s store (under strace, it is
/// not the child the test started).
fn chat_pid(ts: &TestStore) -> String {
    let mine = format!("XDG_DATA_HOME={}", ts.data_home().display());
    let mut found = Vec::new();
    wait_until("the chat to start", || {
        found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "glrs-chat"))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == mine.as_bytes()))
            })
            .collect();
        !found.is_empty()
    });
    assert_eq!(found.len(), 1, "one chat on this store: {found:?}");
    found.remove(0)
}

/// SIGTERM or SIGHUP at the prompt after a failed save: like Ctrl-D, one
/// more attempt, then the recovery file, said plainly, and exit 1.
fn signal_at_the_prompt_after_a_failed_save(signal: &str) {
    let (ts, server) = store_and_server();
    require_strace();
    server.push(Reply::sse(openai_text(&["Noted."], 10, 2, 0)));
    let mut p = repl_after_a_failed_save(&ts);
    let chat = chat_pid(&ts);
    let ok = Command::new("kill").args(["-s", signal, &chat]).status().expect("run kill");
    assert!(ok.success(), "kill -s {signal} failed");
    p.exp_string(&format!("stopped by SIG{signal}")).unwrap();
    p.exp_string("could not be saved").unwrap();
    let (_, hint) = p.exp_regex(r"glrs-sessions import \S+\.json").unwrap();
    p.exp_eof().unwrap();
    let status = p.process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 1)), "exit status {status:?}");
    assert!(!ts.sessions_dir().exists() || ts.store.all().unwrap().is_empty(), "nothing reached the store");
    import_ok(&ts, &hint["glrs-sessions import ".len()..]);
    let (_, session) = ts.only_session();
    assert!(session.to_string().contains("remember 4217") && session.to_string().contains("Noted."));
}

#[test]
fn sigterm_at_the_prompt_after_a_failed_save_writes_the_recovery_file() {
    signal_at_the_prompt_after_a_failed_save("TERM");
}

#[test]
fn sighup_at_the_prompt_after_a_failed_save_writes_the_recovery_file() {
    signal_at_the_prompt_after_a_failed_save("HUP");
}

/// The user messages of a captured OpenAI request, in order.
fn user_messages(request: &crate::support::mock::Captured) -> Vec<String> {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
}

/// A first turn that never recorded its `turn` entry (the chat was killed
/// during a model call after a saved tool step, or the file holds only the
/// user's message) keeps that message in the context on resume.
#[test]
fn a_first_turn_killed_before_its_turn_entry_keeps_its_message_on_resume() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_tool_call("call_0", "lookup", &["{}"])));
    server.push(slow_words("w", 40, 20, 100));
    let mut child = chat_cmd(&ts, CHAT, &["-m", "openai/gpt-4.1", "-p", "remember 4217"]).spawn().unwrap();
    wait_until("the model call after the tool step", || server.model_requests().len() >= 2);
    wait_for_stdout(&mut child, "w1 ");
    child.kill().unwrap();
    wait_exit(&mut child);
    let (id, killed) = ts.only_session();
    let types = entry_types(&killed);
    assert_eq!(types[0], "user", "{killed:#}");
    assert!(!types.contains(&"turn".to_string()), "killed before the turn ended: {types:?}");

    server.push(Reply::sse(openai_text(&["4217"], 20, 2, 0)));
    let out = chat_cmd(&ts, CHAT, &["--resume", &id, "-p", "which number?"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let last = server.model_requests().pop().unwrap();
    assert_eq!(user_messages(&last), ["remember 4217", "which number?"]);
    // And once more, now that a finished turn follows it.
    server.push(Reply::sse(openai_text(&["yes"], 20, 2, 0)));
    let out = chat_cmd(&ts, CHAT, &["--resume", &id, "-p", "sure?"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let last = server.model_requests().pop().unwrap();
    assert_eq!(user_messages(&last), ["remember 4217", "which number?", "sure?"]);

    // A file that holds nothing but the first user message.
    let only = ts.session(ts.dir.path().to_str().unwrap(), &[user("remember 99")]);
    server.push(Reply::sse(openai_text(&["99"], 20, 2, 0)));
    let out =
        chat_cmd(&ts, CHAT, &["--resume", only.as_str(), "-m", "openai/gpt-4.1", "-p", "which?"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let last = server.model_requests().pop().unwrap();
    assert_eq!(user_messages(&last), ["remember 99", "which?"]);
}

#[test]
fn ctrl_c_and_sigterm_stop_a_one_shot_turn_with_the_same_words() {
    // Issue 24.9: Ctrl-C (SIGINT) and SIGTERM say what stopped the turn
    // and that what arrived is kept, each with its exit status.
    let (ts, server) = store_and_server();
    for (signal, code, name) in [("INT", 130, "Ctrl-C"), ("TERM", 143, "SIGTERM")] {
        let before = server.model_requests().len();
        server.push(slow_words("w", 40, 20, 100));
        let mut child = chat_cmd(&ts, CHAT, &["-m", "openai/gpt-4.1", "-p", "go"]).spawn().unwrap();
        wait_until("the model call", || server.model_requests().len() > before);
        // Some of the answer has arrived before the stop.
        std::thread::sleep(Duration::from_millis(300));
        send_signal(&child, signal);
        let status = wait_exit(&mut child);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(code), "{signal}: {err}");
        assert!(err.contains(&format!("glrs-chat: stopped by {name}: what arrived is kept\n")), "{signal}: {err}");
    }
}
