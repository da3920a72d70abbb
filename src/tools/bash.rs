//! `bash` (SPEC 14): `bash -c` (else `sh -c`) in the session's cwd, in its
//! own process group, stdout and stderr merged into one file as they are
//! written (so the order is exact and a huge output never sits in memory).
//! When the command ends, times out or is stopped (Esc drops the call),
//! the whole group is killed: nothing it started in the background
//! survives the call, let alone the chat (even a SIGKILLed one:
//! `crate::process::reaper`). Output past the limits keeps its
//! last part and names the file holding all of it (0600). The runner is
//! `crate::process::run`, shared with hooks and exec tools.
//!
//! Unless the mode is `off` the command runs inside the session's sandbox
//! (SPEC 17, `crate::sandbox`); `"sandbox": false` asks to leave it for one
//! call (the registry asks the user). A failed sandboxed command's result
//! names what the sandbox refused, as far as its output shows it.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Origin, Sandboxing, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use crate::limits;
use crate::process::{Ending, Spawn, output_text, run_process};
use crate::provider::ToolSpec;

/// The default timeout of a command, in seconds.
pub const DEFAULT_TIMEOUT: u64 = 120;
/// The longest timeout a call may ask for, in seconds.
pub const MAX_TIMEOUT: u64 = 600;

/// `bash` when it is on PATH, else `sh`.
pub fn shell() -> &'static str {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(dir.join("bash")).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    });
    if found { "bash" } else { "sh" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BashInput {
    command: String,
    timeout: Option<u64>,
    /// `false`: ask to run this one command outside the sandbox.
    sandbox: Option<bool>,
    /// Why it must run outside (shown when the user is asked: `sandboxing`).
    #[serde(rename = "reason")]
    _reason: Option<String>,
}

/// `bash`: run a shell command.
pub struct Bash;

impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a shell command with bash -c in the working directory; stdout and stderr merged, then the exit code. Long output keeps its end and names a file with all of it. Everything the command starts is killed when it ends or times out: do not leave servers running in the background.".into(),
            parameters: json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "the command"},
                "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT, "description": "seconds (default 120, at most 600)"},
                "sandbox": {"type": "boolean", "description": "false only when the command cannot work inside the sandbox (writes outside the workspace, needs the network): the user is asked; give a reason"},
                "reason": {"type": "string", "description": "with sandbox false: why the command must run outside the sandbox"}
            }, "required": ["command"]}),
        }
    }
    fn subject(&self, input: &Value, _cwd: &Path) -> Option<String> {
        input.get("command").and_then(Value::as_str).map(str::to_string)
    }
    fn summary(&self, input: &Value) -> String {
        let command = limits::one_line(input.get("command").and_then(Value::as_str).unwrap_or("?"), 120);
        match self.sandboxing(input, Path::new("/")) {
            Sandboxing::Outside(reason) => format!("{command}  (outside the sandbox: {reason})"),
            _ => command,
        }
    }
    fn sandboxing(&self, input: &Value, _cwd: &Path) -> Sandboxing {
        if input.get("sandbox").and_then(Value::as_bool) == Some(false) {
            let reason = input.get("reason").and_then(Value::as_str).filter(|r| !r.trim().is_empty());
            Sandboxing::Outside(limits::one_line(reason.unwrap_or("no reason given"), 200))
        } else {
            Sandboxing::Inside
        }
    }
    fn in_full(&self, input: &Value) -> Option<String> {
        Some(input.get("command").and_then(Value::as_str).unwrap_or("?").to_string())
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: BashInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let secs = input.timeout.unwrap_or(DEFAULT_TIMEOUT).clamp(1, MAX_TIMEOUT);
            let shell = shell();
            let args = ["-c", input.command.as_str()];
            let timeout = Duration::from_secs(secs);
            let confinement = match input.sandbox {
                Some(false) => None,
                _ => match ctx.sandbox.confinement() {
                    Ok(c) => c,
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "the sandbox could not be set up, so the command was not run: {e}"
                        ));
                    }
                },
            };
            let env: Vec<(&str, &std::ffi::OsStr)> = confinement.iter().flat_map(|c| c.env()).collect();
            let spawn = Spawn {
                env: &env,
                unset: confinement.as_ref().map_or(&[], |c| c.unset()),
                confine: confinement.as_ref().map(|c| c.confine.clone()),
                ..Spawn::new(shell.as_ref(), &args, ctx.cwd)
            };
            let ran = match run_process(&spawn, timeout, ctx.output_dir, "bash").await {
                Ok(r) => r,
                Err(e) => return ToolOutput::error(e),
            };
            let ending = ran.ending;
            let mut text = output_text(&ran.output, ctx.redactor);
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            if confinement.is_some() && ending != Ending::Exit(0) {
                for note in crate::sandbox::refusal::explain(&text, ctx.sandbox.policy(), ctx.cwd) {
                    text.push_str(&note);
                    text.push('\n');
                }
            }
            match ending {
                Ending::Exit(code) => {
                    text.push_str(&format!("exit code {code}"));
                    ToolOutput { content: text, is_error: code != 0 }
                }
                Ending::Signal(sig) => {
                    text.push_str(&format!("killed by signal {sig}"));
                    ToolOutput::error(text)
                }
                Ending::TimedOut(s) => {
                    text.push_str(&format!("timed out after {s} s: the command and everything it started were killed"));
                    ToolOutput::error(text)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Cancel;

    fn run(dir: &Path, out: &Path, input: Value) -> ToolOutput {
        let cancel = Cancel::default();
        let redactor = crate::redact::Redactor::default();
        let ctx = ToolContext {
            cwd: dir,
            cancel: &cancel,
            session_id: "x",
            session_file: dir,
            output_dir: out,
            judged: Default::default(),
            redactor: &redactor,
            sandbox: crate::sandbox::Sandbox::off(),
            model: "",
            entries: 0,
        };
        crate::runtime::build().unwrap().block_on(Bash.run(&input, &ctx))
    }

    #[test]
    fn exit_codes_merged_output_and_timeouts() {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("cache/glrs/output");
        let out = run(dir.path(), &out_dir, json!({"command": "echo out; echo err >&2; pwd"}));
        assert_eq!(out.content, format!("out\nerr\n{}\nexit code 0", dir.path().display()));
        assert!(!out.is_error);
        let out = run(dir.path(), &out_dir, json!({"command": "echo failing; exit 3"}));
        assert!(out.is_error && out.content == "failing\nexit code 3", "{out:?}");
        let started = std::time::Instant::now();
        let out = run(dir.path(), &out_dir, json!({"command": "echo before; sleep 30", "timeout": 1}));
        assert!(out.is_error && out.content.starts_with("before\ntimed out after 1 s"), "{out:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "the timeout stopped it");
        assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0, "short outputs leave no file");
        assert!(run(dir.path(), &out_dir, json!({"cmd": "x"})).content.contains("bad input"));
    }
}
