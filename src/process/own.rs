//! Programs glrs runs for its own work and whose output it parses (`git`
//! for checkpoints, SPEC 19). Unlike a tool's output, which goes to a file
//! and is cut past a cap, stdout is kept in memory whole: a list of paths
//! that lost its middle would be a wrong answer, not a shorter one. Stderr
//! is kept up to [`STDERR_KEPT`] (it is only ever shown).
//!
//! Like every child: a process group of its own, killed when the run ends,
//! times out or is dropped; the parent-death signal; no withheld variable.
//! Never confined by the model's sandbox: it is glrs's own process, not a
//! command the model asked for.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Ending;
use super::group::GroupKill;

/// How much of a program's stderr is kept.
pub const STDERR_KEPT: u64 = 64 * 1024;

/// What a program glrs ran for itself did.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Everything it wrote on stdout.
    pub stdout: Vec<u8>,
    /// The first [`STDERR_KEPT`] bytes it wrote on stderr.
    pub stderr: Vec<u8>,
}

/// What to run, for [`run_own`].
pub struct Own<'a> {
    /// The program (a path, or a name looked up on PATH).
    pub program: &'a OsStr,
    /// Its arguments.
    pub args: &'a [&'a str],
    /// Where it runs.
    pub cwd: &'a Path,
    /// Variables added to its environment.
    pub env: &'a [(&'a str, &'a OsStr)],
    /// What it reads on stdin (else stdin is /dev/null).
    pub stdin: Option<&'a [u8]>,
}

/// Run `own` to its end (or `timeout`), its input written and its outputs
/// read at the same time (so a large input and a large output cannot wait
/// on each other).
pub async fn run_own(own: &Own<'_>, timeout: Duration) -> Result<Finished, String> {
    let shown = Path::new(own.program).display();
    let mut cmd = tokio::process::Command::new(own.program);
    cmd.args(own.args)
        .envs(own.env.iter().copied())
        .current_dir(own.cwd)
        .stdin(if own.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    super::deathsig::die_with_parent(cmd.as_std_mut());
    super::env::scrub(cmd.as_std_mut());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {shown} in {}: {e}", own.cwd.display()))?;
    let _group = GroupKill::new(child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0));
    let (input, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let feed = async move {
        if let (Some(bytes), Some(mut pipe)) = (own.stdin, input) {
            // A program that stops reading is not an error here: how it
            // ends says what happened. Dropping the pipe closes it.
            let _ = pipe.write_all(bytes).await;
        }
    };
    let read_out = async move {
        let mut kept = Vec::new();
        if let Some(mut pipe) = stdout {
            pipe.read_to_end(&mut kept).await?;
        }
        Ok::<_, std::io::Error>(kept)
    };
    let read_err = async move {
        let mut kept = Vec::new();
        if let Some(mut pipe) = stderr {
            (&mut pipe).take(STDERR_KEPT).read_to_end(&mut kept).await?;
            tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await?;
        }
        Ok::<_, std::io::Error>(kept)
    };
    let run = async {
        let ((), out, err) = tokio::join!(feed, read_out, read_err);
        (out, err, child.wait().await)
    };
    let Ok((out, err, status)) = tokio::time::timeout(timeout, run).await else {
        return Ok(Finished { ending: Ending::TimedOut(timeout.as_secs()), stdout: Vec::new(), stderr: Vec::new() });
    };
    let status = status.map_err(|e| format!("waiting for {shown} failed: {e}"))?;
    let stdout = out.map_err(|e| format!("cannot read what {shown} printed: {e}"))?;
    let stderr = err.map_err(|e| format!("cannot read what {shown} printed on stderr: {e}"))?;
    use std::os::unix::process::ExitStatusExt;
    let ending = match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exit(code),
        (None, Some(sig)) => Ending::Signal(sig),
        (None, None) => Ending::Exit(-1),
    };
    Ok(Finished { ending, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh<'a>(args: &'a [&'a str], stdin: Option<&'a [u8]>) -> Own<'a> {
        Own { program: OsStr::new("sh"), args, cwd: Path::new("/"), env: &[], stdin }
    }

    #[tokio::test]
    async fn output_is_kept_whole_and_input_is_fed_while_it_is_read() {
        // 12 MB through cat: past a tool's 8 MB cap, and more than a pipe
        // holds both ways, so feeding and reading must overlap.
        let input = vec![b'x'; 12 << 20];
        let args = ["-c", "cat; printf 'said' >&2; exit 3"];
        let done = run_own(&sh(&args, Some(&input)), Duration::from_secs(60)).await.unwrap();
        assert_eq!(done.ending, Ending::Exit(3));
        assert_eq!(done.stdout.len(), input.len());
        assert_eq!(done.stderr, b"said");
    }

    #[tokio::test]
    async fn stderr_is_bounded_and_a_timeout_says_so() {
        let args = ["-c", "head -c 1000000 /dev/zero >&2"];
        let done = run_own(&sh(&args, None), Duration::from_secs(60)).await.unwrap();
        assert_eq!((done.ending, done.stderr.len() as u64), (Ending::Exit(0), STDERR_KEPT));
        let args = ["-c", "exec sleep 30"];
        let done = run_own(&sh(&args, None), Duration::from_millis(100)).await.unwrap();
        assert_eq!(done.ending, Ending::TimedOut(0));
    }
}
