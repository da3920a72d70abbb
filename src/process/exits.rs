//! Waiting for processes to exit on their pidfds (readable once a process
//! has exited): the wait ends at the event, bounded, with no polling.

use std::time::{Duration, Instant};

/// Wait until every process of `pids` has exited, at most `grace`: on
/// each one's pidfd, which turns readable when it exits (a zombie waiting
/// to be reaped has), so the wait ends as the last one goes. One already
/// gone needs no wait; one that cannot be watched (a kernel without pidfd)
/// is given the whole grace. True when every one was seen to go.
pub fn wait_for_exits(pids: &[i32], grace: Duration) -> bool {
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
            return false;
        }
        let Ok(timeout) = Timespec::try_from(left) else { return false };
        let mut polled: Vec<PollFd> = watched.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
        match rustix::event::poll(&mut polled, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => {
                let exited: Vec<bool> = polled.iter().map(|p| !p.revents().is_empty()).collect();
                drop(polled);
                let mut exited = exited.into_iter();
                watched.retain(|_| !exited.next().unwrap_or(false));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    !unwatched
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
        assert!(wait_for_exits(&[pid(&quick)], Duration::from_secs(20)));
        assert!(started.elapsed() < Duration::from_secs(10), "the wait ended with the exit");
        assert!(quick.try_wait().unwrap().is_some(), "it had exited");
        let started = Instant::now();
        assert!(!wait_for_exits(&[pid(&slow)], Duration::from_millis(200)));
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
