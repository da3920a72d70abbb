//! `glrs-sessions export`: Markdown, JSON Lines, and the HTML page opened
//! in headless Chromium (Debian's `chromium`), which must show every
//! message and log no console message (no script error, nothing refused by
//! the page's no-fetch policy).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::support::*;

const ENTRIES: &[&str] = &[
    r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"Why does the login test fail?\nIt broke today."}"#,
    r#"{"type":"reasoning","at":"2026-11-01T10:00:02.000Z","text":"Look at the redirect first."}"#,
    r#"{"type":"assistant","at":"2026-11-01T10:00:03.000Z","text":"Let me read the test.","model":"openai/gpt-4.1","toolCalls":[{"id":"c1","name":"read","input":{"path":"tests/login.ts"}}],"stopReason":"tool_use"}"#,
    r#"{"type":"tool","at":"2026-11-01T10:00:04.000Z","id":"c1","name":"read","input":{"path":"tests/login.ts"},"result":"expect(redirect).toBe('/home')","isError":false}"#,
    r#"{"type":"usage","at":"2026-11-01T10:00:04.000Z","model":"openai/gpt-4.1","inputTokens":100,"outputTokens":20}"#,
    r#"{"type":"assistant","at":"2026-11-01T10:00:05.000Z","text":"The **redirect** target changed:\n\n1. update `redirect.ts`\n2. rerun\n\n<img src=\"https://example.com/track.png\"> ![logo](https://example.com/logo.png)","model":"openai/gpt-4.1","toolCalls":[],"stopReason":"stop"}"#,
];

#[test]
fn markdown_and_jsonl_on_stdout_and_into_files() {
    let ts = TestStore::new();
    ts.write_fixed("abcd0001", "2026-11-01T10:00:05.000Z", "/w", ENTRIES);
    let out = ts.sessions().args(["export", "abcd"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let md = stdout_of(&out);
    assert!(md.starts_with("# Why does the login test fail?\n"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with("## [")).count(), 5, "{md}");
    assert!(md.contains("```json\n{\n  \"path\": \"tests/login.ts\"\n}\n```"), "{md}");
    assert!(md.contains("```text\nexpect(redirect).toBe('/home')\n```"), "{md}");

    let out = ts.sessions().args(["export", "abcd", "--format", "jsonl"]).output().unwrap();
    let lines: Vec<serde_json::Value> = stdout_of(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), ENTRIES.len());
    assert_eq!(lines[3]["result"], "expect(redirect).toBe('/home')");

    // The format follows the file's extension; the file is private.
    let file = ts.dir.path().join("t.html");
    let out = ts.sessions().args(["export", "abcd0001", "-o"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "");
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("<!DOCTYPE html>"));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

    let out = ts.sessions().args(["export", "ffff0000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("ffff0000"), "{}", stderr_of(&out));
}

#[test]
fn the_html_page_renders_in_headless_chromium_with_no_console_errors() {
    require("chromium");
    let ts = TestStore::new();
    ts.write_fixed("abcd0001", "2026-11-01T10:00:05.000Z", "/w", ENTRIES);
    let page = ts.dir.path().join("session.html");
    let out = ts.sessions().args(["export", "abcd0001", "--format", "html", "-o"]).arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));

    let profile = ts.dir.path().join("chromium-profile");
    let mut cmd = std::process::Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("file://{}", page.display()));
    let out = run_bounded(&mut cmd, Duration::from_secs(90), "chromium to load the page and print its DOM");
    let (dom, log) = (stdout_of(&out), String::from_utf8_lossy(&out.stderr).into_owned());

    for text in [
        "Why does the login test fail?\nIt broke today.",
        "Let me read the test.",
        "expect(redirect).toBe('/home')",
        "<strong>redirect</strong>",
        "<li>update <code>redirect.ts</code></li>",
        "Look at the redirect first.",
    ] {
        assert!(dom.contains(text), "{text:?} is not on the page:\n{dom}");
    }
    // Nothing was fetched: the <img> is shown as text, the image is a link.
    assert!(!dom.contains("<img"), "{dom}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page logged to the console: {console:#?}");
}
