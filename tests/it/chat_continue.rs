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
