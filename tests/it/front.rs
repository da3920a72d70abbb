//! `glrs`'s own commands: help for another program, man pages and
//! completions (printed and installed), the config and the models.

use crate::support::*;
use serde_json::json;

#[test]
fn help_names_the_chat_flags_and_help_chat_is_the_chats_help() {
    let ts = TestStore::new();
    let out = ts.cmd("glrs").arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = stdout_of(&out);
    assert!(text.contains("glrs [CHAT FLAGS] [PROMPT]") && text.contains("glrs help chat"), "{text}");
    // Issue 24.12: no Markdown backticks from a doc comment.
    assert!(text.starts_with("The glrs front door") && !text.contains('`'), "{text}");
    for sub in ["man", "completions", "config", "models", "sessions"] {
        assert!(text.contains(sub), "{sub}: {text}");
    }
    let out = ts.cmd("glrs").args(["help", "chat"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("Usage: glrs-chat"), "{}", stdout_of(&out));
    let out = ts.cmd("glrs").args(["help", "models"]).output().unwrap();
    assert!(stdout_of(&out).contains("Usage: glrs models"), "{}", stdout_of(&out));
    let out = ts.cmd("glrs").args(["help", "nonesuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

#[test]
fn man_and_completions_print_and_install() {
    let ts = TestStore::new();
    let out = ts.cmd("glrs").args(["man", "sessions"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let page = stdout_of(&out);
    assert!(page.contains(".TH glrs-sessions 1"), "{page}");
    for section in ["DESCRIPTION", "\"EXIT STATUS\"", "ENVIRONMENT", "FILES", "EXAMPLES", "\"SEE ALSO\""] {
        assert!(page.contains(&format!(".SH {section}")), "{section}");
    }
    let committed = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/man/glrs-sessions.1")).unwrap();
    assert!(page.as_bytes() == committed, "glrs man prints the committed page");
    ts.cmd("glrs").args(["man", "nonesuch"]).assert().code(2);

    let man1 = ts.dir.path().join("home/.local/share/man/man1");
    ts.cmd("glrs").args(["man", "--dir"]).arg(&man1).assert().success();
    for name in ["glrs.1", "glrs-chat.1", "glrs-compact.1", "glrs-sessions-ls.1"] {
        assert!(man1.join(name).is_file(), "{name}");
    }

    let out = ts.cmd("glrs").args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = stdout_of(&out);
    for program in ["glrs", "glrs-chat", "glrs-sessions", "glrs-fork", "glrs-compact", "glrs-artifacts"] {
        // Each program's script registers a function that calls it back.
        let function = format!("_clap_complete_{}", program.replace('-', "_"));
        assert!(script.contains(&format!("-F {function} {program}\n")), "{program}");
    }
    let dirs = [
        ("bash", ".local/share/bash-completion/completions", "glrs-sessions"),
        ("zsh", ".local/share/zsh/site-functions", "_glrs-sessions"),
        ("fish", ".config/fish/completions", "glrs-sessions.fish"),
    ];
    for (shell, dir, file) in dirs {
        let dir = ts.dir.path().join("home").join(dir);
        ts.cmd("glrs").args(["completions", shell, "--dir"]).arg(&dir).assert().success();
        assert!(dir.join(file).is_file(), "{shell}: {file}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 6, "{shell}: one file a program");
    }
    ts.cmd("glrs").args(["completions", "tcsh"]).assert().code(2);
}

#[test]
fn config_path_and_show_with_secrets_masked() {
    let ts = TestStore::new();
    let path = ts.dir.path().join("config/glrs/config.json");
    ts.cmd("glrs").args(["config", "path"]).assert().success().stdout(format!("{}\n", path.display()));
    let out = ts.cmd("glrs").args(["config", "show"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout_of(&out), "{}\n");
    assert!(stderr_of(&out).contains("defaults apply"), "{}", stderr_of(&out));

    ts.config(json!({
        "model": "openai/gpt-4.1",
        "providers": {"anthropic": {"apiKeyCommand": "echo sk-ant-SECRET"}, "gw": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "GW_KEY"}},
    }));
    let out =
        ts.cmd("glrs").args(["config", "show"]).env("GLRS_MODEL", "anthropic/claude-sonnet-4-5").output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["model"], "anthropic/claude-sonnet-4-5", "GLRS_MODEL applies");
    assert_eq!(shown["providers"]["anthropic"]["apiKeyCommand"], "***");
    assert_eq!(shown["providers"]["gw"]["apiKeyEnv"], "GW_KEY");
    assert!(!stdout_of(&out).contains("SECRET"));

    std::fs::write(&path, "{\"model\": \"openai/gpt-4.1\",}").unwrap();
    let out = ts.cmd("glrs").args(["config", "show"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr_of(&out);
    assert!(err.contains(&path.display().to_string()) && err.contains("line 1") && !err.contains("?"), "{err}");
}

#[test]
fn models_lists_providers_windows_and_keys() {
    let ts = TestStore::new();
    ts.config(json!({
        "compactModel": "gw/small",
        "providers": {
            "gw": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "GW_KEY",
                   "models": {"big": {"metadata": {"context": 64000}}}},
            "anthropic": {"apiKeyCommand": "echo x"},
        },
    }));
    let out = ts.cmd("glrs").arg("models").env("OPENAI_API_KEY", "sk-test").output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(
        stdout_of(&out),
        "openai/gpt-4.1\t1047576\tOPENAI_API_KEY\tset\n\
         anthropic/claude-sonnet-4-5\t200000\tapiKeyCommand\tcommand\n\
         azure/*\t-\tAZURE_OPENAI_API_KEY\tnot set\n\
         ollama/*\t-\t-\tnone needed\n\
         gw/big\t64000\tGW_KEY\tnot set\n\
         gw/small\t256000\tGW_KEY\tnot set\n"
    );
    let out = ts.cmd("glrs").args(["models", "--json"]).output().unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        rows[0],
        json!({"model": "openai/gpt-4.1", "window": 1047576, "key": "OPENAI_API_KEY", "keyStatus": "not set"})
    );
}

#[test]
fn a_missing_glrs_config_a_model_without_provider_and_an_unknown_compact_model_are_errors() {
    // Issue 24.5. GLRS_CONFIG naming a file that is not there is an error
    // naming it, for every program that reads the config.
    let (ts, _server) = store_and_server();
    let missing = ts.dir.path().join("typo/config.json");
    for (program, args) in
        [("glrs-chat", &["-p", "hi"][..]), ("glrs", &["config", "show"]), ("glrs-sessions", &["keys"])]
    {
        let out = ts.cmd(program).env("GLRS_CONFIG", &missing).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{program}: {}", stderr_of(&out));
        let expected = format!("{program}: error: GLRS_CONFIG names {}, which does not exist", missing.display());
        assert!(stderr_of(&out).contains(&expected), "{program}: {}", stderr_of(&out));
    }
    // GLRS_MODEL gets the suggestion -m gets, and is a usage error as -m
    // gpt-4.1 is (issue 32); so is a provider no one serves.
    let out = ts.chat().env("GLRS_MODEL", "gpt-4.1").args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("GLRS_MODEL: a model is named provider/model-id: did you mean openai/gpt-4.1?"),
        "{}",
        stderr_of(&out)
    );
    // A model that cannot work is refused though nothing needs compacting.
    let id = ts.session("/tmp", &[user("hello")]);
    let out = ts.cmd("glrs-compact").args([id.as_str(), "--model", "nosuch/model"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("unknown provider \"nosuch\""), "{}", stderr_of(&out));
    for (env, args) in [("nosuch/model", &["-p", "hi"][..]), ("", &["-m", "nosuch/model", "-p", "hi"])] {
        let out = ts.chat().env("GLRS_MODEL", env).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{env} {args:?}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("unknown provider \"nosuch\""), "{}", stderr_of(&out));
    }
}

#[test]
fn unknown_programs_get_the_name_meant_or_the_whole_prompt_and_usage_errors_their_prefix() {
    // Issue 24.9.
    let ts = TestStore::new();
    let out = ts.cmd("glrs").args(["hello", "world"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("(to send it as a prompt: glrs -p 'hello world')"), "{}", stderr_of(&out));
    let out = ts.cmd("glrs").args(["sesions", "ls"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("no program glrs-sesions"), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("did you mean sessions?"), "{}", stderr_of(&out));
    let out = ts.cmd("glrs").args(["hello", "it's", "late"]).output().unwrap();
    assert!(stderr_of(&out).contains(r"glrs -p 'hello it'\''s late'"), "{}", stderr_of(&out));
    // Usage errors, as every other error: NAME: error: …, exit 2.
    for (program, args) in [
        ("glrs-sessions", &["show", "--bogus"][..]),
        ("glrs-chat", &["--bogus"]),
        ("glrs-fork", &[]),
        ("glrs-compact", &["--bogus"]),
        ("glrs-artifacts", &["cat"]),
        ("glrs", &["man", "--bogus"]),
        // The front door's own flags are the chat's, its errors its own.
        ("glrs", &["--no-such-flag"]),
    ] {
        let out = ts.cmd(program).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{program} {args:?}");
        assert!(stderr_of(&out).starts_with(&format!("{program}: error: ")), "{program}: {}", stderr_of(&out));
    }
    let out = ts.cmd("glrs").args(["--no-such-flag"]).output().unwrap();
    assert!(stderr_of(&out).contains("Usage: glrs [OPTIONS]"), "{}", stderr_of(&out));
    let out = ts.cmd("glrs-sessions").arg("--version").output().unwrap();
    assert!(out.status.success() && stdout_of(&out).starts_with("glrs-sessions "), "{}", stdout_of(&out));
}

#[test]
fn config_keys_lists_every_key_and_the_readme_table_is_its_markdown() {
    // Issue 24.15: the README's table is the program's, which the loader checks.
    let ts = TestStore::new();
    let out = ts.cmd("glrs").args(["config", "keys"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.lines().any(|l| l.starts_with("compactAt\t0.75\t")), "{text}");
    assert!(text.lines().all(|l| l.split('\t').count() == 3), "{text}");
    let markdown = stdout_of(&ts.cmd("glrs").args(["config", "keys", "--markdown"]).output().unwrap());
    let reference = crate::recipes::doc("docs/config.md");
    assert!(reference.contains(&markdown), "docs/config.md's Config keys table is not `glrs config keys --markdown`");
}
