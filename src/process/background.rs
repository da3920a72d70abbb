//! A child left running while the chat goes on (a background
//! `glrs-compact`): in a process group of its own, guarded by the watchdog
//! ([`super::reaper`]) until the chat has seen it exit.
//!
//! When to release it: a pid can be reused only once its process is
//! reaped, so the release comes after the exit is seen but before the reap
//! ([`Background::finished`] looks with `waitid(WNOWAIT)`, which leaves the
//! zombie): a SIGKILL of the chat at any moment never has the watchdog kill
//! an unrelated group that took the number. Dropped unreaped (the chat
//! leaves, or moves to a new session, while it runs): released, so it is
//! left to finish, not killed by the watchdog when the chat exits.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};

/// A child running in the background, its group guarded until it is seen
/// to have exited.
#[derive(Debug)]
pub struct Background {
    child: Child,
    /// Its group while guarded; 0 once released.
    pgid: i32,
}

impl Background {
    /// Spawn `cmd` in a process group of its own and guard the group.
    /// `long_lived`: the calling thread lives as long as the chat, so the
    /// child may also ask for the parent-death signal ([`super::deathsig`]:
    /// it follows the forking thread), which covers the moment before it is
    /// guarded.
    pub fn start(mut cmd: Command, long_lived: bool) -> std::io::Result<Self> {
        cmd.process_group(0);
        if long_lived {
            super::deathsig::die_with_parent(&mut cmd);
        }
        let child = cmd.spawn()?;
        // Its pid is its group's id.
        let pgid = i32::try_from(child.id()).unwrap_or(0);
        if pgid > 0 {
            super::reaper::guard(pgid);
        }
        Ok(Background { child, pgid })
    }

    /// The child, for its pipes.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Whether it has exited, without reaping it (so its pid stays taken).
    fn exited(&self) -> std::io::Result<bool> {
        let pid = i32::try_from(self.child.id()).unwrap_or(0);
        // SAFETY: waitid writes only into `info`, a zeroed siginfo_t we own.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: as above; P_PID with the pid of our own unreaped child.
        if unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // With WNOHANG, a child still running leaves si_pid zero.
        // SAFETY: si_pid is valid to read for a waitid result.
        Ok(unsafe { info.si_pid() } != 0)
    }

    /// Its exit status once it has exited, released from the watchdog just
    /// before it is reaped (see the module doc); `None` while it runs.
    fn finished(&mut self) -> std::io::Result<Option<ExitStatus>> {
        if !self.exited()? {
            return Ok(None);
        }
        self.release();
        self.child.try_wait()
    }

    /// Wait until it has exited, then its status as [`Self::finished`]
    /// gives it (released, then reaped). The wait is on its pidfd, which
    /// turns readable when it exits: no polling, and dropping the wait
    /// leaves the child as it was.
    pub async fn exit(&mut self) -> std::io::Result<ExitStatus> {
        let pid = rustix::process::Pid::from_child(&self.child);
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
        // SAFETY: an OwnedFd is open for as long as it lives, and always
        // the same descriptor.
        let pidfd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
            .map_err(std::io::Error::from)?;
        loop {
            let mut ready = pidfd.readable().await?;
            if let Some(status) = self.finished()? {
                return Ok(status);
            }
            // Readable but not yet seen to exit by waitid: wait again.
            ready.clear_ready();
        }
    }

    fn release(&mut self) {
        if self.pgid > 0 {
            super::reaper::release(self.pgid);
            self.pgid = 0;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Unreaped, so its pid is still its own: safe to release. Left to
        // finish, as on every orderly exit of the chat.
        if self.pgid > 0 {
            super::escaped::leave_alone(self.pgid);
        }
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn exit_waits_for_the_exit_and_releases_before_the_reap() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let mut child = Background::start(cmd, false).unwrap();
        let pid = child.child().id();
        let runtime = crate::runtime::build().unwrap();
        let status = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), child.exit()).await })
            .expect("sh -c 'exit 3' ends within 10 s")
            .unwrap();
        crate::runtime::shut_down(runtime);
        assert_eq!(status.code(), Some(3));
        assert_eq!(child.pgid, 0, "released once seen to exit");
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "reaped after the release");
    }

    #[test]
    fn a_dropped_wait_leaves_the_child_running_and_guarded() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut child = Background::start(cmd, false).unwrap();
        let runtime = crate::runtime::build().unwrap();
        let waited = runtime.block_on(async { tokio::time::timeout(Duration::from_millis(50), child.exit()).await });
        assert!(waited.is_err(), "still running");
        assert!(child.pgid > 0, "still guarded");
        assert!(child.finished().unwrap().is_none());
        child.child().kill().unwrap();
        let status = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), child.exit()).await })
            .expect("a killed sleep ends within 10 s")
            .unwrap();
        crate::runtime::shut_down(runtime);
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    }
}
