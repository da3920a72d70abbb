//! The environment children get (SPEC 15, issue 20 item 12), replayed as an
//! attack: a model that runs `env` (in `bash`), and a hook, an exec tool and
//! an MCP server that print theirs, must find no provider key. Commands,
//! hooks and tools inherit the chat's environment less the key variables
//! (each provider's `apiKeyEnv`, the defaults, `childEnv.withhold`) unless
//! `childEnv.pass` names them; an MCP server gets only HOME, LOGNAME, PATH,
//! SHELL, TERM, USER and its own `env`.

use crate::support::mock::Reply;
use crate::support::procs::mcp_test_server;
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// The variables in an `env` dump, as NAME=VALUE lines.
fn dump(path: &std::path::Path, who: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{who} wrote no env dump: {e}"));
    text.lines().map(str::to_string).collect()
}

/// The hostile model: a one-shot chat, given `env` on top of the test's,
/// whose model has `bash` dump the environment to `file`, where it could
/// read it back.
fn hostile_env_dump(
    ts: &TestStore,
    server: &crate::support::mock::MockServer,
    file: &std::path::Path,
    env: &[(&str, &str)],
) {
    let command = format!("env > '{}'", file.display());
    server.push(Reply::sse(openai_tool_call("call_0", "bash", &[&json!({"command": command}).to_string()])));
    server.push(Reply::sse(openai_text(&["done"], 10, 1, 0)));
    let run = ts
        .chat()
        .envs(env.iter().copied())
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["-m", "openai/gpt-4.1", "--allow-all", "-p", "go"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr_of(&run));
}

#[test]
fn no_child_inherits_a_provider_key_unless_the_config_passes_it() {
    let (ts, server) = store_and_server();
    let out = ts.dir.path().join("dumps");
    std::fs::create_dir_all(&out).unwrap();
    let at = |name: &str| out.join(name).display().to_string();
    ts.config(json!({
        "memoryFlush": {"enabled": false},
        "providers": {
            "openai": {"baseUrl": format!("{}/v1", server.url())},
            "local": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "LOCAL_KEY"},
            "team": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "PASSED_KEY"},
        },
        "childEnv": {"withhold": ["MY_TOKEN"], "pass": ["PASSED_KEY"]},
        "retry": {"attempts": 1, "baseDelayMs": 10},
        "hooks": {"user_prompt": [{"command": format!("env > '{}'", at("hook"))}]},
        "mcpServers": {"t": {
            "command": "sh",
            "args": ["-c", format!("env > '{}'; exec \"$0\"", at("mcp")), mcp_test_server().display().to_string()],
            "env": {"GIVEN_TOKEN": "${MY_TOKEN}"},
        }},
    }));
    shell_script(
        &ts.dir.path().join("config/glrs/tools/probe"),
        &format!(
            "env > '{}'\necho '{{\"name\": \"probe\", \"description\": \"p\", \"parameters\": {{\"type\": \"object\"}}}}'",
            at("tool")
        ),
    );
    let env = [
        ("LOCAL_KEY", "sk-local-SECRET"),
        ("PASSED_KEY", "passed-value"),
        ("MY_TOKEN", "tok-SECRET-123"),
        ("HARMLESS", "visible"),
    ];
    hostile_env_dump(&ts, &server, &out.join("bash"), &env);
    let secrets = [OPENAI_KEY, ANTHROPIC_KEY, "sk-local-SECRET", "tok-SECRET-123"];
    for who in ["bash", "hook", "tool"] {
        let vars = dump(&out.join(who), who);
        for secret in secrets {
            assert!(!vars.iter().any(|v| v.contains(secret)), "{who} inherited {secret}: {vars:?}");
        }
        assert!(vars.contains(&"HARMLESS=visible".to_string()), "{who} keeps the rest of the environment: {vars:?}");
        assert!(vars.contains(&"PASSED_KEY=passed-value".to_string()), "childEnv.pass reaches {who}: {vars:?}");
    }
    let vars = dump(&out.join("mcp"), "the MCP server");
    let names: Vec<&str> = vars.iter().filter_map(|v| v.split('=').next()).collect();
    for secret in secrets.iter().take(3) {
        assert!(!vars.iter().any(|v| v.contains(secret)), "the MCP server inherited {secret}: {vars:?}");
    }
    assert!(vars.contains(&"GIVEN_TOKEN=tok-SECRET-123".to_string()), "its own env, expanded: {vars:?}");
    for name in &names {
        // `sh` itself sets PWD, SHLVL and `_`.
        let allowed =
            ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "GIVEN_TOKEN", "PWD", "SHLVL", "_", "OLDPWD"];
        assert!(allowed.contains(name), "the MCP server got {name}: {names:?}");
    }
    assert!(names.contains(&"PATH") && names.contains(&"HOME"), "{names:?}");
}

/// The README's `childEnv` example does what it says: the token is kept
/// from a `bash` command, the passed key reaches it.
#[test]
fn the_readme_child_env_example_withholds_the_token_and_passes_the_key() {
    let (ts, server) = store_and_server();
    let dump_file = ts.dir.path().join("bash.env");
    let mut config = crate::recipes::readme_json("\"childEnv\"");
    config["memoryFlush"] = json!({"enabled": false});
    config["providers"] = json!({"openai": {"baseUrl": format!("{}/v1", server.url())}});
    ts.config(config);
    hostile_env_dump(
        &ts,
        &server,
        &dump_file,
        &[("GITHUB_TOKEN", "ghp-SECRET-1"), ("OPENROUTER_API_KEY", "or-passed")],
    );
    let vars = dump(&dump_file, "bash");
    assert!(!vars.iter().any(|v| v.contains("ghp-SECRET-1") || v.contains(OPENAI_KEY)), "{vars:?}");
    assert!(vars.contains(&"OPENROUTER_API_KEY=or-passed".to_string()), "{vars:?}");
}
