//! The runner of commands, hooks and exec tools: a child in a process group
//! of its own, stdout and stderr going to files as they are written (so the
//! order is exact and a huge output never sits in memory), the whole group
//! killed when the run ends, times out or is dropped (Esc).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use super::capture;
use super::group::GroupKill;
use crate::limits::{self, MAX_BYTES, OutputFile};
use crate::redact::Redactor;

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
    /// Variables removed from its environment (a sandbox's: those naming
    /// the user's servers).
    pub unset: &'a [&'a str],
    /// What it reads on stdin (else nothing: stdin is /dev/null).
    pub stdin: Option<&'a [u8]>,
    /// Keep stderr in a file of its own rather than merged into stdout's.
    pub stderr_apart: bool,
    /// Applied in the child just before it runs the program (a sandbox:
    /// Landlock, seccomp, `no_new_privs`); a failure stops the spawn with
    /// its error. `None`: run unconfined.
    pub confine: Option<Confine>,
    /// Keep the withheld variables (the providers' keys, [`super::env`]):
    /// only for a child that is glrs itself (a child agent), which needs
    /// them to call its model and withholds them from what it starts.
    pub keep_keys: bool,
    /// A descriptor the child gets as [`PASSED_FD`] (a pipe a child agent
    /// reports its progress on); the caller owns it and closes it after.
    pub pass_fd: Option<std::os::fd::RawFd>,
}

/// The number a passed descriptor has in the child ([`Spawn::pass_fd`]).
pub const PASSED_FD: std::os::fd::RawFd = 3;

impl<'a> Spawn<'a> {
    /// Run `program` with `args` in `cwd`: stdin /dev/null, stderr merged
    /// into stdout, no variables added, unconfined.
    pub fn new(program: &'a std::ffi::OsStr, args: &'a [&'a str], cwd: &'a Path) -> Self {
        Spawn {
            program,
            args,
            cwd,
            env: &[],
            unset: &[],
            stdin: None,
            stderr_apart: false,
            confine: None,
            keep_keys: false,
            pass_fd: None,
        }
    }
}

/// How a process ran: its ending, the file with its (merged) output, and
/// the file with its stderr when kept apart.
pub struct Ran {
    /// How it ended.
    pub ending: Ending,
    /// Its stdout (and stderr, unless apart).
    pub output: OutputFile,
    /// Its stderr, when [`Spawn::stderr_apart`].
    pub stderr: Option<OutputFile>,
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
    run_process(&spawn, timeout, output_dir, tool).await.map(|ran| (ran.ending, ran.output.path().to_path_buf()))
}

/// Run a process in its own group, its output going to files under
/// `output_dir` as it is written; the group is killed when this returns,
/// times out or is dropped.
pub async fn run_process(spawn: &Spawn<'_>, timeout: Duration, output_dir: &Path, tool: &str) -> Result<Ran, String> {
    let shown = Path::new(spawn.program).display();
    let Outputs { output, stderr, out_writer, err_writer, mut out, mut err } =
        Outputs::open(output_dir, tool, spawn.stderr_apart)?;
    let mut cmd = command(spawn, out_writer, err_writer);
    let spawned = cmd.spawn();
    // The command holds our copies of the pipes' writing ends: without
    // dropping it, the pipes would never be seen closed.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            for file in std::iter::once(&output).chain(&stderr) {
                file.remove();
            }
            return Err(format!("cannot run {shown} in {}: {e}", spawn.cwd.display()));
        }
    };
    let _group = GroupKill::new(child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0));
    let waited = tokio::time::timeout(timeout, feed_and_wait(&mut child, spawn.stdin, &mut out, err.as_mut())).await;
    // What the child wrote before it ended; not what a process it left
    // running writes on (its group is killed when this returns).
    out.drain();
    let kept = out.finish();
    let kept_err = err.map(|mut e| {
        e.drain();
        e.finish()
    });
    let ending = match waited {
        Ok(Ok(status)) => ending_of(status),
        Ok(Err(e)) => return Err(format!("waiting for {shown} failed: {e}")),
        Err(_) => Ending::TimedOut(timeout.as_secs()),
    };
    for written in [Some(kept), kept_err].into_iter().flatten() {
        if let Err(e) = written {
            return Err(format!("the output of {shown} could not be written to {}: {e}", output_dir.display()));
        }
    }
    Ok(Ran { ending, output, stderr })
}

/// The files a run's output goes to, and the pipes that fill them.
struct Outputs {
    /// Stdout's file (and stderr's, unless apart).
    output: OutputFile,
    /// Stderr's file, when apart.
    stderr: Option<OutputFile>,
    /// The child's stdout.
    out_writer: std::io::PipeWriter,
    /// The child's stderr: a pipe of its own, or stdout's shared.
    err_writer: std::io::PipeWriter,
    /// What copies stdout's pipe into its file.
    out: capture::Capture,
    /// What copies stderr's pipe into its file, when apart.
    err: Option<capture::Capture>,
}

impl Outputs {
    fn open(output_dir: &Path, tool: &str, stderr_apart: bool) -> Result<Outputs, String> {
        let cannot = |e: std::io::Error| format!("cannot create an output file in {}: {e}", output_dir.display());
        let output = OutputFile::create(output_dir, tool).map_err(cannot)?;
        let (out_writer, out) = capture::pipe_into(output.writer().map_err(cannot)?).map_err(cannot)?;
        let (stderr, err_writer, err) = if stderr_apart {
            let kept = OutputFile::create(output_dir, &format!("{tool}-stderr")).map_err(cannot)?;
            let (w, c) = capture::pipe_into(kept.writer().map_err(cannot)?).map_err(cannot)?;
            (Some(kept), w, Some(c))
        } else {
            (None, out_writer.try_clone().map_err(|e| format!("cannot share the output pipe: {e}"))?, None)
        };
        Ok(Outputs { output, stderr, out_writer, err_writer, out, err })
    }
}

/// The command of `spawn`, writing to these pipes: in a process group of
/// its own, killed on drop, dying with its parent, its environment
/// scrubbed of the withheld keys (unless kept), the passed descriptor in
/// place and the confinement applied just before it runs.
fn command(spawn: &Spawn<'_>, out: std::io::PipeWriter, err: std::io::PipeWriter) -> tokio::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = tokio::process::Command::new(spawn.program);
    cmd.args(spawn.args)
        .envs(spawn.env.iter().copied())
        .current_dir(spawn.cwd)
        .stdin(if spawn.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(true);
    // Spawned on the chat's runtime thread (main), which lives as long as
    // the chat: see super::deathsig for why that matters.
    super::deathsig::die_with_parent(cmd.as_std_mut());
    if !spawn.keep_keys {
        super::env::scrub(cmd.as_std_mut());
    }
    for name in spawn.unset {
        cmd.env_remove(name);
    }
    if let Some(fd) = spawn.pass_fd {
        // SAFETY: dup2 and fcntl are async-signal-safe and touch no memory.
        unsafe {
            cmd.as_std_mut().pre_exec(move || {
                // dup2 onto itself would keep close-on-exec: clear it instead.
                let done = if fd == PASSED_FD { libc::fcntl(fd, libc::F_SETFD, 0) } else { libc::dup2(fd, PASSED_FD) };
                if done < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
            });
        }
    }
    if let Some(confine) = spawn.confine.clone() {
        // SAFETY: a Confine step promises async-signal-safety (its doc).
        unsafe {
            cmd.as_std_mut().pre_exec(move || confine());
        }
    }
    cmd
}

/// Write `stdin` to the child and wait for it to exit, copying its output
/// into the files meanwhile.
async fn feed_and_wait(
    child: &mut tokio::process::Child,
    stdin: Option<&[u8]>,
    out: &mut capture::Capture,
    err: Option<&mut capture::Capture>,
) -> std::io::Result<std::process::ExitStatus> {
    let pipe = child.stdin.take();
    let run = async {
        if let (Some(bytes), Some(mut pipe)) = (stdin, pipe) {
            use tokio::io::AsyncWriteExt;
            // A tool that does not read its input is not an error; dropping
            // the pipe closes it, so a tool reading to the end sees the end.
            // Inside the timeout: a tool that never reads cannot hang us.
            let _ = pipe.write_all(bytes).await;
        }
        child.wait().await
    };
    let copying = async {
        match err {
            Some(err) => tokio::join!(out.pump(), err.pump()).0,
            None => out.pump().await,
        }
    };
    tokio::pin!(run);
    tokio::select! {
        status = &mut run => status,
        () = copying => run.await,
    }
}

/// How an exit status ended.
fn ending_of(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exit(code),
        (None, Some(sig)) => Ending::Signal(sig),
        (None, None) => Ending::Exit(-1),
    }
}

/// The output file as the model sees it: whole when it fits (the file is
/// then removed), else its last part and the file's name (the file stays,
/// redacted: the model sees the real text, as it does every result, but
/// what stays on disk holds no more secrets than the session file). Read
/// through the descriptor glrs wrote to, never by the file's name.
pub fn output_text(kept: &OutputFile, redactor: &Redactor) -> String {
    let path = kept.path();
    let read = kept.size().and_then(|len| {
        let start = if len > READ_WHOLE { len - 2 * MAX_BYTES as u64 } else { 0 };
        kept.read_from(start, len - start).map(|bytes| (len, bytes))
    });
    let (len, bytes) = match read {
        Ok(read) => read,
        Err(e) => return format!("(the output could not be read back from {}: {e})\n", path.display()),
    };
    let text = String::from_utf8_lossy(&bytes);
    let (kept_text, cut) = limits::tail(&text);
    match cut {
        None if len <= READ_WHOLE => {
            kept.remove();
            kept_text.to_string()
        }
        cut => {
            if let Err(e) = kept.redact(redactor) {
                kept.remove();
                return format!("[… the output was cut, and the whole could not be kept redacted ({e})]\n{kept_text}");
            }
            let what = match cut {
                Some(n) if len <= READ_WHOLE => format!("{n} earlier lines"),
                _ => format!("the earlier output ({len} bytes in all)"),
            };
            limits::cut_note(&what, path, kept_text)
        }
    }
}
