//! API keys for providers (SPEC 4): from a configured `apiKeyCommand`,
//! run with a time limit and killed with all it started, else from the
//! environment; held only in a [`Secret`].

use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::Secret;
use crate::process::GroupKill;

/// How long `apiKeyCommand` may run.
pub const KEY_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The key for provider `id`: from `command` (its trimmed stdout), else the
/// environment variable `env`. `None` for keyless providers (Ollama, local
/// servers).
pub(super) fn resolve_key(id: &str, command: Option<&str>, env: Option<&str>) -> Result<Option<Secret>> {
    if let Some(command) = command {
        let out =
            run_key_command(command, KEY_COMMAND_TIMEOUT).with_context(|| format!("providers.{id}.apiKeyCommand"))?;
        let key = String::from_utf8_lossy(&out).trim().to_string();
        if key.is_empty() {
            bail!("providers.{id}.apiKeyCommand printed no key");
        }
        return Ok(Some(Secret::new(key)));
    }
    let Some(env) = env else { return Ok(None) };
    match std::env::var(env) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(Secret::new(key.trim().to_string()))),
        _ => bail!("{id}: no API key: set {env} (or providers.{id}.apiKeyEnv or apiKeyCommand in the config)"),
    }
}

/// The most of a key command's stdout that is kept (the rest is read and
/// dropped, so the command never stalls on a full pipe).
const MAX_KEY_BYTES: u64 = 64 << 10;

/// Run a key command with `sh -c` in its own process group; its stdout
/// (at most 64 KB). It is done when its shell exits; then (and on a
/// timeout, an error) the whole group is killed, so a child it left in the
/// background neither holds us nor outlives it. The group is `bash`'s
/// [`GroupKill`], so it dies with glrs too, however glrs dies: the shell by
/// `die_with_parent` (it is waited for on the thread that started it, so
/// that thread outlives it), what it started by `crate::process::reaper`'s
/// watchdog. Not `crate::process::run_process`: that keeps stdout in a file,
/// and a key must never be written to disk. Errors never carry what it
/// printed.
fn run_key_command(command: &str, timeout: Duration) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let deadline = std::time::Instant::now() + timeout;
    let mut cmd = Command::new("sh");
    cmd.args(["-c", command]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
    // Not in the workspace: what the model planted there would run (issue 31, item 11).
    cmd.current_dir(crate::paths::OWN_PROGRAMS_CWD);
    crate::process::die_with_parent(&mut cmd);
    crate::process::env::scrub(&mut cmd);
    let mut child = cmd.spawn().context("could not be run")?;
    let group = GroupKill::new(i32::try_from(child.id()).unwrap_or(0));
    let stdout = child.stdout.take().context("has no stdout")?;
    // Read on a thread: a full pipe must not stall the command while we
    // wait, and a pipe held open by something else must not stall us.
    let (sent, read) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut stdout = stdout;
        let kept = (&mut stdout).take(MAX_KEY_BYTES).read_to_end(&mut out);
        let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        let _ = sent.send(kept.map(|_| out));
    });
    // On its pidfd: the wait ends when the shell exits, or at the deadline.
    let pid = i32::try_from(child.id()).unwrap_or(0);
    crate::process::exits::wait_for_exits(&[pid], deadline.saturating_duration_since(std::time::Instant::now()));
    let Some(status) = child.try_wait().context("could not be waited for")? else {
        drop(group);
        let _ = child.kill();
        let _ = child.wait();
        bail!("did not finish within {} s (killed)", timeout.as_secs_f64());
    };
    // The pipe ends once all its writers are gone: kill those left behind.
    drop(group);
    if !status.success() {
        bail!("failed ({status})");
    }
    let wait = deadline.saturating_duration_since(std::time::Instant::now()).max(Duration::from_secs(1));
    match read.recv_timeout(wait) {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => bail!("its output could not be read: {e}"),
        Err(_) => bail!("its output did not end: something it started outside its process group holds it open"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wait (at most 20 s) until process `pid` has ended (a zombie has);
    /// fails the test naming `what` it is.
    fn wait_until_gone(pid: i32, what: &str) {
        let gone = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map_or(true, |s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !gone() {
            assert!(std::time::Instant::now() < deadline, "{what} ({pid}) did not end within 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_key_command_is_done_when_its_shell_exits_and_its_background_child_dies() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("bg.pid");
        // The background sleep holds stdout open for 100 s.
        let command = format!("sleep 100 & echo $! > {}; echo sk-bg", pid_file.display());
        let (sent, got) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            sent.send(run_key_command(&command, Duration::from_secs(60)).map_err(|e| e.to_string()))
        });
        let out = got.recv_timeout(Duration::from_secs(20)).expect("the key command returned when its shell exited");
        assert_eq!(out.unwrap(), b"sk-bg\n");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        wait_until_gone(pid, "the background sleep, which outlived the key command");
        let big = run_key_command("yes sk | head -c 200000", Duration::from_secs(20)).unwrap();
        assert_eq!(big.len() as u64, MAX_KEY_BYTES, "the first 64 KB are kept, the rest read and dropped");
        let err = run_key_command("echo sk-secret-value; exit 1", Duration::from_secs(20)).unwrap_err();
        assert!(!format!("{err:#}").contains("sk-secret"), "{err:#}");
    }

    #[test]
    fn a_hanging_key_command_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("alive");
        let pid_file = dir.path().join("child.pid");
        // A child of the shell that would outlive it, touching a file late;
        // the shell waits for it, past the timeout.
        let command = format!(
            "sh -c 'sleep 2 && touch {}' & echo $! > {}; wait; echo sk-late",
            marker.display(),
            pid_file.display()
        );
        let start = std::time::Instant::now();
        let err = run_key_command(&command, Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().contains("did not finish within 0.3 s"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        // Killed with the shell, it is gone without touching the file; left
        // running, it would touch it within two seconds and then end.
        let pid = std::fs::read_to_string(&pid_file).expect("the shell started its child").trim().parse().unwrap();
        wait_until_gone(pid, "the key command's own child");
        assert!(!marker.exists(), "the command's own child was left running");
        assert_eq!(run_key_command("printf ' sk-x\\n'", Duration::from_secs(5)).unwrap(), b" sk-x\n");
        assert!(run_key_command("exit 3", Duration::from_secs(5)).unwrap_err().to_string().contains("failed"));
    }
}
