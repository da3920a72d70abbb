//! `glrs-chat --continue` beside session files it cannot read: a corrupt
//! file that may be this folder's newest session is named in a warning, and
//! the newest readable session here is resumed (one bad session never hides
//! the others, nor silently stands in for one).

use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

#[test]
fn continue_names_a_corrupt_file_that_may_be_newer_and_resumes_the_newest_readable() {
    let (ts, server) = store_and_server();
    let project = tempfile::tempdir().unwrap();
    let chat = |args: &[&str]| ts.chat().current_dir(project.path()).args(args).output().unwrap();
    server.push(Reply::sse(openai_text(&["a"], 1, 1, 0)));
    assert!(chat(&["-m", "openai/gpt-4.1", "-p", "first"]).status.success());
    let (id, _) = ts.only_session();
    // Written after that session's last update: it may be a newer session
    // here, which --continue cannot read.
    let corrupt = ts.write_raw(&ts.sessions_dir(), "ffff0006", "{\"schema\":2,\"id\":\"ffff0006\",,}");
    // Older than that session: whatever it was, it is not the newest.
    let old = ts.write_raw(&ts.sessions_dir(), "eeee0005", "{\"schema\":2,\"id\":\"eeee0005\",,}");
    let long_ago = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(long_ago).unwrap();

    server.push(Reply::sse(openai_text(&["b"], 1, 1, 0)));
    let out = chat(&["--continue", "-p", "again"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "b\n");
    let err = stderr_of(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("glrs-chat: warning: ")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains(&*corrupt.to_string_lossy()), "{err}");
    assert!(warnings[0].contains(&id), "names the session resumed instead: {err}");
    assert!(!err.contains(&*old.to_string_lossy()), "{err}");
    // The readable session was the one resumed.
    let text = std::fs::read_to_string(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    assert!(text.contains("again"), "{text}");

    // With no readable session here, any unreadable file may have been
    // one: each is named before the refusal.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = ts.chat().current_dir(elsewhere.path()).args(["--continue", "-p", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.lines().last().unwrap().contains("nothing to continue"), "{err}");
    for bad in [&corrupt, &old] {
        assert!(
            err.lines().any(|l| l.starts_with("glrs-chat: warning: ") && l.contains(&*bad.to_string_lossy())),
            "{err}"
        );
    }
}

#[test]
fn continue_and_the_picker_name_a_session_open_elsewhere_and_offer_the_fork_and_the_next() {
    // Issue 24.10.
    let (ts, server) = store_and_server();
    let project = tempfile::tempdir().unwrap();
    let chat = |args: &[&str]| ts.chat().current_dir(project.path()).args(args).output().unwrap();
    for text in ["older", "newer"] {
        server.push(Reply::sse(openai_text(&["a"], 1, 1, 0)));
        assert!(chat(&["-m", "openai/gpt-4.1", "-p", text]).status.success());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let listed = json_of(&ts.sessions().args(["ls", "--json"]).output().unwrap());
    let ids: Vec<String> = listed.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    let (newer, older) = (&ids[0], &ids[1]);
    let held = ts.store.open_lock(&glrs::SessionId::parse(newer).unwrap()).unwrap();

    let out = chat(&["--continue", "-p", "again"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.contains(&format!("session {newer} is open in another program")), "{err}");
    assert!(err.contains(&format!("glrs-fork {newer}")), "the fork command: {err}");
    assert!(err.contains(&format!("glrs-chat --resume {older}")), "the next one here: {err}");

    // The picker says so and asks again: the next pick opens.
    let mut p = crate::support::pty::chat(&ts, &["--resume"], &[], false);
    p.exp_string("open which").unwrap();
    p.send_line("1").unwrap();
    p.exp_string(&format!("session {newer} is open in another program")).unwrap();
    p.exp_string(&format!("glrs-fork {newer}")).unwrap();
    p.exp_string("open which").unwrap();
    p.send_line("2").unwrap();
    p.exp_string(&format!("session {older}")).unwrap();
    crate::support::pty::prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    ts.release(held, &glrs::SessionId::parse(newer).unwrap());
}
