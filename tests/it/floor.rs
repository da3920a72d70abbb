//! What a one-shot turn asks of the system (issue 32, item 12), seen with
//! strace: the files it looks at. Speed itself is measured in
//! `benches/chat.rs`, never timed here.

use crate::reliability::require_strace;
use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;

/// A plain-HTTP endpoint needs no TLS: the system's roots (`/etc/ssl`) are
/// read at the first TLS handshake, never for an `http://` one (issue 32:
/// they were a third of a one-shot turn's system calls).
#[test]
fn an_http_endpoint_never_reads_the_tls_roots() {
    require_strace();
    let roots = std::fs::read_dir("/etc/ssl/certs").map(|d| d.count()).unwrap_or(0);
    assert!(roots > 0, "this test shows /etc/ssl is not read, so it needs the system's roots there (ca-certificates)");
    let (ts, server) = store_and_server();
    server.push(Reply::sse(openai_text(&["plain"], 10, 2, 0)));
    let trace = ts.dir.path().join("files.trace");
    let out = ts
        .std_cmd("strace")
        .args(["-f", "-qq", "-e", "trace=%file", "-o"])
        .arg(&trace)
        .args([env!("CARGO_BIN_EXE_glrs-chat"), "-p", "hi", "-m", "openai/gpt-4.1"])
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "plain\n");
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("config.json"), "strace saw the chat's files: {text}");
    let tls: Vec<&str> = text.lines().filter(|l| l.contains("\"/etc/ssl")).collect();
    assert!(tls.is_empty(), "{} look(s) under /etc/ssl for an http:// endpoint:\n{}", tls.len(), tls.join("\n"));
}
