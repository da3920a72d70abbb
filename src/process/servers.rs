//! Long-lived children (stdio MCP servers): each in a process group of its
//! own, noted here from the moment it exists, so the paths that end the
//! process at once ([`stop_all`]: a signal while the REPL waits for input)
//! find every one, even one whose handshake is still going on.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long stopped servers get to exit before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Process groups of running servers.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Note a new server's process group, and have the watchdog guard it
/// (so what the server started dies with the chat, even a SIGKILLed one).
pub fn remember(group: i32) {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.push(group);
    }
    super::reaper::guard(group);
}

fn forget(group: i32) {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.retain(|g| *g != group);
    }
}

/// SIGKILL one server's group at once (it failed, or its connection ended).
pub fn kill(group: i32) {
    super::escaped::sweep();
    // SAFETY: killpg takes plain integers and touches no memory; a group
    // that is already gone gives ESRCH, which is fine.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
    // After the kill: the number may be reused once it is gone.
    super::reaper::release(group);
    forget(group);
}

/// Stop every server's group now.
pub fn stop_all() {
    let groups = GROUPS.lock().map(|mut g| std::mem::take(&mut *g)).unwrap_or_default();
    stop(&groups);
}

/// SIGTERM each group, give them [`STOP_GRACE`] to go, then SIGKILL
/// what is left (a server's children that ignored the first signal).
pub fn stop(groups: &[i32]) {
    let groups: Vec<i32> = groups.iter().copied().filter(|g| *g > 1).collect();
    if groups.is_empty() {
        return;
    }
    // While the servers run: what they started outside their groups.
    super::escaped::sweep();
    // SAFETY: as in `kill`.
    let signal = |group: i32, sig: i32| unsafe { libc::killpg(group, sig) };
    for group in &groups {
        signal(*group, libc::SIGTERM);
    }
    // Each group's leader is the server itself: once it has exited, what
    // is left of the group gets SIGKILL at once.
    crate::runtime::blocking(|| wait_for_exits(&groups, STOP_GRACE));
    for group in &groups {
        kill(*group);
    }
}

/// Wait until every process of `pids` has exited, at most `grace`: on
/// each one's pidfd, which turns readable when it exits (a zombie waiting
/// to be reaped has), so the wait ends as the last one goes. One already
/// gone needs no wait; one that cannot be watched (a kernel without pidfd)
/// is given the whole grace.
fn wait_for_exits(pids: &[i32], grace: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let deadline = Instant::now() + grace;
    let mut unwatched = false;
    let mut watched: Vec<std::os::fd::OwnedFd> = Vec::new();
    for pid in pids {
        match rustix::process::Pid::from_raw(*pid)
            .map(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()))
        {
            Some(Ok(fd)) => watched.push(fd),
            Some(Err(rustix::io::Errno::SRCH)) | None => {}
            Some(Err(_)) => unwatched = true,
        }
    }
    while !watched.is_empty() || unwatched {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let Ok(timeout) = Timespec::try_from(left) else { return };
        let mut polled: Vec<PollFd> = watched.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
        match rustix::event::poll(&mut polled, Some(&timeout)) {
            Ok(0) => return,
            Ok(_) => {
                let exited: Vec<bool> = polled.iter().map(|p| !p.revents().is_empty()).collect();
                drop(polled);
                let mut exited = exited.into_iter();
                watched.retain(|_| !exited.next().unwrap_or(false));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_ends_when_the_processes_exit_and_is_bounded_when_they_do_not() {
        let spawn = |secs: &str| std::process::Command::new("sleep").arg(secs).spawn().unwrap();
        let (mut quick, mut slow) = (spawn("0.1"), spawn("30"));
        let pid = |c: &std::process::Child| i32::try_from(c.id()).unwrap();
        let started = Instant::now();
        wait_for_exits(&[pid(&quick)], Duration::from_secs(20));
        assert!(started.elapsed() < Duration::from_secs(10), "the wait ended with the exit");
        assert!(quick.try_wait().unwrap().is_some(), "it had exited");
        let started = Instant::now();
        wait_for_exits(&[pid(&slow)], Duration::from_millis(200));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(200) && waited < Duration::from_secs(10), "bounded: {waited:?}");
        assert!(slow.try_wait().unwrap().is_none(), "still running");
        slow.kill().unwrap();
        slow.wait().unwrap();
        // Gone (reaped): nothing to wait for.
        let started = Instant::now();
        wait_for_exits(&[pid(&quick)], Duration::from_secs(20));
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
