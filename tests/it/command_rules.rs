//! Issue 20, item 1: `bash:GLOB` rules judge each command of a line
//! (SPEC 17), through the binary in one-shot mode with the model scripted
//! as hostile: every bypass of a glob over the whole line is denied and
//! leaves its file untouched (created or deleted), and plain lines of
//! allowed commands still run.

use std::path::Path;

use crate::support::mock::{MockServer, Reply};
use crate::support::sse::*;
use crate::support::*;
use serde_json::json;

/// Flags that keep these tests about rules alone (no sandbox deciding in
/// their place, SPEC 17): with the sandbox on, a sandboxed `bash` call
/// needs no rule at all.
const RULES_ONLY: &[&str] = &["--sandbox", "off"];

/// Script the model to run each line with `bash`, one call a step, then
/// run glrs-chat one-shot with `args`; the results the model got.
fn run_lines(ts: &TestStore, server: &MockServer, proj: &Path, lines: &[&str], args: &[&str]) -> Vec<String> {
    for (i, line) in lines.iter().enumerate() {
        let input = json!({"command": line}).to_string();
        server.push(Reply::sse(openai_tool_call(&format!("call_{i}"), "bash", &[&input])));
    }
    server.push(Reply::sse(openai_text(&["Done."], 10, 2, 0)));
    let out = ts
        .chat()
        .current_dir(proj)
        .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
        .args(["-m", "openai/gpt-4.1"])
        .args(RULES_ONLY)
        .args(args)
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let (_, session) = ts.only_session();
    let results: Vec<String> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool")
        .map(|e| e["result"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), lines.len(), "every call has its result");
    results
}

#[test]
fn allow_rules_do_not_stretch_over_a_second_command() {
    let cases: &[(&str, &[&str])] = &[
        (
            "bash:git *",
            &[
                "git status; touch PWN",
                "git status | touch PWN",
                "git `touch PWN`",
                "git $(touch PWN)",
                "git diff <(touch PWN)",
                "git status > PWN",
                "ls x & touch PWN",
            ],
        ),
        ("bash:cargo test*", &["cargo test; touch PWN"]),
        ("bash:ls*", &["lsof; touch PWN", "ls\ntouch PWN"]),
    ];
    for (rule, lines) in cases {
        let (ts, server, proj) = agent_setup(json!({}));
        let results = run_lines(&ts, &server, &proj, lines, &["--allow", rule]);
        for (line, result) in lines.iter().zip(&results) {
            assert!(result.starts_with("permission denied"), "{rule} ran {line:?}: {result}");
        }
        assert!(!proj.join("PWN").exists(), "{rule}: PWN was created");
    }
    // Why no rule can cover a substitution.
    let (ts, server, proj) = agent_setup(json!({}));
    let results = run_lines(&ts, &server, &proj, &["git $(touch PWN)"], &["--allow", "bash:git *"]);
    assert!(results[0].contains("No bash:GLOB rule can allow this call, because it has a command substitution"));
    assert!(!proj.join("PWN").exists());
}

#[test]
fn allow_rules_still_allow_lines_of_allowed_commands() {
    let (ts, server, proj) = agent_setup(json!({}));
    let lines = ["git log --oneline && git status", "echo one; echo two 2>/dev/null"];
    let results = run_lines(&ts, &server, &proj, &lines, &["--allow", "bash:git *", "--allow", "bash:echo *"]);
    for (line, result) in lines.iter().zip(&results) {
        assert!(result.contains("exit code") && !result.contains("permission denied"), "{line:?}: {result}");
    }
    assert!(results[1].starts_with("one\ntwo\n"), "{}", results[1]);
    // A line of two commands names a rule for each.
    let (ts, server, proj) = agent_setup(json!({}));
    let results = run_lines(&ts, &server, &proj, &["git status; touch PWN"], &["--allow", "bash:git *"]);
    assert!(results[0].contains("--allow 'bash:git status' --allow 'bash:touch PWN'"), "{}", results[0]);
}

#[test]
fn deny_rules_hold_against_every_spelling_of_the_command() {
    let lines = [
        "/bin/rm VICTIM",
        " rm VICTIM",
        "\\rm VICTIM",
        "rm\tVICTIM",
        "true && rm VICTIM",
        "ls; rm VICTIM",
        "command rm VICTIM",
        "sh -c 'rm VICTIM'",
        "find . -name VICTIM -exec rm {} \\;",
        "echo VICTIM | xargs rm",
        "x=rm; $x VICTIM",
    ];
    let (ts, server, proj) = agent_setup(json!({"permissions": {"deny": ["bash:rm *"]}}));
    std::fs::write(proj.join("VICTIM"), "precious").unwrap();
    let results = run_lines(&ts, &server, &proj, &lines, &["--allow-all"]);
    for (line, result) in lines.iter().zip(&results) {
        assert!(result.starts_with("denied:") && result.contains("bash:rm *"), "{line:?}: {result}");
    }
    assert_eq!(std::fs::read_to_string(proj.join("VICTIM")).unwrap(), "precious");
}

/// Issue 31, items 8 and 12: a line that runs `touch PWN` without naming
/// it as a command (through `$_` and a prompt transformation, `hash -p`,
/// `BASH_ALIASES`, `PS4` under `set -x`, arithmetic on a value, `printf
/// -v`, a shell or `source` reading `/dev/stdin`, `mapfile -C`) is refused
/// by a deny rule and allowed by no allow rule, the broadest glob
/// included; a deny rule sees through `trap`, `setarch` and `prlimit`.
#[test]
fn commands_run_without_being_named_are_refused() {
    let hidden = [
        "git status '$(touch PWN)'; git log ${_@P}",
        "hash -p /usr/bin/touch ls; ls PWN",
        "BASH_ALIASES[ls]='touch PWN'; shopt -s expand_aliases\nls",
        "PS4='$(touch PWN)'; set -x; true",
        "x='a[$(touch PWN)]'; echo $(( x ))",
        "printf -v 'a[$(touch PWN)]' %s 1",
        "echo touch PWN | bash /dev/stdin",
        "echo touch PWN | source /dev/stdin",
        "echo x | mapfile -C 'touch PWN' -c 1 lines",
    ];
    let wrapped = ["trap 'touch PWN' EXIT", "setarch -R touch PWN", "prlimit --nofile=100 touch PWN"];
    let all: Vec<&str> = hidden.iter().chain(&wrapped).copied().collect();
    let (ts, server, proj) = agent_setup(json!({"permissions": {"deny": ["bash:touch *"]}}));
    let results = run_lines(&ts, &server, &proj, &all, &["--allow-all"]);
    for (line, result) in all.iter().zip(&results) {
        assert!(result.starts_with("denied:") && result.contains("bash:touch *"), "{line:?}: {result}");
    }
    assert!(!proj.join("PWN").exists(), "PWN was created past the deny rule");
    let (ts, server, proj) = agent_setup(json!({}));
    let lines: Vec<&str> = hidden.iter().chain(&wrapped[..1]).copied().collect();
    let results = run_lines(&ts, &server, &proj, &lines, &["--allow", "bash:*", "--allow", "bash:git *"]);
    for (line, result) in lines.iter().zip(&results) {
        assert!(result.starts_with("permission denied"), "bash:* ran {line:?}: {result}");
    }
    assert!(!proj.join("PWN").exists(), "PWN was created past the allow rules");
}

/// Issue 33, item 8: in one-shot mode each denied call is named on stderr
/// with what would allow it (the `--allow` rule for each command, or
/// `--sandbox off`), not only in what the model reads; so is a call a deny
/// rule refused. Issue 33, item 14: an `--allow` rule naming no tool is a
/// usage error naming the rule and the tools.
#[test]
fn one_shot_names_each_denied_call_on_stderr() {
    let (ts, server, proj) = agent_setup(json!({"permissions": {"deny": ["bash:rm *"]}}));
    let calls = [
        json!({"command": "touch A; touch B"}),
        json!({"command": "rm -f VICTIM"}),
        json!({"command": "touch C", "sandbox": false, "reason": "needs it"}),
    ];
    for (i, input) in calls.iter().enumerate() {
        server.push(Reply::sse(openai_tool_call(&format!("call_{i}"), "bash", &[&input.to_string()])));
    }
    server.push(Reply::sse(openai_text(&["Done."], 10, 2, 0)));
    // No sandbox here, so every bash call needs a rule; the one asking to
    // leave the sandbox runs in another chat below.
    let run = |args: &[&str]| {
        let out = ts
            .chat()
            .current_dir(&proj)
            .env("XDG_CACHE_HOME", ts.dir.path().join("cache"))
            .args(["-m", "openai/gpt-4.1"])
            .args(args)
            .args(["-p", "go"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        stderr_of(&out)
    };
    let err = run(&["--sandbox", "off"]);
    assert!(
        err.contains("denied: bash touch A; touch B: --allow 'bash:touch A' --allow 'bash:touch B' would allow it"),
        "{err}"
    );
    assert!(err.contains("denied: bash rm -f VICTIM: the rule \"bash:rm *\" in permissions.deny"), "{err}");
    assert!(err.contains("denied: bash touch C") && err.contains(": --allow 'bash:touch C' would allow it"), "{err}");
    for file in ["A", "B", "C"] {
        assert!(!proj.join(file).exists(), "{file} was created");
    }
    // Leaving the sandbox in one-shot mode needs --sandbox off.
    server.push(Reply::sse(openai_tool_call("call_0", "bash", &[&calls[2].to_string()])));
    server.push(Reply::sse(openai_text(&["Done."], 10, 2, 0)));
    let err = run(&[]);
    let outside = ": it asked to run outside the sandbox; --sandbox off would allow it";
    assert!(err.contains("denied: bash touch C") && err.contains(outside), "{err}");
    // A rule for a tool there is not: exit 2, no model call (none is
    // scripted), no session.
    let count = || {
        let files = std::fs::read_dir(ts.sessions_dir()).map(|d| d.flatten().map(|e| e.file_name()).collect());
        let files: Vec<std::ffi::OsString> = files.unwrap_or_default();
        files.iter().filter(|n| n.to_string_lossy().ends_with(".json")).count()
    };
    let sessions = count();
    for (rule, named) in [("bsh:ls", "\"bsh:ls\""), ("mcp__nope__x", "\"mcp__nope__x\"")] {
        let out =
            ts.chat().current_dir(&proj).args(["-m", "openai/gpt-4.1", "--allow", rule, "-p", "go"]).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(named) && err.contains("the tools: read, write, edit, bash, grep, find, ls"), "{err}");
    }
    // The tools every chat has are known before it opens a session.
    server.push(Reply::sse(openai_text(&["Done."], 10, 2, 0)));
    run(&["--allow", "memory_append", "--allow", "compaction_read", "--allow", "task"]);
    assert_eq!(count(), sessions + 1, "only the last chat made a session");
}
