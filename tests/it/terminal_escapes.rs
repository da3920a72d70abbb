//! Issue 14, item 15: escape sequences in a reply (OSC 0 window title,
//! OSC 52 clipboard, CSI 2J clear screen) must not reach a terminal raw,
//! in the REPL or in `glrs-sessions show`/`grep`; glrs's own styling stays.
//! Piped output keeps the data as it is.

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

/// A reply that would retitle the window, fill the clipboard and clear the screen.
const HOSTILE: &str = "safe \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x1b\\ \x1b[2J marker-end";

fn assert_harmless(out: &str) {
    for raw in ["\x1b]0;", "\x1b]52;", "\x1b[2J", "\x07"] {
        assert!(!out.contains(raw), "{raw:?} reached the terminal: {out:?}");
    }
    assert!(out.contains("^[]0;pwned^G"), "shown, not obeyed: {out:?}");
}

#[test]
fn the_repl_shows_escape_sequences_instead_of_obeying_them() {
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["# Title\n", HOSTILE, "\n"], 10, 4, 0)));
    let mut p = crate::support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], true);
    crate::support::pty::prompt(&mut p);
    p.send_line("hi").unwrap();
    let shown = p.exp_string("marker-end").expect("the reply");
    crate::support::pty::prompt(&mut p);
    p.send_line("/quit").unwrap();
    let rest = p.exp_eof().expect("exit");
    let all = format!("{shown}{rest}");
    assert_harmless(&all);
    // glrs's own styling is still there: the heading redrawn in bold (and underlined).
    assert!(all.contains("\x1b[1;4mTitle\x1b[0m"), "{all:?}");
    let (_, session) = ts.only_session();
    assert!(session["events"][1]["text"].as_str().unwrap().contains("\x1b]52;"), "the session keeps the text as sent");
}

#[test]
fn show_and_grep_on_a_terminal_escape_but_pipes_keep_the_data() {
    let ts = TestStore::new();
    let id = ts.session("/tmp", &[user("hi"), notice(HOSTILE)]).to_string();
    let sessions = env!("CARGO_BIN_EXE_glrs-sessions");
    let shown = crate::support::pty::run_raw(&ts, sessions, &["show", &id]);
    assert_harmless(&shown);
    assert!(shown.contains("\x1b[1m["), "entry headings keep their bold: {shown:?}");
    let found = crate::support::pty::run_raw(&ts, sessions, &["grep", "marker-end"]);
    assert_harmless(&found);
    // Piped: the bytes as stored.
    let piped = ts.sessions().args(["show", &id]).output().unwrap();
    assert!(stdout_of(&piped).contains(HOSTILE));
}

#[test]
fn ls_on_a_terminal_escapes_titles_but_pipes_keep_the_data() {
    let ts = TestStore::new();
    ts.session("/tmp", &[user(HOSTILE)]);
    let listed = crate::support::pty::run_raw(&ts, env!("CARGO_BIN_EXE_glrs-sessions"), &["ls"]);
    assert_harmless(&listed);
    assert!(listed.contains("marker-end"), "{listed:?}");
    // Piped: the bytes as stored (tabs and line breaks aside).
    let piped = ts.sessions().args(["ls", "--format", "title"]).output().unwrap();
    assert_eq!(stdout_of(&piped), format!("{HOSTILE}\n"));
}

#[test]
fn status_on_a_terminal_escapes_the_title() {
    let ts = TestStore::new();
    let id = ts.session("/tmp", &[user(HOSTILE)]).to_string();
    let status = crate::support::pty::run_raw(&ts, env!("CARGO_BIN_EXE_glrs-sessions"), &["status", &id]);
    assert_harmless(&status);
}

#[test]
fn keys_on_a_terminal_escape_key_names_but_pipes_keep_the_data() {
    let ts = TestStore::new();
    let id = ts.session("/tmp", &[user("hi")]);
    let key = "hook:\x1b]0;pwned\x07";
    ts.store.set_key(key, &id).unwrap();
    let shown = crate::support::pty::run_raw(&ts, env!("CARGO_BIN_EXE_glrs-sessions"), &["keys"]);
    assert_harmless(&shown);
    let piped = ts.sessions().arg("keys").output().unwrap();
    assert!(stdout_of(&piped).starts_with(&format!("{key}\t{id}\t")), "{}", stdout_of(&piped));
}

/// Issue 31, item 16: a Claude Code transcript whose prompt (the title)
/// and file name carry escapes: `import`'s rows and errors on a terminal
/// show them; piped rows keep the data.
#[test]
fn import_rows_and_errors_on_a_terminal_escape_what_the_source_says() {
    let ts = TestStore::new();
    let src = ts.dir.path().join("sources");
    std::fs::create_dir_all(&src).unwrap();
    let first = crate::hostile_input::claude_line("user", "u1", None, "/w", HOSTILE, "");
    let reply = crate::hostile_input::claude_line("assistant", "a1", Some("u1"), "/w", "ok", "claude-x");
    std::fs::write(src.join("good.jsonl"), format!("{first}{reply}")).unwrap();
    std::fs::write(src.join("bad\x1b]0;pwned\x07.jsonl"), "not json at all\n").unwrap();
    let sessions = env!("CARGO_BIN_EXE_glrs-sessions");
    let shown = crate::support::pty::run_raw(&ts, sessions, &["import", "--from", "claude", src.to_str().unwrap()]);
    assert_harmless(&shown);
    assert!(shown.contains("marker-end") && shown.contains("not a claude transcript"), "{shown:?}");
    // Piped: the title as imported (tabs and line breaks aside).
    let again = ts.dir.path().join("again");
    std::fs::create_dir_all(&again).unwrap();
    std::fs::write(again.join("good.jsonl"), format!("{first}{reply}")).unwrap();
    let piped = ts.sessions().args(["import", "--from", "claude", again.to_str().unwrap()]).output().unwrap();
    assert!(stdout_of(&piped).contains(HOSTILE), "{}", stdout_of(&piped));
}

/// `export` to a terminal shows a reply's escapes; to a pipe it is the data.
#[test]
fn export_to_a_terminal_escapes_but_a_pipe_gets_the_transcript() {
    let ts = TestStore::new();
    let id = ts.session("/tmp", &[user("hi"), notice(HOSTILE)]).to_string();
    let sessions = env!("CARGO_BIN_EXE_glrs-sessions");
    for format in ["md", "html"] {
        let shown = crate::support::pty::run_raw(&ts, sessions, &["export", &id, "--format", format]);
        assert_harmless(&shown);
    }
    let piped = ts.sessions().args(["export", &id]).output().unwrap();
    assert!(stdout_of(&piped).contains(HOSTILE));
}

/// The REPL's prompt names the model of the session resumed: an imported
/// session's model id (`message.model` of the source) carried OSC 52.
#[test]
fn the_repl_prompt_shows_an_imported_model_ids_escapes() {
    let (ts, _server) = store_and_server();
    let src = ts.dir.path().join("hostile.jsonl");
    let model = "claude-x\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07";
    let lines = [
        crate::hostile_input::claude_line("user", "u1", None, "/w", "hello", ""),
        crate::hostile_input::claude_line("assistant", "a1", Some("u1"), "/w", "hi", model),
    ];
    std::fs::write(&src, lines.concat()).unwrap();
    let out = ts.sessions().args(["import", "--from", "claude", src.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let id = stdout_of(&out).split('\t').next().unwrap().to_string();
    let mut p = crate::support::pty::chat(&ts, &["--resume", &id], &[("ANTHROPIC_API_KEY", "sk-ant-test")], true);
    let shown = p.exp_string("% > ").expect("the prompt");
    p.send_line("/status").unwrap();
    let status = p.exp_string("% > ").expect("the prompt after /status");
    p.send_line("/quit").unwrap();
    let rest = p.exp_eof().expect("exit");
    let all = format!("{shown}% > {status}{rest}");
    assert_harmless(&all);
    assert!(all.contains("claude-x^[]52;c;ZXZpbA==^G"), "{all:?}");
}
