//! `bash` (SPEC 14): `bash -c` (else `sh -c`) in the session's cwd, in its
//! own process group, stdout and stderr merged into one file as they are
//! written (so the order is exact and a huge output never sits in memory).
//! When the command ends, times out or is stopped (Esc drops the call),
//! the whole group is killed: nothing it started in the background
//! survives the call, let alone the chat (even a SIGKILLed one:
//! `crate::reaper`). Output past the limits keeps its
//! last part and names the file holding all of it (0600).

use std::io::{Read as _, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::limits::{self, MAX_BYTES};
use super::{Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use crate::provider::ToolSpec;

/// The default timeout of a command, in seconds.
pub const DEFAULT_TIMEOUT: u64 = 120;
/// The longest timeout a call may ask for, in seconds.
pub const MAX_TIMEOUT: u64 = 600;

/// Outputs larger than this are read from their end only.
const READ_WHOLE: u64 = 4 * 1024 * 1024;

/// Kills a process group when dropped: the call ended, timed out, or was
/// dropped because the user pressed Esc. While it lives the group is
/// guarded by [`crate::reaper`], which kills it if the chat is SIGKILLed.
pub struct GroupKill(i32);

impl GroupKill {
    /// Take charge of group `pgid` (no group when it is not positive).
    pub fn new(pgid: i32) -> Self {
        if pgid > 0 {
            crate::reaper::guard(pgid);
        }
        GroupKill(pgid)
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: killpg takes plain integers and touches no memory; a
            // group that is already gone gives ESRCH, which is fine.
            unsafe {
                libc::killpg(self.0, libc::SIGKILL);
            }
            // After the kill: the number may be reused once it is gone.
            crate::reaper::release(self.0);
        }
    }
}

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
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exit(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout (seconds) and was killed.
    TimedOut(u64),
}

/// What to run and how, for [`run_process`].
pub struct Spawn<'a> {
    /// The program (a name looked up on PATH, or a path).
    pub program: &'a std::ffi::OsStr,
    /// Its arguments.
    pub args: &'a [&'a str],
    /// Where it runs.
    pub cwd: &'a Path,
    /// Variables added to its environment.
    pub env: &'a [(&'a str, &'a std::ffi::OsStr)],
    /// What it reads on stdin (else nothing: stdin is /dev/null).
    pub stdin: Option<&'a [u8]>,
    /// Keep stderr in a file of its own rather than merged into stdout's.
    pub stderr_apart: bool,
}

/// How a process ran: its ending, the file with its (merged) output, and
/// the file with its stderr when kept apart.
pub struct Ran {
    /// How it ended.
    pub ending: Ending,
    /// Its stdout (and stderr, unless apart).
    pub output: PathBuf,
    /// Its stderr, when [`Spawn::stderr_apart`].
    pub stderr: Option<PathBuf>,
}

/// Run `command` with `sh`-like semantics in `cwd`; the group is killed
/// when this returns or is dropped. Returns the ending and the file
/// holding the merged output.
pub async fn run_command(
    program: &str,
    args: &[&str],
    cwd: &Path,
    timeout: Duration,
    output_dir: &Path,
    tool: &str,
    stdin: Option<&[u8]>,
) -> Result<(Ending, PathBuf), String> {
    let spawn = Spawn { program: program.as_ref(), args, cwd, env: &[], stdin, stderr_apart: false };
    run_process(&spawn, timeout, output_dir, tool).await.map(|ran| (ran.ending, ran.output))
}

/// Run a process in its own group, its output going to files under
/// `output_dir` as it is written; the group is killed when this returns,
/// times out or is dropped.
pub async fn run_process(spawn: &Spawn<'_>, timeout: Duration, output_dir: &Path, tool: &str) -> Result<Ran, String> {
    let shown = Path::new(spawn.program).display();
    let (path, file) = limits::new_output_file(output_dir, tool)
        .map_err(|e| format!("cannot create an output file in {}: {e}", output_dir.display()))?;
    let (stderr_path, err) = if spawn.stderr_apart {
        let (p, f) = limits::new_output_file(output_dir, &format!("{tool}-stderr"))
            .map_err(|e| format!("cannot create an output file in {}: {e}", output_dir.display()))?;
        (Some(p), f)
    } else {
        (None, file.try_clone().map_err(|e| format!("cannot share the output file: {e}"))?)
    };
    let remove = || {
        let _ = std::fs::remove_file(&path);
        if let Some(p) = &stderr_path {
            let _ = std::fs::remove_file(p);
        }
    };
    let mut cmd = tokio::process::Command::new(spawn.program);
    cmd.args(spawn.args)
        .envs(spawn.env.iter().copied())
        .current_dir(spawn.cwd)
        .stdin(if spawn.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(true);
    // Spawned on the chat's runtime thread (main), which lives as long as
    // the chat: see crate::deathsig for why that matters.
    crate::deathsig::die_with_parent(cmd.as_std_mut());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            remove();
            return Err(format!("cannot run {shown} in {}: {e}", spawn.cwd.display()));
        }
    };
    let _group = GroupKill::new(child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0));
    let pipe = child.stdin.take();
    let run = async {
        if let (Some(bytes), Some(mut pipe)) = (spawn.stdin, pipe) {
            use tokio::io::AsyncWriteExt;
            // A tool that does not read its input is not an error; dropping
            // the pipe closes it, so a tool reading to the end sees the end.
            // Inside the timeout: a tool that never reads cannot hang us.
            let _ = pipe.write_all(bytes).await;
        }
        child.wait().await
    };
    let ending = match tokio::time::timeout(timeout, run).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exit(code),
                (None, Some(sig)) => Ending::Signal(sig),
                (None, None) => Ending::Exit(-1),
            }
        }
        Ok(Err(e)) => return Err(format!("waiting for {shown} failed: {e}")),
        Err(_) => Ending::TimedOut(timeout.as_secs()),
    };
    Ok(Ran { ending, output: path, stderr: stderr_path })
}

/// The output file as the model sees it: whole when it fits (the file is
/// then removed), else its last part and the file's name (the file stays).
pub fn output_text(path: &Path) -> String {
    let len = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|mut f| {
        if len > READ_WHOLE {
            f.seek(SeekFrom::Start(len - 2 * MAX_BYTES as u64))?;
        }
        f.read_to_end(&mut bytes)
    });
    if let Err(e) = read {
        return format!("(the output could not be read back from {}: {e})\n", path.display());
    }
    let text = String::from_utf8_lossy(&bytes);
    let (kept, cut) = limits::tail(&text);
    match cut {
        None if len <= READ_WHOLE => {
            let _ = std::fs::remove_file(path);
            kept.to_string()
        }
        cut => {
            let what = match cut {
                Some(n) if len <= READ_WHOLE => format!("{n} earlier lines"),
                _ => format!("the earlier output ({len} bytes in all)"),
            };
            limits::cut_note(&what, path, kept)
        }
    }
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
                "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT, "description": "seconds (default 120, at most 600)"}
            }, "required": ["command"]}),
        }
    }
    fn subject(&self, input: &Value, _cwd: &Path) -> Option<String> {
        input.get("command").and_then(Value::as_str).map(str::to_string)
    }
    fn summary(&self, input: &Value) -> String {
        limits::one_line(input.get("command").and_then(Value::as_str).unwrap_or("?"), 120)
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
            let (ending, path) = match run_command(shell, &args, ctx.cwd, timeout, ctx.output_dir, "bash", None).await {
                Ok(r) => r,
                Err(e) => return ToolOutput::error(e),
            };
            let mut text = output_text(&path);
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
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
        let ctx = ToolContext { cwd: dir, cancel: &cancel, session_id: "x", session_file: dir, output_dir: out };
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(Bash.run(&input, &ctx))
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
