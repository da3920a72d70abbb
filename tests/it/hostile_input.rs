//! Hostile input that is not the sandbox itself (issue 31): what the model
//! reads and what another agent's transcript carries, replayed end to end.

use crate::agent::{agent, call, write};
use crate::support::mock::Reply;
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// Issue 31, item 17: the model `cat -n`s a private key (no END line in
/// view: `head -4`) and prints an AWS secret under YAML's
/// `secret-access-key:`; no file glrs wrote holds either.
#[test]
fn a_numbered_key_body_and_a_yaml_aws_secret_never_reach_the_session_file() {
    let (ts, server, proj) = agent_setup(json!({}));
    let body =
        ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "AAAAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQ", "AAABgQC7vq4Nz"];
    let pem = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n", body.join("\n"));
    write(&proj, "id_ed25519", pem.as_bytes());
    let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    write(&proj, "creds.yaml", format!("aws:\n  secret-access-key: {secret}\n").as_bytes());
    call(&server, 1, "bash", json!({"command": "cat -n id_ed25519 | head -4; sed 's/^/    /' id_ed25519 | head -3"}));
    call(&server, 2, "bash", json!({"command": "cat creds.yaml"}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", "look around"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    // The model saw the real text (redaction is for what is written).
    let seen = server.model_requests()[1].body.to_string();
    assert!(seen.contains(body[1]), "the command did not print the key: {seen}");
    // Everything glrs wrote: the temporary folder less the project's own files.
    let all: String = ts
        .snapshot()
        .into_iter()
        .filter(|(path, _)| !path.starts_with(&proj))
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    assert!(
        all.contains("[REDACTED:private-key]") && all.contains("[REDACTED:aws]"),
        "no redaction in what glrs wrote"
    );
    for line in body.iter().chain([&secret]) {
        assert!(!all.contains(line), "{line} reached a file glrs wrote");
    }
}

/// Issue 31, item 15: a sparse 64 GB file in the workspace aborted the chat
/// when `grep` read it whole. Now the search streams it: the chat lives on
/// to read its own peak memory (`VmHWM` of `/proc/self/status`: the `read`
/// tool runs in the chat's process), which stays far below the file.
#[test]
fn grep_over_a_sparse_64_gb_file_leaves_the_chat_alive_and_small() {
    let (ts, server, proj) = agent_setup(json!({}));
    let sparse = std::fs::File::create(proj.join("huge.log")).unwrap();
    sparse.set_len(64 << 30).unwrap();
    write(&proj, "notes.txt", b"needle in a haystack\n");
    call(&server, 1, "grep", json!({"pattern": "needle"}));
    call(&server, 2, "read", json!({"path": "/proc/self/status"}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["-p", "search"]);
    assert!(out.status.success(), "the chat died: {}", stderr_of(&out));
    let results = crate::agent::tool_entries(&ts);
    assert_eq!(results[0].1, "notes.txt:1:needle in a haystack\n", "{results:?}");
    let peak_kb: u64 = results[1]
        .1
        .lines()
        .find_map(|l| l.split_once("VmHWM:"))
        .and_then(|(_, v)| v.split_whitespace().find_map(|w| w.parse().ok()))
        .unwrap_or_else(|| panic!("no VmHWM in {:?}", results[1].1));
    assert!(peak_kb < 512 * 1024, "the chat's peak memory was {peak_kb} kB");
}

/// Issue 31, item 11: MCP servers and hooks started in the workspace, so a
/// module the model planted there ran, unsandboxed, at the next chat
/// start (`python3 -m` puts the cwd first on its path). Now they start in
/// `/` unless their config names a `cwd`.
#[test]
fn a_module_planted_in_the_workspace_is_not_run_by_the_next_chat_start() {
    require("python3");
    let (ts, server, proj) = agent_setup(json!({
        "mcpServers": {"notes": {"command": "python3", "args": ["-m", "notes_mcp"], "startupTimeoutSec": 10}},
        "hooks": {"session_start": [{"command": "python3 -m notes_hook"}]},
    }));
    let marker = |name: &str| ts.dir.path().join(name);
    for (n, (module, ran)) in [("notes_mcp.py", "mcp-ran"), ("notes_hook.py", "hook-ran")].into_iter().enumerate() {
        let body = format!("open({:?}, 'w').write('ran')\n", marker(ran).display().to_string());
        call(&server, n + 1, "write", json!({"path": module, "content": body}));
    }
    server.push(Reply::sse(openai_text(&["planted"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["-p", "take notes"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(proj.join("notes_mcp.py").is_file() && proj.join("notes_hook.py").is_file(), "the model planted both");
    // The next chat in the same folder.
    server.push(Reply::sse(openai_text(&["hello"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("No module named notes_mcp"), "the server started in /: {}", stderr_of(&out));
    for ran in ["mcp-ran", "hook-ran"] {
        assert!(!marker(ran).exists(), "{ran}: the planted module ran at the chat's start");
    }
}

/// A Claude Code transcript line: `kind` (`user` or `assistant`) `uuid`
/// under `parent`, in `cwd`, saying `text` (an assistant's by `model`).
pub(crate) fn claude_line(kind: &str, uuid: &str, parent: Option<&str>, cwd: &str, text: &str, model: &str) -> String {
    let message = match kind {
        "assistant" => json!({"id": format!("msg_{uuid}"), "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 2}}),
        _ => json!({"role": "user", "content": text}),
    };
    let line = json!({"parentUuid": parent, "isSidechain": false, "type": kind, "uuid": uuid, "cwd": cwd,
        "sessionId": "5a0c1e2d-0000-4000-8000-000000000001", "version": "2.1.0",
        "timestamp": "2026-11-01T10:00:00.000Z", "message": message});
    format!("{line}\n")
}
