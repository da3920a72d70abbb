//! The runner of commands, hooks and exec tools: a child in a process group
//! of its own, stdout and stderr going to files as they are written (so the
//! order is exact and a huge output never sits in memory), the whole group
//! killed when the run ends, times out or is dropped (Esc).

use std::io::{Read as _, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use super::group::GroupKill;
use crate::limits::{self, MAX_BYTES};

/// Outputs larger than this are read from their end only.
const READ_WHOLE: u64 = 4 * 1024 * 1024;

/// A step run in the child after `fork`, before `exec`, after its process
/// group and parent-death signal are set (see [`Spawn::confine`]). Like
/// every `pre_exec` step it may only make async-signal-safe calls: no
/// allocation, no lock; build what it needs before the spawn.
pub type Confine = Arc<dyn Fn() -> std::io::Result<()> + Send + Sync>;

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
    /// Applied in the child just before it runs the program (a sandbox:
    /// Landlock, seccomp, `no_new_privs`); a failure stops the spawn with
    /// its error. `None`: run unconfined.
    pub confine: Option<Confine>,
}

impl<'a> Spawn<'a> {
    /// Run `program` with `args` in `cwd`: stdin /dev/null, stderr merged
    /// into stdout, no variables added, unconfined.
    pub fn new(program: &'a std::ffi::OsStr, args: &'a [&'a str], cwd: &'a Path) -> Self {
        Spawn { program, args, cwd, env: &[], stdin: None, stderr_apart: false, confine: None }
    }
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
    let spawn = Spawn { stdin, ..Spawn::new(program.as_ref(), args, cwd) };
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
    // the chat: see super::deathsig for why that matters.
    super::deathsig::die_with_parent(cmd.as_std_mut());
    super::env::scrub(cmd.as_std_mut());
    if let Some(confine) = spawn.confine.clone() {
        use std::os::unix::process::CommandExt;
        // SAFETY: a Confine step promises async-signal-safety (its doc).
        unsafe {
            cmd.as_std_mut().pre_exec(move || confine());
        }
    }
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
