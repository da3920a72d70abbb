//! More of the user docs' recipes, run as written (the helpers and the rules
//! are `recipes.rs`'s): the one-shot agent script, the config examples,
//! the custom-entry lines, the print-to-stdout lines, and the completion
//! install lines followed by each shell as a user has it.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::recipes::{Home, docs_show, mock_config, ok, readme_block, readme_json, recipe};
use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::{Value, json};

/// The tool results the model was sent in `body`, in order.
fn results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect()
}

#[test]
fn the_one_shot_agent_script_fixes_a_test_and_is_denied_the_rest() {
    let h = Home::new();
    let server = MockServer::start();
    h.config(&mock_config(&server));
    // A project in git whose test fails; `cargo` is a stand-in (in
    // ~/.cargo/bin, where cargo lives) that passes once `add` adds.
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&h.work)
            .env("HOME", &h.home)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", stderr_of(&out));
    };
    std::fs::create_dir_all(h.work.join("src")).expect("mkdir src");
    std::fs::write(h.work.join("src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n").expect("lib.rs");
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "add"]);
    // A remote on the mock: a push that got out of the sandbox would reach
    // it, and an unscripted request fails the test.
    git(&["remote", "add", "origin", &format!("{}/repo.git", server.url())]);
    let cargo = h.home.join(".cargo/bin/cargo");
    std::fs::write(
        &cargo,
        "#!/bin/sh\nif grep -q 'a + b' src/lib.rs; then echo 'test result: ok'; else echo 'test add ... FAILED'; exit 101; fi\n",
    )
    .expect("cargo stand-in");
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    // The model runs the tests, reads, tries to push (refused: no network
    // inside the sandbox), edits under src/ and runs the tests again.
    let call = |id: &str, name: &str, input: Value| Reply::sse(openai_tool_call(id, name, &[&input.to_string()]));
    server.push(call("call_1", "bash", json!({"command": "cargo test"})));
    server.push(call("call_2", "read", json!({"path": "src/lib.rs"})));
    server.push(call("call_3", "bash", json!({"command": "git push"})));
    server.push(call("call_4", "edit", json!({"path": "src/lib.rs", "oldText": "a - b", "newText": "a + b"})));
    server.push(call("call_5", "bash", json!({"command": "cargo test"})));
    server.push(Reply::sse(openai_text(&["Fixed: add subtracted."], 50, 5, 0)));

    let script = readme_block("sh", "cargo test fails: find out why");
    std::fs::write(h.home.join("fix.sh"), &script).expect("write the script");
    let out = h.sh(&format!("sh {}", h.home.join("fix.sh").display()));
    let stdout = ok(&out, "the agent script");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "Fixed: add subtracted.", "the reply, teed: {stdout}");
    assert_eq!(std::fs::read_to_string(h.work.join("fix.log")).expect("fix.log"), "Fixed: add subtracted.\n");
    // Every call the agent made, from `glrs-sessions show`.
    let calls: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("→ ")).collect();
    assert_eq!(calls.len(), 5, "{stdout}");
    assert!(calls[2].contains("git push"), "{calls:?}");
    assert!(stdout.contains("src/lib.rs | 2 +-"), "git diff --stat: {stdout}");
    assert!(std::fs::read_to_string(h.work.join("src/lib.rs")).expect("lib.rs").contains("a + b"));

    let requests = server.model_requests();
    let sent = results(&requests[5].body);
    assert!(sent[0].contains("FAILED"), "{sent:?}");
    assert!(sent[1].contains("a - b"), "read is allowed: {sent:?}");
    assert!(sent[2].contains("exit code") && !sent[2].contains("exit code 0"), "git push failed: {sent:?}");
    assert!(sent[4].contains("test result: ok"), "{sent:?}");
}

#[test]
fn the_config_examples_load_and_the_permission_rules_act_as_described() {
    let h = Home::new();
    // The providers example, as written: every provider and model it names
    // is listed, with the window it sets.
    h.config(&readme_json("local/qwen2.5-coder-7b"));
    let models = json_of(&h.sh("glrs models --json"));
    let named: Vec<&str> = models.as_array().expect("a list").iter().filter_map(|m| m["model"].as_str()).collect();
    for model in ["local/qwen2.5-coder-7b", "openrouter/*", "openai/gpt-4.1", "anthropic/claude-sonnet-4-5"] {
        assert!(named.contains(&model), "{model} in {named:?}");
    }
    let gpt = models.as_array().expect("a list").iter().find(|m| m["model"] == "openai/gpt-4.1").cloned();
    assert_eq!(gpt.expect("gpt-4.1")["window"], 200_000, "metadata.context applies");
    let local = models.as_array().expect("a list").iter().find(|m| m["model"] == "local/qwen2.5-coder-7b").cloned();
    assert_eq!(local.expect("the local model")["window"], 16_384, "the local server's window is given");

    // The permissions example, as written, beside the mock's providers:
    // `git status` is allowed, `rm` is denied by its rule and never runs.
    let server = MockServer::start();
    let mut config = mock_config(&server);
    config["permissions"] = readme_json("\"bash:git status\"")["permissions"].clone();
    h.config(&config);
    std::fs::write(h.work.join("keep.txt"), "x").expect("keep.txt");
    let call =
        |id: &str, command: &str| Reply::sse(openai_tool_call(id, "bash", &[&json!({"command": command}).to_string()]));
    server.push(call("call_1", "git status"));
    server.push(call("call_2", "rm keep.txt"));
    server.push(Reply::sse(openai_text(&["Done."], 20, 2, 0)));
    let out = h.sh("glrs-chat -p 'tidy up'");
    assert_eq!(ok(&out, "the chat under the README's rules"), "Done.\n");
    assert!(h.work.join("keep.txt").is_file(), "rm never ran");
    let sent = results(&server.model_requests()[2].body);
    assert!(!sent[0].contains("denied") && !sent[0].contains("not run"), "git status ran: {sent:?}");
    assert!(sent[1].contains("\"bash:rm *\" in permissions.deny"), "{sent:?}");
}

#[test]
fn the_custom_entry_lines_append_to_a_session() {
    let h = Home::new();
    let id = h.store.create(&h.work.to_string_lossy()).expect("create");
    let out = h.sh(&format!("id={id}\n{}", readme_block("sh", "--custom deploy")));
    ok(&out, "the append lines");
    let session: Value =
        serde_json::from_slice(&std::fs::read(h.store.session_path(&id)).expect("read")).expect("json");
    let events = session["events"].as_array().expect("events");
    let custom = events.iter().find(|e| e["type"] == "custom").expect("a custom entry");
    assert_eq!((&custom["name"], &custom["data"]), (&json!("deploy"), &json!({"build": 42, "ok": true})));
    assert!(events.iter().any(|e| e["type"] == "notice" && e["text"] == "backed up to s3"), "{events:?}");
}

/// A recipe written inline in the user docs' prose (`` `CODE` ``), as written.
fn inline(code: &str) -> &str {
    assert!(docs_show(&format!("`{code}`")), "the user docs show `{code}`");
    code
}

#[test]
fn the_print_to_stdout_lines_show_a_page_and_load_completions() {
    let h = Home::new();
    require("man");
    let out = h.sh(inline("glrs man compact | man -l -"));
    let page = ok(&out, "glrs man | man -l -");
    assert!(page.contains("glrs-compact") && page.contains("EXIT STATUS"), "{page}");
    // Process substitution is bash's: the line runs in bash, as a bash user types it.
    let line = inline("source <(glrs completions bash)");
    let path = format!("{}:/usr/bin:/bin", h.home.join(".cargo/bin").display());
    let out = Command::new("bash")
        .args(["-c", &format!("{line}\ncomplete -p glrs-sessions glrs")])
        .env_clear()
        .env("HOME", &h.home)
        .env("PATH", path)
        .output()
        .expect("bash");
    let registered = ok(&out, line);
    assert!(registered.contains("glrs-sessions") && registered.lines().count() == 2, "{registered}");
}

/// The completion install lines as written, then each shell as a user has
/// it (its default user folders under HOME, nothing pointed elsewhere;
/// zsh with the README's `fpath` line in `~/.zshrc`): a session id completes.
#[test]
fn completions_installed_as_the_readme_says_complete_an_id_in_each_shell() {
    let h = Home::new();
    let sessions = h.store.paths.sessions.clone();
    std::fs::create_dir_all(&sessions).expect("mkdir");
    let user = r#"{"type":"user","at":"2026-11-01T10:00:01.000Z","text":"plan the release"}"#;
    let text = format!(
        r#"{{"schema":2,"id":"abcd0001","createdAt":"2026-11-01T10:00:00.000Z","updatedAt":"2026-11-01T10:00:01.000Z","cwd":"/w","events":[{user}],"contextTokens":10}}"#
    );
    std::fs::write(sessions.join("abcd0001.json"), text).expect("write session");
    for start in ["glrs completions bash", "glrs completions fish", "glrs completions zsh"] {
        ok(&h.sh(&recipe(start)), start);
    }
    let path = format!("{}:/usr/bin:/bin", h.home.join(".cargo/bin").display());
    let shell = |program: &str, args: &[&str]| {
        let mut cmd = Command::new(program);
        cmd.args(args).env_clear().env("HOME", &h.home).env("PATH", &path).current_dir(&h.work);
        run_bounded(&mut cmd, std::time::Duration::from_secs(60), program)
    };

    require_file("/usr/share/bash-completion/bash_completion", "bash-completion");
    let script = r#"source /usr/share/bash-completion/bash_completion
__load_completion glrs-sessions || { echo "nothing loaded"; exit 1; }
spec=$(complete -p glrs-sessions); func=${spec#*-F }; func=${func%% *}
COMP_WORDS=(glrs-sessions show ''); COMP_CWORD=2; COMP_LINE='glrs-sessions show '; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
"$func" glrs-sessions '' show
printf '%s\n' "${COMPREPLY[@]}""#;
    let out = shell("bash", &["--norc", "--noprofile", "-c", script]);
    let offered = ok(&out, "bash completing");
    assert_eq!(offered.lines().next(), Some("abcd0001"), "{offered}");
    require("fish");
    let out = shell("fish", &["-c", "complete -C 'glrs-sessions show '"]);
    let offered = ok(&out, "fish completing");
    assert!(offered.lines().any(|l| l == "abcd0001\tplan the release"), "{offered}");
    require("zsh");
    let fpath = "fpath=(~/.local/share/zsh/site-functions $fpath)";
    assert!(docs_show(&format!("# {fpath}")), "the docs' ~/.zshrc line");
    let zshrc = format!("{fpath}\nautoload -U compinit; compinit -u\nPS1='READY%% '\n");
    std::fs::write(h.home.join(".zshrc"), zshrc).expect(".zshrc");
    let mut cmd = Command::new("zsh");
    cmd.arg("-i").env_clear().env("HOME", &h.home).env("PATH", &path).env("TERM", "xterm").current_dir(&h.work);
    let mut p = rexpect::session::spawn_with_options(cmd, rexpect::reader::Options::new().timeout_ms(Some(20_000)))
        .expect("zsh in a pty");
    p.exp_string("READY% ").expect("zsh's prompt after ~/.zshrc");
    p.send("glrs-sessions show \t").expect("type");
    p.flush().expect("flush");
    p.exp_string("abcd0001").expect("the id completed");
    p.send("\x03").expect("Ctrl-C");
    p.flush().expect("flush");
    p.exp_string("READY% ").expect("the prompt again");
    p.send_line("exit").expect("exit");
    p.exp_eof().expect("zsh to exit");
}

/// The quick start's import line, as cron runs it (`env -i`, the plain
/// PATH), imports a Claude Code transcript, and a second run adds nothing;
/// then the `jq` line over the plain file prints that session's tool calls.
#[test]
fn the_import_cron_line_and_the_jq_line_over_a_session_file() {
    let h = Home::new();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import/recorded/claude/-tmp-agents-work");
    let projects = h.home.join(".claude/projects/-tmp-agents-work");
    std::fs::create_dir_all(&projects).expect("mkdir");
    for file in std::fs::read_dir(fixture).expect("the fixture").flatten() {
        if file.path().extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(file.path(), projects.join(file.file_name())).expect("copy a transcript");
        }
    }
    let line = recipe("30 * * * *");
    let command = crate::recipes::cron_command(&line);
    let cron = || {
        Command::new("/usr/bin/env")
            .args(["-i", &format!("HOME={}", h.home.display()), "PATH=/usr/bin:/bin", "/bin/sh", "-c", command])
            .current_dir(&h.home)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run the cron line")
    };
    let first = cron();
    assert!(first.status.success(), "{command}: {}", stderr_of(&first));
    let listed = ok(&h.sh("glrs-sessions ls --format id,title"), "ls");
    assert!(!listed.is_empty(), "the cron line imported nothing");
    let count = listed.lines().count();
    let again = cron();
    assert!(again.status.success(), "{command}: {}", stderr_of(&again));
    assert_eq!(ok(&h.sh("glrs-sessions ls --format id"), "ls").lines().count(), count, "a second run adds nothing");

    // The jq line, with the id of the session that ran tools in place of 3f9a.
    let with_tools = listed
        .lines()
        .filter_map(|l| l.split('\t').next())
        .find(|id| ok(&h.sh(&format!("glrs-sessions show {id}")), "show").contains("tool"))
        .expect("an imported session with tool calls");
    let jq = recipe("jq -c '.events[]").replace("3f9a", with_tools);
    let calls = ok(&h.sh(&jq), &jq);
    assert!(calls.lines().count() >= 1, "{calls}");
    assert!(calls.lines().all(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object())), "{calls}");
}
