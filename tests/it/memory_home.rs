//! Issue 33 item 5: the memory flush's notes go to glrs's data folder
//! (named for the workspace), never into the user's repository, and the
//! flush's prompt (glrs's, not the person's) is never shown as typed: not
//! by `show`, not in the REPL's replay on resume.

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

/// Every file under `dir`.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_under(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

#[test]
fn notes_stay_out_of_the_repository_and_the_flush_prompt_is_never_shown_as_typed() {
    require("git");
    let (ts, server) = store_and_server();
    small_window(&ts, &server, true);
    let project = ts.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let git = |args: &[&str]| std::process::Command::new("git").current_dir(&project).args(args).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    server.push(text_reply("noted", 2500));
    server.push(Reply::sse(openai_tool_call("m1", "memory_append", &["{\"text\": \"- the parser is src/parse.rs\"}"])));
    server.push(text_reply("NO_REPLY", 2600));
    let out =
        ts.chat().current_dir(&project).args(["-m", "openai/gpt-4.1", "-p", "remember the parser"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(server.model_requests().len(), 3, "the turn and the flush's two steps");
    // Nothing new in the repository; the note is in the data folder, and said to be.
    assert_eq!(String::from_utf8_lossy(&git(&["status", "--porcelain"]).stdout), "", "git status is clean");
    let notes = files_under(&ts.data_home().join("glrs/memory"));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(std::fs::read_to_string(&notes[0]).unwrap(), "- the parser is src/parse.rs\n");
    let dir = notes[0].parent().unwrap().to_string_lossy().into_owned();
    assert!(stderr_of(&out).contains(&format!("notes saved in {dir}")), "{}", stderr_of(&out));
    // show marks the flush's prompt as glrs's.
    let (id, _) = ts.only_session();
    let shown = stdout_of(&ts.sessions().args(["show", &id]).output().unwrap());
    let heads: Vec<&str> = shown.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(heads.iter().filter(|h| h.contains("] user ·")).count(), 1, "one typed message: {shown}");
    assert!(heads.iter().any(|h| h.contains("glrs prompt (memoryFlush, not typed)")), "{shown}");
    // The REPL's replay on resume shows the person's message, not the flush's.
    let mut cmd = ts.std_cmd(env!("CARGO_BIN_EXE_glrs-chat"));
    cmd.current_dir(&project).args(["--resume", &id]).env("TERM", "xterm-256color").env("OPENAI_API_KEY", OPENAI_KEY);
    let mut p = crate::support::pty::spawn(cmd, false);
    let (replay, _) = p.exp_regex(r"[0-9a-f]{8} gpt-4\.1 \d+% > ").expect("the prompt");
    assert!(replay.contains("remember the parser"), "{replay}");
    assert!(!replay.contains("Pre-compaction") && !replay.contains("NO_REPLY"), "{replay}");
    assert!(!replay.contains("memory_append"), "the flush's call is not the person's turn: {replay}");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}
