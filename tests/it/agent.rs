//! glrs-chat as an agent (SPEC 14) against the mock model server, in
//! temporary folders: each built-in tool's happy path and errors, what is
//! offered and the system prompt, permissions in one-shot mode, redaction
//! of everything written, and compaction over a session full of tool calls.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support;
use crate::support::mock::{MockServer, Reply};
use crate::support::procs;
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// The config of tests of asking: with the sandbox (SPEC 17) on, a
/// sandboxed `bash` call and a write in the cwd need no prompt.
fn sandbox_off() -> Value {
    json!({"sandbox": {"mode": "off"}})
}

pub(crate) fn call(server: &MockServer, n: usize, name: &str, input: Value) {
    server.push(Reply::sse(openai_tool_call(&format!("call_{n}"), name, &[&input.to_string()])));
}

pub(crate) fn agent(ts: &TestStore, proj: &Path, args: &[&str]) -> std::process::Output {
    ts.chat()
        .current_dir(proj)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["-m", "openai/gpt-4.1"])
        .args(args)
        .output()
        .unwrap()
}

/// The `tool` entries of the only session: (name, result, isError).
pub(crate) fn tool_entries(ts: &TestStore) -> Vec<(String, String, bool)> {
    let (_, session) = ts.only_session();
    session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool")
        .map(|e| (e["name"].as_str().unwrap().into(), e["result"].as_str().unwrap().into(), e["isError"] == true))
        .collect()
}

pub(crate) fn write(proj: &Path, path: &str, text: &[u8]) {
    let full = proj.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

#[test]
fn every_tool_runs_through_the_registry_with_its_errors() {
    let (ts, server, proj) = agent_setup(json!({}));
    write(&proj, ".gitignore", b"target/\n");
    write(&proj, "src/main.rs", b"fn main() {\n    println!(\"hello\");\n}\n");
    write(&proj, "src/twice.txt", b"same\nsame\n");
    write(&proj, "target/gen.rs", b"println!(\"hello\") generated\n");
    write(&proj, "logo.png", b"\x89PNG\r\n\x1a\n\0\0\0binary");
    let steps = [
        ("read", json!({"path": "src/main.rs"})),
        ("read", json!({"path": "src/missing.rs"})),
        ("read", json!({"path": "logo.png"})),
        ("edit", json!({"path": "src/main.rs", "oldText": "goodbye", "newText": "x"})),
        ("edit", json!({"path": "src/twice.txt", "oldText": "same", "newText": "x"})),
        ("edit", json!({"path": "src/main.rs", "oldText": "hello", "newText": "hi"})),
        ("write", json!({"path": "docs/notes.md", "content": "# notes\n"})),
        ("bash", json!({"command": "echo out; echo err >&2; exit 3"})),
        ("bash", json!({"command": "echo started; sleep 30", "timeout": 1})),
        ("bash", json!({"command": "seq 1 5000"})),
        ("grep", json!({"pattern": "println"})),
        ("find", json!({"pattern": "*.rs"})),
        ("ls", json!({})),
    ];
    for (i, (name, input)) in steps.iter().enumerate() {
        call(&server, i, name, input.clone());
    }
    server.push(Reply::sse(openai_text(&["All done."], 100, 3, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", "exercise the tools"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "All done.\n");

    let requests = server.model_requests();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["read", "write", "edit", "bash", "grep", "find", "ls", "task"]);
    let system = requests[0].body["messages"][0].clone();
    assert_eq!(system["role"], "system");
    let system = system["content"].as_str().unwrap();
    assert!(system.contains(&format!("Working directory: {}", proj.display())) && system.contains("bash"), "{system}");

    let tools = tool_entries(&ts);
    assert_eq!(tools.len(), steps.len(), "every call has its tool entry");
    let expect = |i: usize, error: bool, needle: &str| {
        let (name, result, is_error) = &tools[i];
        assert_eq!(name, steps[i].0);
        assert_eq!(*is_error, error, "{i} {name}: {result}");
        assert!(result.contains(needle), "{i} {name}: {needle:?} not in {result:?}");
    };
    expect(0, false, "fn main() {\n    println!(\"hello\");\n}\n");
    expect(1, true, "src/missing.rs: no such file");
    expect(2, true, "a PNG image");
    expect(3, true, "not found");
    expect(4, true, "2 matches");
    expect(5, false, "+    println!(\"hi\");");
    expect(6, false, "8 bytes to docs/notes.md");
    expect(7, true, "out\nerr\nexit code 3");
    expect(8, true, "started\ntimed out after 1 s");
    expect(9, false, "4999\n5000\nexit code 0");
    expect(10, false, "src/main.rs:2:    println!(\"hi\");");
    assert!(!tools[10].1.contains("target/"), "grep skips what .gitignore excludes: {}", tools[10].1);
    expect(11, false, "src/main.rs");
    assert!(!tools[11].1.contains("gen.rs"), "find skips what .gitignore excludes");
    expect(12, false, ".gitignore\ndocs/\nlogo.png\nsrc/\ntarget/");
    assert_eq!(std::fs::read_to_string(proj.join("docs/notes.md")).unwrap(), "# notes\n");
    assert_eq!(std::fs::read_to_string(proj.join("src/twice.txt")).unwrap(), "same\nsame\n");

    // The long output: its end for the model, all of it in a private file.
    let long = &tools[9].1;
    assert!(!long.contains("\n1\n2\n") && long.lines().count() < 2_010, "only the last part");
    let file = long.split("the whole output is in ").nth(1).and_then(|r| r.split(']').next()).unwrap();
    let (id, _) = ts.only_session();
    let own = ts.data_home().join("glrs/output").join(&id);
    assert!(file.starts_with(&own.display().to_string()), "in the session's own output folder: {file}");
    let meta = std::fs::metadata(file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let whole = std::fs::read_to_string(file).unwrap();
    assert!(whole.starts_with("1\n2\n3\n") && whole.ends_with("5000\n"));

    // The model saw each result (the mock refuses a call without one).
    let last = &requests.last().unwrap().body;
    let results: Vec<&Value> = last["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), steps.len());
    assert!(results[3]["content"].as_str().unwrap().contains("not found"));
}

#[test]
fn one_shot_write_is_denied_without_allow_and_deny_beats_allow() {
    let (ts, server, proj) = agent_setup(sandbox_off());
    let write_call = json!({"path": "notes.txt", "content": "hello"});
    call(&server, 1, "write", write_call.clone());
    server.push(Reply::sse(openai_text(&["I could not write it."], 10, 2, 0)));
    let out = agent(&ts, &proj, &["-p", "write notes"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!proj.join("notes.txt").exists(), "the file is untouched");
    let reason = server.model_requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("--allow 'write:notes.txt'") && reason.contains("no terminal"), "{reason}");
    let tools = tool_entries(&ts);
    assert!(tools[0].2 && tools[0].1 == reason);

    // With --allow write it happens.
    let (ts, server, proj) = agent_setup(sandbox_off());
    call(&server, 1, "write", write_call.clone());
    server.push(Reply::sse(openai_text(&["Written."], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow", "write", "-p", "write notes"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(proj.join("notes.txt")).unwrap(), "hello");

    // permissions.deny beats --allow (and --allow-all).
    let (ts, server, proj) =
        agent_setup(json!({"permissions": {"deny": ["write:notes*"]}, "sandbox": {"mode": "off"}}));
    call(&server, 1, "write", write_call);
    call(&server, 2, "bash", json!({"command": "rm -rf ."}));
    server.push(Reply::sse(openai_text(&["Denied."], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow", "write", "--allow", "bash:echo *", "-p", "write notes"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!proj.join("notes.txt").exists());
    let tools = tool_entries(&ts);
    assert!(tools[0].2 && tools[0].1.contains("\"write:notes*\" in permissions.deny"), "{:?}", tools[0]);
    assert!(tools[1].2 && tools[1].1.contains("--allow 'bash:rm -rf .'"), "{:?}", tools[1]);

    // A bad rule is a usage error naming it.
    let out = agent(&ts, &proj, &["--allow", "bash:[", "-p", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("--allow \"bash:[\""), "{}", stderr_of(&out));
}

#[test]
fn no_tools_offers_none_and_disabled_globs_remove_tools() {
    let (ts, server, proj) = agent_setup(json!({"tools": {"disabled": ["bash", "w*"]}}));
    server.push(Reply::sse(openai_text(&["ok"], 10, 2, 0)));
    server.push(Reply::sse(openai_text(&["ok"], 10, 2, 0)));
    assert!(agent(&ts, &proj, &["-p", "one"]).status.success());
    assert!(agent(&ts, &proj, &["--no-tools", "-p", "two"]).status.success());
    let requests = server.model_requests();
    let names: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read", "edit", "grep", "find", "ls", "task"]);
    assert!(requests[1].body.get("tools").is_none());
}

#[test]
fn agents_md_and_the_saved_system_prompt_on_resume() {
    let (ts, server, proj) = agent_setup(json!({}));
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    write(&proj, "AGENTS.md", b"Run cargo test before you say done.");
    write(ts.dir.path(), "config/glrs/AGENTS.md", b"Answer in English.");
    server.push(Reply::sse(openai_text(&["first"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--system", "You are terse.", "-p", "hi"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, session) = ts.only_session();
    assert_eq!(session["system"], "You are terse.");
    server.push(Reply::sse(openai_text(&["second"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--resume", &id, "-p", "again"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    server.push(Reply::sse(openai_text(&["third"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--resume", &id, "--system", "You are chatty.", "-p", "more"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let systems: Vec<String> = server
        .model_requests()
        .iter()
        .map(|r| r.body["messages"][0]["content"].as_str().unwrap().to_string())
        .collect();
    for s in &systems[..2] {
        assert!(s.starts_with("You are terse.") && !s.contains("You are glrs"), "{s}");
    }
    assert!(systems[2].starts_with("You are chatty."));
    let global = systems[0].find("Answer in English.").unwrap();
    let local = systems[0].find("Run cargo test before you say done.").unwrap();
    assert!(global < local, "the config's AGENTS.md first: {}", systems[0]);
    assert_eq!(ts.only_session().1["system"], "You are chatty.");
}

#[test]
fn redaction_leaves_no_trace_under_the_data_folder() {
    // The key is passed to commands on purpose (children get none by
    // default), so a command can print it.
    let (ts, server, proj) = agent_setup(json!({"keepRecentTokens": 10, "childEnv": {"pass": ["OPENAI_API_KEY"]}}));
    let anthropic = format!("sk-ant-api03-{}", "Zq9".repeat(30));
    let prompt = format!("my keys are {anthropic} and {OPENAI_KEY}; check them");
    call(&server, 1, "bash", json!({"command": format!("echo {anthropic}; echo \"key=$OPENAI_API_KEY\"")}));
    server.push(Reply::sse(openai_text(&[&format!("Both printed: {anthropic}")], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", &prompt]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    // The model saw the real output: redaction is for what is written.
    let seen = server.model_requests()[1].body.to_string();
    assert!(seen.contains(&format!("key={OPENAI_KEY}")));
    let (id, session) = ts.only_session();
    let tool = session["events"].as_array().unwrap().iter().find(|e| e["type"] == "tool").unwrap().clone();
    assert_eq!(tool["result"], "[REDACTED:anthropic]\nkey=[REDACTED:OPENAI_API_KEY]\nexit code 0");
    // A second turn so compaction has something to fold, then an artifact.
    server.push(Reply::sse(openai_text(&["ok"], 10, 2, 0)));
    assert!(agent(&ts, &proj, &["--resume", &id, "-p", &"thanks a lot for all of it ".repeat(20)]).status.success());
    server.push(Reply::sse(openai_text(&["checked the keys\n## Goal\nkeys"], 10, 2, 0)));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(&id).output().unwrap();
    assert!(out.status.success() && stdout_of(&out).contains("compacted"), "{} {}", stdout_of(&out), stderr_of(&out));
    assert!(ts.dir.path().join("data/glrs/sessions/artifacts").join(&id).read_dir().unwrap().count() == 1);
    let all = ts.all_data_text();
    assert!(all.contains("[REDACTED:anthropic]"));
    assert!(!all.contains(&anthropic) && !all.contains("Zq9Zq9"), "an Anthropic key reached a file");
    assert!(!all.contains(OPENAI_KEY) && !all.contains("SECRET"), "the configured key reached a file");
}

/// Issue 20, item 8: the shapes that reached the session file and every
/// export. The model, scripted as hostile, reads a private key with
/// `limit: 4` (no END line in view), a file of keys after word characters
/// and inside escaped JSON, and calls a tool with a secret as an input key.
#[test]
fn redaction_gaps_replayed_leave_no_secret_in_the_file_or_any_export() {
    let (ts, server, proj) = agent_setup(json!({}));
    let body = [
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "AAAAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQ",
        "AAABgQC7vq4Nz",
        "Ym9keWxpbmU4",
    ];
    let pem = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n", body.join("\n"));
    write(&proj, "id_ed25519", pem.as_bytes());
    let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0Jb2sBCADXqPGPBODY\n=Ab12\n-----END PGP PRIVATE KEY BLOCK-----\n";
    write(&proj, "secring.asc", pgp.as_bytes());
    let ant = format!("sk-ant-api03-{}", "Hx4".repeat(20));
    let proj_key = format!("sk-proj-{}", "Mn8".repeat(20));
    let google = format!("AIza{}", "G".repeat(35));
    let keys = format!(
        "{{\"log\":\"json\\n{ant}\"}}\nhttps://x.test/?k%3D{ant}\nkey_{google}\n\"a\\t{proj_key}\"\n{{\\\"Authorization\\\": \\\"Bearer tok.EN-value9\\\"}}\n"
    );
    write(&proj, "keys.txt", keys.as_bytes());
    call(&server, 1, "read", json!({"path": "id_ed25519", "limit": 4}));
    call(&server, 2, "read", json!({"path": "secring.asc"}));
    call(&server, 3, "read", json!({"path": "keys.txt"}));
    call(&server, 4, "bash", json!({"command": "echo hi", (ant.clone()): "as a key"}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", "look around"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    // Everything glrs wrote: the temporary folder less the project's own files.
    let written: String = ts
        .snapshot()
        .into_iter()
        .filter(|(path, _)| !path.starts_with(&proj))
        .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    let mut texts = vec![written];
    for format in ["md", "html", "jsonl"] {
        let out = ts.cmd("glrs-sessions").args(["export", &id, "--format", format]).output().unwrap();
        assert!(out.status.success(), "export {format}: {}", stderr_of(&out));
        texts.push(stdout_of(&out));
    }
    let secrets = [body[0], body[1], body[2], "lQOYBF0Jb2sBCADXqPGPBODY", &ant, &proj_key, &google, "tok.EN-value9"];
    for (i, text) in texts.iter().enumerate() {
        assert!(text.contains("[REDACTED:"), "output {i} shows no redaction");
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} reached output {i} (files written, md, html, jsonl)");
        }
    }
}

/// Issue 20, item 9: `timeout 3 yes` left a 1 GB output file, unredacted,
/// forever. A command writing 40 MB with a key at its start and its end
/// leaves one file: capped (its head, a note, its tail), the keys redacted;
/// and cleanup removes output files older than `outputRetention`.
#[test]
fn a_huge_output_is_kept_capped_and_redacted_and_cleanup_removes_old_ones() {
    let (ts, server, proj) = agent_setup(json!({}));
    let ant = format!("sk-ant-api03-{}", "Pk2".repeat(20));
    let command = format!("echo {ant}; head -c 40000000 /dev/zero | tr '\\0' y; echo; echo {ant}");
    call(&server, 1, "bash", json!({"command": command}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", "make noise"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    let output_dir = ts.data_home().join("glrs/output").join(&id);
    let files: Vec<PathBuf> = std::fs::read_dir(&output_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let kept = std::fs::read(&files[0]).unwrap();
    assert!(kept.len() < 9 * 1024 * 1024, "the output file is capped: {} bytes", kept.len());
    let text = String::from_utf8_lossy(&kept);
    assert!(text.contains("bytes cut here: the output was 40000"), "the note says what was cut");
    assert!(!text.contains(&ant), "a key reached the output file");
    assert_eq!(text.matches("[REDACTED:anthropic]").count(), 2, "the head's key and the tail's");
    // The model was told where the whole is, and the tool entry too.
    let result = &tool_entries(&ts)[0].1;
    assert!(result.contains(&files[0].display().to_string()), "{}", &result[..200.min(result.len())]);

    // An output file from eight days ago goes; today's stays.
    let old = output_dir.join("bash-20200101T000000-old.log");
    std::fs::write(&old, "old output").unwrap();
    let eight_days = std::time::SystemTime::now() - std::time::Duration::from_secs(8 * 86_400);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(eight_days).unwrap();
    let cleanup = |args: &[&str]| {
        let out = ts
            .sessions()
            .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
            .arg("cleanup")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        stdout_of(&out)
    };
    let listed = cleanup(&["--json"]);
    assert!(listed.contains("old output") && listed.contains("-old.log"), "{listed}");
    assert!(!listed.contains(&files[0].file_name().unwrap().to_string_lossy().into_owned()), "{listed}");
    cleanup(&["--enforce"]);
    assert!(!old.exists(), "the old output file was removed");
    assert!(files[0].exists(), "today's output file stays");
}

#[test]
fn compaction_over_tool_calls_keeps_commands_and_paths() {
    let (ts, server, proj) = agent_setup(json!({"keepRecentTokens": 10}));
    write(&proj, "src/auth/redirect.ts", b"export const next = '/home';\n");
    call(&server, 1, "read", json!({"path": "src/auth/redirect.ts"}));
    call(&server, 2, "bash", json!({"command": "echo 3 tests failed; exit 1"}));
    call(&server, 3, "edit", json!({"path": "src/auth/redirect.ts", "oldText": "/home", "newText": "/dashboard"}));
    call(&server, 4, "bash", json!({"command": "echo all passed"}));
    server.push(Reply::sse(openai_text(&["Fixed the redirect."], 10, 2, 0)));
    let out = agent(&ts, &proj, &["--allow-all", "-p", "fix the failing auth test"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    server.push(Reply::sse(openai_text(&["ok"], 10, 2, 0)));
    assert!(agent(&ts, &proj, &["--resume", &id, "-p", &"thanks a lot for all of it ".repeat(20)]).status.success());
    server.push(Reply::sse(openai_text(&["fixed the auth redirect\n## Goal\nmake the auth tests pass"], 10, 2, 0)));
    let out = ts.cmd("glrs-compact").env("OPENAI_API_KEY", OPENAI_KEY).arg(&id).output().unwrap();
    assert!(out.status.success() && stdout_of(&out).contains("compacted"), "{} {}", stdout_of(&out), stderr_of(&out));
    let dir = ts.dir.path().join("data/glrs/sessions/artifacts").join(&id);
    let artifact = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(artifact).unwrap();
    for needle in [
        "[tool-call read]\n{\"path\":\"src/auth/redirect.ts\"}",
        "[tool-call bash]\n{\"command\":\"echo 3 tests failed; exit 1\"}",
        "[tool-result bash]\n3 tests failed\nexit code 1",
        "[tool-result edit]",
    ] {
        assert!(text.contains(needle), "{needle:?} not in the artifact:\n{text}");
    }
    let session = ts.only_session().1;
    let brief = session["events"].as_array().unwrap().iter().find(|e| e["type"] == "compacted").unwrap()["brief"]
        .as_str()
        .unwrap()
        .to_string();
    let refs = brief.split("## Exact references").nth(1).expect("an Exact references section");
    for needle in ["src/auth/redirect.ts", "echo 3 tests failed; exit 1", "echo all passed"] {
        assert!(refs.contains(needle), "{needle:?} not in the references:\n{refs}");
    }

    // `glrs-sessions show` prints the calls and results readably.
    let out = ts.sessions().args(["show", &id]).output().unwrap();
    let shown = stdout_of(&out);
    assert!(shown.contains("$ echo 3 tests failed; exit 1") && shown.contains("read src/auth/redirect.ts"), "{shown}");
    assert!(shown.contains("tool bash (call_2) · error"), "{shown}");
}

/// The REPL in a pseudo-terminal: the permission prompt answered `y`, then
/// `a` (the same command is not asked again), then `n` with a reason.
#[test]
fn the_repl_asks_and_takes_y_a_and_n() {
    let (ts, server, _) = agent_setup(sandbox_off());
    let cwd = ts.dir.path();
    call(&server, 1, "bash", json!({"command": "echo one"}));
    call(&server, 2, "bash", json!({"command": "echo two"}));
    call(&server, 3, "bash", json!({"command": "echo two"}));
    call(&server, 4, "write", json!({"path": "notes.txt", "content": "hello"}));
    server.push(Reply::sse(openai_text(&["Finished."], 10, 2, 0)));
    let mut p = support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    support::pty::prompt(&mut p);
    p.send_line("do things").unwrap();
    p.exp_string("bash  echo one").unwrap();
    p.exp_string("allow bash?").unwrap();
    p.send("y\r").unwrap();
    p.flush().unwrap();
    p.exp_string("exit code 0").unwrap();
    p.exp_string("allow bash?").unwrap();
    p.send("a\r").unwrap();
    p.flush().unwrap();
    let between = p.exp_string("allow write?").unwrap();
    assert_eq!(between.matches("allow bash?").count(), 0, "echo two was allowed for the session: {between}");
    assert_eq!(between.matches("bash  echo two").count(), 1, "ran without asking: {between}");
    p.send("use notes.md instead\r").unwrap();
    p.flush().unwrap();
    p.exp_string("Finished.").unwrap();
    support::pty::prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    assert!(!cwd.join("notes.txt").exists());
    let tools = tool_entries(&ts);
    let got: Vec<(&str, bool)> = tools.iter().map(|(n, _, e)| (n.as_str(), *e)).collect();
    assert_eq!(got, [("bash", false), ("bash", false), ("bash", false), ("write", true)]);
    assert_eq!(tools[0].1, "one\nexit code 0");
    assert_eq!(tools[3].1, "denied by the user, who said: use notes.md instead");
}

/// Esc during `bash` kills its whole process group: a grandchild started
/// with `&` does not survive, and the turn ends with an interrupted result.
#[test]
fn esc_during_bash_leaves_no_process_behind() {
    let (ts, server, _) = agent_setup(json!({}));
    let cwd = ts.dir.path();
    // Marked with their files' paths: the `$$` of a sandboxed command is its PID namespace's.
    let (bg, fg) = (cwd.join("bg.pid").display().to_string(), cwd.join("sh.pid").display().to_string());
    let mark = procs::MARK;
    let command = format!("{mark}='{bg}' sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; {mark}='{fg}' sleep 300");
    call(&server, 1, "bash", json!({"command": command}));
    let mut p = support::pty::chat(&ts, &["-m", "openai/gpt-4.1", "--allow-all"], &[], false);
    support::pty::prompt(&mut p);
    p.send_line("start something long").unwrap();
    p.exp_string("bash  GLRS_TEST_M").unwrap();
    let limit = std::time::Duration::from_secs(15);
    let pids = [
        procs::wait_for_marked(&cwd.join("bg.pid"), limit, "the command's background sleep")[0],
        procs::wait_for_marked(&cwd.join("sh.pid"), limit, "the command's foreground sleep")[0],
    ];
    assert!(pids.iter().all(|pid| procs::alive(*pid)), "both run before Esc");
    p.send("\x1b").unwrap();
    p.flush().unwrap();
    p.exp_string("interrupted").unwrap();
    support::pty::prompt(&mut p);
    procs::wait_until_gone(&pids, std::time::Duration::from_secs(5), "the command's processes after Esc");
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    let tools = tool_entries(&ts);
    assert_eq!(tools.len(), 1);
    assert!(tools[0].2 && tools[0].1.contains("interrupted"), "{:?}", tools[0]);
    assert_eq!(server.model_requests().len(), 1, "the turn ended at Esc");
}

/// A secret that reached a session file some other way (an older glrs, a
/// hand edit) is redacted from the artifact and brief compaction writes.
#[test]
fn compaction_redacts_what_it_copies() {
    let (ts, server, proj) = agent_setup(json!({"keepRecentTokens": 10}));
    let token = format!("ghp_{}", "Q7w".repeat(12));
    let cwd = proj.display().to_string();
    // The replaced message is longer than the brief: a compaction never
    // makes the context bigger (compaction_never_grows_the_context).
    let first = format!("deploy with {token} {}", "after checking the logs ".repeat(20));
    let id = ts.session(&cwd, &[user(&first), user(&"and then tidy up ".repeat(40))]);
    server.push(Reply::sse(openai_text(&[&format!("deployed with {token}\n## Goal\ndeploy")], 10, 2, 0)));
    let out = ts
        .cmd("glrs-compact")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args([id.as_str(), "-m", "openai/gpt-4.1"])
        .output()
        .unwrap();
    assert!(out.status.success() && stdout_of(&out).contains("compacted"), "{} {}", stdout_of(&out), stderr_of(&out));
    let dir = ts.dir.path().join("data/glrs/sessions/artifacts").join(id.as_str());
    let artifact = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(artifact).unwrap();
    assert!(text.contains("deploy with [REDACTED:github]") && !text.contains(&token), "{text}");
    let sent = server.model_requests()[0].body.to_string();
    assert!(!sent.contains(&token), "the summariser is not sent it either");
    let session = std::fs::read_to_string(ts.store.session_path(&id)).unwrap();
    assert!(session.contains("deployed with [REDACTED:github]"), "the brief is redacted");
}

/// Anthropic's protocol: the tools are offered in its shape, a denied call
/// goes back as a `tool_result` with `is_error`, and the system prompt as
/// `system`.
#[test]
fn anthropic_gets_tools_results_and_the_system_prompt() {
    let (ts, server, proj) = agent_setup(sandbox_off());
    write(&proj, "a.txt", b"alpha\n");
    server.push(Reply::sse(anthropic_tool_use("toolu_1", "read", &[r#"{"path": "a.txt"}"#])));
    server.push(Reply::sse(anthropic_tool_use("toolu_2", "bash", &[r#"{"command": "rm a.txt"}"#])));
    server.push(Reply::sse(anthropic_text(&["Kept it."])));
    let out = ts.chat().current_dir(&proj).args(["-m", "anthropic/claude-sonnet-4-5", "-p", "look"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(proj.join("a.txt").exists());
    let requests = server.model_requests();
    let first = &requests[0].body;
    assert!(first["system"].to_string().contains("You are glrs"), "{}", first["system"]);
    let names: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read", "write", "edit", "bash", "grep", "find", "ls", "task"]);
    assert!(first["tools"][0]["input_schema"]["properties"]["path"].is_object());
    let last = requests[2].body["messages"].to_string();
    assert!(last.contains(r#""tool_use_id":"toolu_1""#) && last.contains("alpha"), "{last}");
    let denied = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["tool_use_id"] == "toolu_2")
        .unwrap();
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(denied["content"].to_string().contains("--allow 'bash:rm a.txt'"), "{denied}");
}

/// Esc at the permission prompt: the call is not run, its result says so,
/// and the turn ends.
#[test]
fn esc_at_the_permission_prompt_ends_the_turn() {
    let (ts, server, _) = agent_setup(sandbox_off());
    call(&server, 1, "write", json!({"path": "notes.txt", "content": "hello"}));
    let mut p = support::pty::chat(&ts, &["-m", "openai/gpt-4.1"], &[], false);
    support::pty::prompt(&mut p);
    p.send_line("write it").unwrap();
    p.exp_string("allow write?").unwrap();
    p.send("\x1b").unwrap();
    p.flush().unwrap();
    p.exp_string("interrupted").unwrap();
    support::pty::prompt(&mut p);
    p.send_line("/quit").unwrap();
    p.exp_eof().unwrap();
    assert!(!ts.dir.path().join("notes.txt").exists());
    let tools = tool_entries(&ts);
    assert_eq!(tools.len(), 1);
    assert!(tools[0].2 && tools[0].1.contains("interrupted by the user before it ran"), "{:?}", tools[0]);
    assert_eq!(server.model_requests().len(), 1, "the turn ended at Esc");
}
