//! The user documentation's recipes (README.md, GUIDE.md, docs/), run as
//! written. Each test takes its command lines from the documents themselves
//! (found by how they begin, and run whole, comment
//! included, with `sh -c`), so a recipe that changes is run as changed, and
//! one that disappears fails here. The programs are installed into a
//! temporary root (`$HOME/.cargo/bin`, where `cargo install` puts them);
//! the model is the mock server. The cron line runs as cron runs it: under
//! `env -i` with only HOME and `PATH=/usr/bin:/bin`.
//!
//! The install line runs too, into a temporary `--root` (see
//! [`the_install_line_installs_stripped_programs_and_glrs_says_how_to_set_up`]
//! for what it costs and why), and `.ci/run` is checked to run the README's
//! test command. The fzf recipe runs in a terminal with a scripted `fzf`
//! that picks the first line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use glrs::store::{Append, Entry, Store};
use serde_json::{Value, json};

const PROGRAMS: [(&str, &str); 6] = [
    ("glrs", env!("CARGO_BIN_EXE_glrs")),
    ("glrs-chat", env!("CARGO_BIN_EXE_glrs-chat")),
    ("glrs-sessions", env!("CARGO_BIN_EXE_glrs-sessions")),
    ("glrs-fork", env!("CARGO_BIN_EXE_glrs-fork")),
    ("glrs-compact", env!("CARGO_BIN_EXE_glrs-compact")),
    ("glrs-artifacts", env!("CARGO_BIN_EXE_glrs-artifacts")),
];

/// A home folder with the programs installed in `~/.cargo/bin`, the store
/// and config at their default places under it, and a work folder.
pub(crate) struct Home {
    _dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) store: Store,
}

impl Home {
    pub(crate) fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let bin = home.join(".cargo/bin");
        std::fs::create_dir_all(&bin).expect("mkdir bin");
        for (name, exe) in PROGRAMS {
            install_exe(Path::new(exe), &bin.join(name));
        }
        let work = home.join("work");
        std::fs::create_dir_all(&work).expect("mkdir work");
        let paths = glrs::Paths::from_vars(None, None, None, Some(home.clone())).expect("paths");
        Home { _dir: dir, home, work, store: Store::new(paths) }
    }

    pub(crate) fn config(&self, value: &Value) {
        let dir = self.home.join(".config/glrs");
        std::fs::create_dir_all(&dir).expect("mkdir config");
        std::fs::write(dir.join("config.json"), value.to_string()).expect("write config");
    }

    /// Run `script` with `sh -c` in a login-like environment: HOME, a PATH
    /// with `~/.cargo/bin`, and the keys.
    pub(crate) fn sh(&self, script: &str) -> Output {
        let path = format!("{}:/usr/bin:/bin", self.home.join(".cargo/bin").display());
        Command::new("/bin/sh")
            .args(["-c", script])
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", path)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .current_dir(&self.work)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run sh")
    }
}

/// The user documentation: the README, the guide and `docs/`, each as
/// (its path in the repository, its text).
pub(crate) const USER_DOCS: [&str; 4] = ["README.md", "GUIDE.md", "docs/config.md", "docs/store.md"];

/// The text of a document of the repository (`README.md`, `docs/store.md`).
pub(crate) fn doc(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Whether any user document shows `text` (a line of prose, an inline `CODE`).
pub(crate) fn docs_show(text: &str) -> bool {
    USER_DOCS.iter().any(|path| doc(path).contains(text))
}

/// The line (in an indented code block) of the user documentation that
/// begins with `start`, whole, without the indent: exactly one in them all.
pub(crate) fn recipe(start: &str) -> String {
    let found: Vec<(&str, String)> = USER_DOCS
        .iter()
        .flat_map(|path| {
            let text = doc(path);
            let lines: Vec<String> = text
                .lines()
                .filter_map(|l| l.strip_prefix("    "))
                .filter(|l| l.starts_with(start))
                .map(|l| l.trim_end().to_string())
                .collect();
            lines.into_iter().map(move |l| (*path, l))
        })
        .collect();
    assert_eq!(found.len(), 1, "the user docs have one recipe line beginning {start:?}: {found:?}");
    found[0].1.clone()
}

/// The fenced blocks of `lang` in the user documentation, as written.
fn fenced_blocks(lang: &str) -> Vec<(&'static str, String)> {
    let fence = format!("```{lang}\n");
    USER_DOCS
        .iter()
        .flat_map(|path| {
            let text = doc(path);
            let blocks: Vec<String> =
                text.split(&fence).skip(1).filter_map(|rest| rest.split("\n```").next()).map(str::to_string).collect();
            blocks.into_iter().map(move |b| (*path, b))
        })
        .collect()
}

/// The first JSON block of the user documentation that contains `needle`.
pub(crate) fn readme_json(needle: &str) -> Value {
    let (path, block) = fenced_blocks("json")
        .into_iter()
        .find(|(_, b)| b.contains(needle))
        .unwrap_or_else(|| panic!("the user docs have no JSON block with {needle:?}"));
    serde_json::from_str(&block).unwrap_or_else(|e| panic!("{path}: the JSON block with {needle:?} parses: {e}"))
}

/// What cron runs of a crontab line: the text after the five time fields.
pub(crate) fn cron_command(line: &str) -> &str {
    let mut rest = line.trim_start();
    for _ in 0..5 {
        let end = rest.find(char::is_whitespace).expect("five time fields");
        rest = rest[end..].trim_start();
    }
    rest
}

pub(crate) fn ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {:?}\n{}", out.status, stderr_of(out));
    stdout_of(out)
}

/// The text of every message of `role` in an OpenAI request body.
pub(crate) fn said(body: &Value, role: &str) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == role).map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
}

pub(crate) fn mock_config(server: &MockServer) -> Value {
    json!({
        "memoryFlush": {"enabled": false},
        "providers": {
            "openai": {"baseUrl": format!("{}/v1", server.url())},
            "anthropic": {"baseUrl": server.url()},
        },
    })
}

#[test]
fn the_cron_line_works_under_cron_with_the_key_from_apikeycommand() {
    let h = Home::new();
    let server = MockServer::start();
    // The README's config for cron, pointed at the mock server.
    let mut config = readme_json("apiKeyCommand\": \"cat $HOME");
    config["providers"]["openai"]["baseUrl"] = json!(format!("{}/v1", server.url()));
    h.config(&config);
    let key_file = h.home.join(".config/glrs/openai.key");
    std::fs::write(&key_file, "sk-cron-key-0123\n").expect("key file");

    // A session over its trigger (gpt-4.1 plans against 256,000 tokens).
    let id = h.store.create(&h.work.to_string_lossy()).expect("create");
    let mut change = Append::new();
    for n in 0..12 {
        let at = glrs::time::now();
        let user = Entry::User {
            at: at.clone(),
            text: format!("question {n} about src/app{n}.rs"),
            steer: false,
            internal: None,
        };
        let answer = Entry::Assistant {
            at,
            text: format!("answer {n}: {}", "x".repeat(10_000)).into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: "stop".into(),
        };
        change = change.entry(&user).expect("entry").entry(&answer).expect("entry");
    }
    change = change.set("model", json!("openai/gpt-4.1")).set("contextTokens", json!(230_000));
    h.store.append(&id, change).expect("append");
    // The memory flush runs first (the README's config leaves it on), then
    // the brief.
    server.push(Reply::sse(openai_text(&["NO_REPLY"], 10, 1, 0)));
    server.push(Reply::sse(openai_text(&["reviewed the app\n## Goal\nreview"], 9_000, 50, 0)));

    let line = recipe("0 3 * * *");
    let command = cron_command(&line);
    let out = Command::new("/usr/bin/env")
        .args(["-i", &format!("HOME={}", h.home.display()), "PATH=/usr/bin:/bin", "/bin/sh", "-c", command])
        .current_dir(&h.home)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the cron line");
    assert!(out.status.success(), "{command}: {:?}\n{}", out.status, stderr_of(&out));
    assert_eq!((stdout_of(&out), stderr_of(&out)), (String::new(), String::new()), "--quiet: no mail from cron");
    let session: Value =
        serde_json::from_slice(&std::fs::read(h.store.session_path(&id)).expect("read")).expect("json");
    let types = entry_types(&session);
    assert_eq!(types.last().map(String::as_str), Some("compacted"), "{types:?}");
    for request in server.model_requests() {
        assert_eq!(request.header("authorization"), Some("Bearer sk-cron-key-0123"), "the key from apiKeyCommand");
    }
}

#[test]
fn the_chat_recipes() {
    let h = Home::new();
    let server = MockServer::start();
    h.config(&mock_config(&server));

    server.push(Reply::sse(anthropic_text(&["A summary."])));
    let out = h.sh(&recipe("echo \"summarise README.md\" | glrs-chat"));
    assert_eq!(ok(&out, "echo | glrs-chat"), "A summary.\n");
    assert_eq!(server.model_requests()[0].path, "/v1/messages");

    std::fs::write(h.work.join("notes.txt"), "buy milk\ncall Bob\n").expect("notes");
    server.push(Reply::sse(openai_text(&["Two errands."], 5, 2, 0)));
    let out = h.sh(&recipe("cat notes.txt | glrs-chat"));
    assert_eq!(ok(&out, "cat notes.txt | glrs-chat"), "Two errands.\n");
    let body = &server.model_requests()[1].body;
    assert_eq!(said(body, "user"), ["summarise this\n\nbuy milk\ncall Bob"]);

    server.push(Reply::sse(openai_text(&["2, 3, 5"], 5, 3, 0)));
    server.push(Reply::sse(openai_text(&["Their sum is 10."], 9, 5, 0)));
    let script = format!("{}\n{}", recipe("id=$(glrs-chat -p"), recipe("glrs-chat --resume \"$id\""));
    let out = h.sh(&script);
    assert_eq!(ok(&out, "the scripted conversation"), "Their sum is 10.\n");
    let last = &server.model_requests()[3].body;
    assert_eq!(said(last, "assistant"), ["2, 3, 5"], "the second turn went on with the first");
}

#[test]
fn the_sessions_and_artifacts_recipes() {
    let h = Home::new();
    let sessions = h.store.paths.sessions.clone();
    let user = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"why does the login redirect loop?"}"#;
    let usage = r#"{"type":"usage","at":"2026-11-01T10:00:02.000Z","model":"openai/gpt-4.1","inputTokens":400,"outputTokens":60,"cacheReadTokens":0,"cacheWriteTokens":0}"#;
    for (id, entries) in [("3f9a0001", vec![user, usage]), ("bbbb0002", vec![user]), ("cccc0003", vec![usage])] {
        let text = format!(
            r#"{{"schema":2,"id":"{id}","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"2026-11-01T10:00:02.000Z","cwd":"/w","events":[{}],"contextTokens":10}}"#,
            entries.join(",")
        );
        std::fs::create_dir_all(&sessions).expect("mkdir");
        std::fs::write(sessions.join(format!("{id}.json")), text).expect("write session");
    }
    let out = h.sh(&recipe("glrs-sessions grep -i 'redirect'"));
    assert_eq!(ok(&out, "grep | cut | sort"), "3f9a0001\nbbbb0002\n");

    let out = h.sh(&recipe("glrs-sessions status 3f9a --json | jq .usage"));
    let usage: Value = serde_json::from_str(&ok(&out, "status | jq")).expect("jq printed JSON");
    assert_eq!(usage["modelCalls"], 1);
    assert_eq!(usage["inputTokens"], 400);

    // On a new store the folder does not exist yet: the recipe still works
    // (and finds nothing, grep's exit 1).
    let grep_artifacts = recipe("grep -rl 'redirect.ts'");
    let out = h.sh(&grep_artifacts);
    assert_eq!(out.status.code(), Some(1), "nothing found, no error: {}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "");
    let artifact = h.store.paths.artifacts.join("3f9a0001/2026-11-01T10-00-00.000Z.md");
    std::fs::create_dir_all(artifact.parent().expect("a folder")).expect("mkdir");
    std::fs::write(&artifact, "---\nlabel: x\n---\n[tool-call read]\n{\"path\":\"src/auth/redirect.ts\"}\n")
        .expect("write");
    let out = h.sh(&grep_artifacts);
    assert_eq!(ok(&out, "grep artifacts"), format!("{}\n", artifact.display()));
}

#[test]
fn the_man_page_and_completion_install_lines() {
    let h = Home::new();
    for start in ["glrs man --dir", "glrs completions bash", "glrs completions fish", "glrs completions zsh"] {
        let out = h.sh(&recipe(start));
        ok(&out, start);
    }
    let installed = |dir: &str, file: &str| h.home.join(dir).join(file).is_file();
    assert!(installed(".local/share/man/man1", "glrs-sessions.1"));
    assert!(installed(".local/share/bash-completion/completions", "glrs-sessions"));
    assert!(installed(".config/fish/completions", "glrs-sessions.fish"));
    assert!(installed(".local/share/zsh/site-functions", "_glrs-sessions"));
    // man(1) finds the pages by name as the README says: with ~/.local/bin
    // on PATH, or else after the README's MANPATH line, run as written.
    assert!(
        Path::new("/usr/bin/man").exists(),
        "man(1) is not installed (/usr/bin/man): this test checks the README's man lines with it (apt-get install man-db)"
    );
    {
        let local_bin = h.home.join(".local/bin");
        std::fs::create_dir_all(&local_bin).expect("mkdir");
        let export = r#"export MANPATH="$HOME/.local/share/man:""#;
        assert!(docs_show(&format!("`{export}`")), "the docs' MANPATH line");
        for (path, script) in [
            (format!("{}:/usr/bin:/bin", local_bin.display()), "man -w glrs-compact".to_string()),
            ("/usr/bin:/bin".into(), format!("{export}\nman -w glrs-compact")),
        ] {
            let out = Command::new("/bin/sh")
                .args(["-c", &script])
                .env_clear()
                .env("HOME", &h.home)
                .env("PATH", path)
                .output()
                .expect("man -w");
            assert!(stdout_of(&out).contains(".local/share/man/man1/glrs-compact.1"), "{}", stderr_of(&out));
        }
    }
}

#[test]
fn the_fzf_recipe_opens_the_session_picked() {
    let h = Home::new();
    let sessions = h.store.paths.sessions.clone();
    std::fs::create_dir_all(&sessions).expect("mkdir");
    for (id, updated, title) in
        [("aaaa0001", "2026-11-01T10:00:00.000Z", "older work"), ("bbbb0002", "2026-11-02T10:00:00.000Z", "newer work")]
    {
        let user = format!(r#"{{"type":"user","at":"{updated}","text":"{title}"}}"#);
        let text = format!(
            r#"{{"schema":2,"id":"{id}","createdAt":"{updated}","updatedAt":"{updated}","cwd":"/w","title":"{title}","events":[{user}],"contextTokens":10}}"#
        );
        std::fs::write(sessions.join(format!("{id}.json")), text).expect("write session");
    }
    // fzf, scripted: it picks the first line it is given (the newest).
    let stub = h.home.join("stub");
    std::fs::create_dir_all(&stub).expect("mkdir");
    std::fs::write(stub.join("fzf"), "#!/bin/sh\nhead -n 1\n").expect("write fzf");
    std::fs::set_permissions(stub.join("fzf"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let line = recipe("glrs-chat --resume \"$(glrs-sessions ls --format id,title");
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", &line])
        .env_clear()
        .env("HOME", &h.home)
        .env("PATH", format!("{}:{}:/usr/bin:/bin", stub.display(), h.home.join(".cargo/bin").display()))
        .env("TERM", "xterm-256color")
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .current_dir(&h.work);
    let mut p = crate::support::pty::spawn(cmd, false);
    p.exp_string("session bbbb0002").expect("the REPL opens the session picked");
    p.exp_regex(r"bbbb0002 gpt-4\.1 \d+% > ").expect("the prompt");
    p.send_control('d').expect("Ctrl-D");
    p.exp_string("glrs-chat --resume bbbb0002").expect("how to come back");
    p.exp_eof().expect("the chat to end");
}

/// The fenced ```LANG block of the user documentation that contains
/// `needle`, as written: exactly one in them all.
pub(crate) fn readme_block(lang: &str, needle: &str) -> String {
    let blocks: Vec<(&str, String)> = fenced_blocks(lang).into_iter().filter(|(_, b)| b.contains(needle)).collect();
    assert_eq!(blocks.len(), 1, "the user docs have one {lang} block with {needle:?}: {blocks:?}");
    blocks[0].1.clone()
}

#[test]
fn the_extension_recipes_a_shell_script_tool_and_a_hook_that_blocks_rm_rf() {
    require("jq");
    let h = Home::new();
    let server = MockServer::start();
    h.config(&mock_config(&server));
    let words = "one two three four five\nsix seven\n";
    std::fs::write(h.work.join("README.md"), words).expect("README.md");

    // The executable tool, installed and used exactly as the README says.
    server.push(Reply::sse(openai_tool_call("call_1", "word_count", &[r#"{"path": "README.md"}"#])));
    server.push(Reply::sse(openai_text(&["It has 7 words."], 20, 5, 0)));
    let out = h.sh(&readme_block("sh", "tools/word_count"));
    assert_eq!(ok(&out, "the word_count recipe"), "It has 7 words.\n");
    let requests = server.model_requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"word_count"), "{offered:?}");
    let result =
        requests[1].body["messages"].as_array().expect("messages").iter().rfind(|m| m["role"] == "tool").cloned();
    assert_eq!(result.expect("a tool result")["content"].as_str().map(str::trim), Some("7"));

    // The hook, from the README's config snippet, blocks `rm -rf` and lets
    // the rest through.
    let mut config = mock_config(&server);
    config["hooks"] = readme_json("rm -rf is not allowed")["hooks"].clone();
    h.config(&config);
    std::fs::create_dir_all(h.work.join("victim")).expect("mkdir victim");
    server.push(Reply::sse(openai_tool_call("call_1", "bash", &[r#"{"command": "rm -rf victim"}"#])));
    server.push(Reply::sse(openai_tool_call("call_2", "bash", &[r#"{"command": "echo hello"}"#])));
    server.push(Reply::sse(openai_text(&["Left it."], 20, 5, 0)));
    let out = h.sh("glrs-chat --allow-all -p 'clean up'");
    assert_eq!(ok(&out, "the chat with the hook"), "Left it.\n");
    assert!(h.work.join("victim").is_dir(), "the blocked command never ran");
    let requests = server.model_requests();
    let results: Vec<String> = requests[4].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(results[0], "blocked by a tool_call hook: rm -rf is not allowed: delete files one by one");
    assert!(results[1].starts_with("hello"), "{results:?}");
}

/// The README's install line, run as written with `sh -c` in this checkout.
/// Only the environment differs from a user's, and only in where things go:
/// - `CARGO_INSTALL_ROOT`: the programs land in a temporary root, not in
///   `~/.cargo/bin`; `HOME` is a temporary folder with no config, so the
///   `glrs` after `&&` (found first on PATH: the one just installed) meets
///   a machine with no model set up, as the README describes.
/// - `CARGO_TARGET_DIR`: `target/readme-install`, beside this test build's
///   own (a build cache like `target/debug`, the one place this test writes
///   outside its temporary folder). It stays between runs, so only the
///   first `cargo test` of a checkout builds the programs; later runs find
///   them fresh and only copy them (seconds). A plain `cargo install` would
///   build from scratch in a temporary folder every time.
/// - `CARGO_PROFILE_RELEASE_OPT_LEVEL=0`: the release profile as
///   Cargo.toml has it (no debug info, stripped; checked below) but without
///   optimisation, which changes no behaviour and is most of the build's
///   cost. The first run costs about a dev build of the dependencies (1.5
///   CPU-minutes here; 5.7 minutes of wall time on this 2-core machine
///   under a load of 13), not a full optimised build, which keeps a clean
///   CI run (`.ci/run`) well under its 40-minute budget. For the same
///   reason without the release profile's link-time optimisation and with
///   its usual 16 code units (`CARGO_PROFILE_RELEASE_LTO`, `…_CODEGEN_UNITS`):
///   they make the programs smaller, not different.
/// - `CARGO_NET_OFFLINE`: the dependencies are already in cargo's cache
///   (this test build needed them); a missing one fails fast instead of
///   hanging on the network.
#[test]
fn the_install_line_installs_stripped_programs_and_glrs_says_how_to_set_up() {
    let line = recipe("cargo install");
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&home).expect("mkdir home");
    let own = Path::new(env!("CARGO_BIN_EXE_glrs"));
    // <target>/debug/glrs → <target>/readme-install
    let target = own.parent().and_then(Path::parent).expect("the target folder").join("readme-install");
    let cargo = PathBuf::from(std::env::var_os("CARGO").expect("cargo test sets CARGO"));
    let cargo_dir = cargo.parent().expect("cargo's folder");
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let path = format!("{}:{}:/usr/bin:/bin", root.join("bin").display(), cargo_dir.display());
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", &line])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("HOME", &home)
        .env("PATH", path)
        .env("CARGO_HOME", cargo_home)
        .env("CARGO_INSTALL_ROOT", &root)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "off")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .env("CARGO_NET_OFFLINE", "true")
        .env("CARGO_TERM_COLOR", "never");
    for keep in ["RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "TMPDIR"] {
        if let Some(value) = std::env::var_os(keep) {
            cmd.env(keep, value);
        }
    }
    // In a terminal, as a person types it: the `glrs` after `&&` then
    // starts the chat, finds no model and says how to set one up (exit 1).
    cmd.env("TERM", "dumb").env("CARGO_TERM_PROGRESS_WHEN", "never");
    let mut p = rexpect::session::spawn_with_options(
        cmd,
        rexpect::reader::Options::new().timeout_ms(Some(25 * 60 * 1000)).strip_ansi_escape_codes(true),
    )
    .expect("spawn in a pty");
    // Bounded by the timeout above; if it fails, dropping the session ends
    // the shell, the session leader, and the kernel hangs up cargo and
    // rustc with it (they run in the terminal's foreground group).
    let said = p.exp_eof().expect("the install line to finish");
    let status = p.process().wait().expect("its status");
    for (name, _) in PROGRAMS {
        assert!(root.join("bin").join(name).is_file(), "{name} installed into the root\n{said}");
    }
    assert!(said.contains("no model configured"), "{said}");
    for way in [
        "OPENAI_API_KEY",
        "--model provider/model-id",
        "GLRS_MODEL",
        ".config/glrs/config.json",
        "providers.<id>.baseUrl",
    ] {
        assert!(said.contains(way), "the advice names {way}: {said}");
    }
    assert!(matches!(status, rexpect::process::WaitStatus::Exited(_, 1)), "{status:?}: {said}");
    // Issue #13 item 2: installed programs carry no debug info and no
    // symbol table. The control, this test's own dev build, has both, so
    // the check can tell.
    let sections = |file: &Path| {
        let names = elf_sections(&std::fs::read(file).expect("read a program"));
        (names.iter().any(|n| n == ".debug_info"), names.iter().any(|n| n == ".symtab"))
    };
    assert_eq!(sections(own), (true, true), "the control has debug info and symbols");
    for (name, _) in PROGRAMS {
        assert_eq!(sections(&root.join("bin").join(name)), (false, false), "{name} is stripped, without debug info");
    }
}

/// The release sizes (issue 24 items 14 and 2 of its follow-up): the
/// README's set-up line's "stripped release builds of A to B MB each" is
/// the size table's (CONTRIBUTING.md) smallest and largest, its
/// "Together N MB" the table's sum,
/// and each program is in the table once. With `GLRS_RELEASE_DIR` naming a
/// folder of release builds (`target/release` after `cargo build
/// --release`), each size is also that file's, in MB of 10^6 bytes to one
/// decimal: `GLRS_RELEASE_DIR=target/release cargo test --test it sizes`.
#[test]
fn the_readme_release_sizes_are_its_table() {
    let readme = doc("README.md");
    let table = doc("CONTRIBUTING.md");
    let mb = |text: &str| -> f64 { text.trim().trim_end_matches(" MB").parse().expect("a size in MB") };
    let rows: Vec<(&str, f64)> = table
        .lines()
        .skip_while(|l| !l.starts_with("| program | release size |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`'), mb(cells[2]))
        })
        .collect();
    let mut named: Vec<&str> = rows.iter().map(|(name, _)| *name).collect();
    named.sort_unstable();
    let mut programs: Vec<&str> = PROGRAMS.iter().map(|(name, _)| *name).collect();
    programs.sort_unstable();
    assert_eq!(named, programs, "the size table names each program once");
    let sizes: Vec<f64> = rows.iter().map(|(_, size)| *size).collect();
    let (least, most) = sizes.iter().fold((f64::MAX, 0f64), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
    let claim = format!("stripped release builds of {least:.1} to {most:.1} MB each");
    assert!(readme.replace('\n', " ").contains(&claim), "the set-up line says {claim:?}");
    let together = format!("Together {:.1} MB", sizes.iter().sum::<f64>());
    assert!(table.contains(&together), "the sizes add up: {together:?}");
    if let Some(dir) = std::env::var_os("GLRS_RELEASE_DIR") {
        for (name, size) in &rows {
            let path = Path::new(&dir).join(name);
            let bytes = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).len();
            assert_eq!(format!("{:.1}", bytes as f64 / 1e6), format!("{size:.1}"), "{name}: {bytes} bytes");
        }
    }
}

/// `.ci/run` runs exactly the README's test command (output plumbing
/// aside), after the formatting and lint checks the README names.
#[test]
fn ci_runs_the_readme_test_command() {
    let command = recipe("cargo test");
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).expect(".ci/run");
    let lines: Vec<&str> =
        ci.lines().map(str::trim).filter(|l| !l.starts_with('#') && !l.starts_with("echo")).collect();
    let position = |start: &str| lines.iter().position(|l| l.starts_with(start));
    let tests: Vec<&&str> = lines.iter().filter(|l| l.starts_with("cargo test")).collect();
    assert_eq!(tests.len(), 1, "one test command in .ci/run: {tests:?}");
    let rest = tests[0].strip_prefix(command.as_str()).unwrap_or_else(|| panic!("{:?} is not {command:?}", tests[0]));
    let rest = rest.trim_start();
    assert!(
        rest.is_empty() || rest.starts_with('|') || rest.starts_with("2>&1"),
        "only output plumbing after {command:?}, no other arguments: {:?}",
        tests[0]
    );
    let test_at = position("cargo test");
    assert!(position("cargo fmt --check") < test_at && position("cargo fmt --check").is_some());
    assert!(position("cargo clippy") < test_at && position("cargo clippy").is_some());
}

/// The section names of a 64-bit little-endian ELF file (what `readelf -S`
/// lists), read from its section headers: program text may mention
/// `.debug_info` (std's backtrace code does), so searching the bytes would
/// not tell.
fn elf_sections(elf: &[u8]) -> Vec<String> {
    assert!(elf.starts_with(b"\x7fELF\x02\x01"), "a 64-bit little-endian ELF file");
    let uint = |at: usize, len: usize| elf[at..at + len].iter().rev().fold(0usize, |n, b| n << 8 | usize::from(*b));
    let (table, size, count, names_at) = (uint(0x28, 8), uint(0x3a, 2), uint(0x3c, 2), uint(0x3e, 2));
    let header = |n: usize| table + n * size;
    let strings = uint(header(names_at) + 0x18, 8);
    (0..count)
        .map(|n| {
            let start = strings + uint(header(n), 4);
            let end = start + elf[start..].iter().position(|b| *b == 0).expect("a NUL-ended name");
            String::from_utf8_lossy(&elf[start..end]).into_owned()
        })
        .collect()
}
