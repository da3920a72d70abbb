//! Long-lived children (stdio MCP servers): each in a process group of its
//! own, noted here from the moment it exists, so the paths that end the
//! process at once ([`stop_all`]: a signal while the REPL waits for input)
//! find every one, even one whose handshake is still going on.

use std::sync::Mutex;
use std::time::Duration;

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
    crate::runtime::blocking(|| super::exits::wait_for_exits(&groups, STOP_GRACE));
    for group in &groups {
        kill(*group);
    }
}
