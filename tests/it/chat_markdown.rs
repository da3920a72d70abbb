//! Markdown in the REPL, through a pseudo-terminal 60 columns wide: a long
//! paragraph streamed by the model is drawn again wrapped at a space to the
//! terminal's width, with its bold and italic styled; the replay of the
//! resumed session is styled the same way; with NO_COLOR the text is plain.

use rexpect::reader::Options;
use rexpect::session::{PtySession, spawn_with_options};

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

const PIECES: &[&str] = &[
    "This reply is a **long paragraph** with *italic words* in it, ",
    "long enough that a terminal sixty columns wide must wrap it ",
    "more than once before it ends here.",
];
const WORDS: &str = "This reply is a long paragraph with italic words in it, long enough that a terminal sixty \
                     columns wide must wrap it more than once before it ends here.";

/// `glrs-chat ARGS` in a 60x40 terminal, escapes kept.
fn chat(ts: &TestStore, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut cmd = ts.std_cmd("sh");
    cmd.args(["-c", "stty cols 60 rows 40; exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_glrs-chat")])
        .args(args)
        .env("TERM", "xterm-256color")
        .env("OPENAI_API_KEY", OPENAI_KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    spawn_with_options(cmd, Options::new().timeout_ms(Some(20_000))).expect("spawn in a pty")
}

fn prompt(p: &mut PtySession) -> String {
    let (before, _) = p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 \d+% > ").expect("the prompt");
    before
}

/// What a terminal shows of `raw` once SGR styles are dropped: the lines
/// drawn after the last erasure (`ESC[J`).
fn drawn_lines(raw: &str) -> Vec<String> {
    let after = raw.rsplit("\x1b[J").next().unwrap_or(raw);
    let sgr = regex::Regex::new("\x1b\\[[0-9;?]*[a-zA-Z]").unwrap();
    sgr.replace_all(after, "").split("\r\n").map(|l| l.trim_end_matches('\r').to_string()).collect()
}

fn quit(mut p: PtySession) {
    p.send_line("/quit").unwrap();
    p.exp_eof().expect("exit after /quit");
}

#[test]
fn a_long_paragraph_is_wrapped_and_styled_and_so_is_the_replay() {
    let (ts, server) = store_and_server();
    server.push(Reply::slow_sse(openai_text(PIECES, 10, 40, 0), 20));

    let mut p = chat(&ts, &["-m", "openai/gpt-4.1"], &[]);
    prompt(&mut p);
    p.send_line("write a long paragraph").unwrap();
    let shown = prompt(&mut p);
    assert!(shown.contains("\x1b[1mlong paragraph"), "bold: {shown:?}");
    assert!(shown.contains("\x1b[3mitalic words"), "italic: {shown:?}");
    let lines: Vec<String> = drawn_lines(&shown).into_iter().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 3, "wrapped into several lines: {lines:?}");
    assert!(lines.iter().all(|l| l.chars().count() <= 60), "none wider than the terminal: {lines:?}");
    assert_eq!(lines.join(" "), WORDS, "wrapped at spaces, nothing lost: {lines:?}");
    quit(p);

    let (id, _) = ts.only_session();
    let mut p = chat(&ts, &["--resume", &id], &[]);
    let replay = prompt(&mut p);
    assert!(replay.contains("\x1b[1m>\x1b[0m write a long paragraph"), "{replay:?}");
    assert!(replay.contains("\x1b[1mlong paragraph") && replay.contains("\x1b[3mitalic words"), "{replay:?}");
    let sgr = regex::Regex::new("\x1b\\[[0-9;?]*[a-zA-Z]").unwrap();
    let plain = sgr.replace_all(&replay, "");
    let reply_lines: Vec<&str> =
        plain.split("\r\n").filter(|l| WORDS.contains(l.trim()) && l.trim().len() > 10).collect();
    assert!(reply_lines.len() >= 3 && reply_lines.iter().all(|l| l.len() <= 60), "{plain:?}");
    quit(p);

    // NO_COLOR: the replay is the text as written.
    let mut p = chat(&ts, &["--resume", &id], &[("NO_COLOR", "1")]);
    let replay = prompt(&mut p);
    assert!(replay.contains("**long paragraph** with *italic words*"), "{replay:?}");
    assert!(!replay.contains("\x1b[1mlong"), "{replay:?}");
    quit(p);
}
