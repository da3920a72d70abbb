//! Children that die with glrs: on Linux every child the chat starts asks
//! the kernel (`PR_SET_PDEATHSIG`) for SIGKILL when its parent goes, so a
//! SIGKILLed glrs-chat (which cannot run its orderly stops) leaves no MCP
//! server, tool, hook, bash command or glrs-compact behind.
//!
//! Two limits, both the kernel's:
//! - The signal fires when the *thread* that forked the child exits, not the
//!   process. So only mark a command spawned on a thread that lives as long
//!   as the chat: the main thread, which runs the chat's current-thread tokio
//!   runtime (tokio's `Command::spawn` forks on the calling thread, never on a
//!   blocking-pool thread). Never from a short-lived thread such as the REPL's
//!   key watcher or a `spawn_blocking` task. (What the key watcher starts, a
//!   background `glrs-compact`, runs in a process group of its own that
//!   `super::reaper`'s watchdog kills instead.)
//! - It reaches only direct children, and fork clears it. A bash command's
//!   own children (its grandchildren) are out of its reach: they run in the
//!   command's process group, which `super::reaper`'s watchdog kills when
//!   the chat dies, however it dies.

/// Mark `cmd` so its child is SIGKILLed when the calling thread (see the
/// module doc: it must live as long as the chat) exits. Linux only; a no-op
/// elsewhere.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the hook only calls prctl, getppid and _exit, all
        // async-signal-safe, and touches no heap or lock.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died between the fork and the prctl:
                // then we were reparented and no signal will come.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};

    /// The mechanism and its caveat at once: a child marked on a thread
    /// that then ends is SIGKILLed, though this process lives on.
    #[test]
    fn a_marked_child_dies_with_the_thread_that_started_it() {
        let mut child = std::thread::spawn(|| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            die_with_parent(&mut cmd);
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the child outlived the thread that started it");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
