//! API keys for providers (SPEC 4): from a configured `apiKeyCommand`,
//! run with a time limit and killed with all it started, else from the
//! environment; held only in a [`Secret`].

use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::Secret;

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

/// Run a key command with `sh -c` in its own process group; its stdout
/// (at most 64 KB). A command still running after `timeout` is killed
/// with everything it started, and is an error.
fn run_key_command(command: &str, timeout: Duration) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .context("could not be run")?;
    let stdout = child.stdout.take().context("has no stdout")?;
    // Read on a thread: a full pipe must not stall the command while we wait.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.take(64 << 10).read_to_end(&mut out);
        out
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().context("could not be waited for")? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            // The whole group: `sh -c 'sleep 1000'` leaves `sleep` otherwise.
            let group = format!("-{}", child.id());
            let _ = Command::new("sh").args(["-c", "kill -KILL -- \"$0\"", &group]).status();
            let _ = child.kill();
            let _ = child.wait();
            bail!("did not finish within {} s (killed)", timeout.as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if !status.success() {
        bail!("failed ({status})");
    }
    reader.join().map_err(|_| anyhow::anyhow!("its output could not be read"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hanging_key_command_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("alive");
        // A child of the shell that would outlive it, touching a file late.
        let command = format!("sleep 1 && touch {}; echo sk-late", marker.display());
        let start = std::time::Instant::now();
        let err = run_key_command(&command, Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().contains("did not finish within 0.3 s"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the command's own child was left running");
        assert_eq!(run_key_command("printf ' sk-x\\n'", Duration::from_secs(5)).unwrap(), b" sk-x\n");
        assert!(run_key_command("exit 3", Duration::from_secs(5)).unwrap_err().to_string().contains("failed"));
    }
}
