//! Descendants that left their process group (`setsid`, `setpgid`, a
//! daemon's double fork): a group kill does not reach them, so they would
//! outlive the call and the chat, even a SIGKILLed one.
//!
//! Two parts. The chat is a child subreaper ([`adopt_orphans`],
//! `PR_SET_CHILD_SUBREAPER`): an orphan among its descendants (a `setsid
//! sleep &` whose shell has exited) is reparented to the chat rather than
//! to init, so it stays in the chat's tree. And at moments that follow the
//! start of processes the chat does not see (the end of every command,
//! hook, exec tool and key command, the start of an MCP server and the end
//! of each MCP call) [`sweep`] walks the chat's descendants in `/proc`
//! and tells the watchdog ([`super::reaper`]) each live one whose group is
//! neither the chat's own nor a guarded one, by pid and start time. When
//! the chat dies, however it dies, the watchdog kills each that still has
//! that start time (so a reused pid is never hit) with its group.
//!
//! Limits: a process started and escaped between two sweeps is unknown
//! until the next one (an MCP server that daemonises a child on its own,
//! long after its last call); an orphan that exits before any sweep saw it
//! stays a zombie of the chat until the chat exits (only escaped ones seen
//! alive are reaped, so the chat never reaps a child of its own that
//! something else waits for).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process has asked to adopt orphans.
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Groups left to finish on their own (a background `glrs-compact` the
/// chat let go of): never taken for escaped.
static LEFT_ALONE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Escaped descendants told to the watchdog: pid and start time.
static ESCAPED: Mutex<Vec<(i32, u64)>> = Mutex::new(Vec::new());

/// Make this process a child subreaper, so orphans among its descendants
/// stay its own, and let [`sweep`] look for escaped ones. Linux only; a
/// no-op elsewhere. For the programs' edge (glrs-chat), not for library
/// users whose mains reap nothing.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with plain integers.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } == 0 {
            ADOPTING.store(true, Ordering::SeqCst);
        }
    }
}

/// Never take group `pgid` for escaped: it was let go on purpose.
pub fn leave_alone(pgid: i32) {
    if let Ok(mut left) = LEFT_ALONE.lock() {
        left.push(pgid);
    }
}

/// One line of `/proc/PID/stat`, the fields used here.
#[derive(Debug, Clone, Copy)]
struct Stat {
    pid: i32,
    ppid: i32,
    pgid: i32,
    zombie: bool,
    /// Clock ticks after boot when it started: with the pid, who it is.
    start: u64,
}

fn stat_of(pid: i32) -> Option<Stat> {
    let text = proc_file(&format!("/proc/{pid}/stat"))?;
    // The name is in parentheses and may hold anything: fields follow the
    // last ')'.
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
    Some(Stat {
        pid,
        zombie: fields.first() == Some(&"Z"),
        ppid: i32::try_from(number(1)?).ok()?,
        pgid: i32::try_from(number(2)?).ok()?,
        // Field 22 of the line, the 20th after the name.
        start: u64::try_from(number(19)?).ok()?,
    })
}

/// A small file of `/proc`, read whole in one or two reads (its size is
/// 0 to `stat`, so `read_to_string` would grow its buffer from 32 bytes).
fn proc_file(path: &str) -> Option<String> {
    let mut text = String::with_capacity(1024);
    std::io::Read::read_to_string(&mut std::fs::File::open(path).ok()?, &mut text).ok()?;
    Some(text)
}

/// This process's descendants: found from the children the kernel lists
/// for each thread (`/proc/PID/task/TID/children`), a few reads for the
/// small tree a chat has; else from a pass over all of `/proc`, a read for
/// every process of the system (issue 32: hundreds, after every command).
fn descendants(me: i32) -> Vec<Stat> {
    children(me).map_or_else(|| descendants_in_all(me), |first| descendants_from(me, first))
}

/// The children of every thread of `pid`; `None` when the kernel does not
/// list children (no `children` file), or `pid` is gone.
fn children(pid: i32) -> Option<Vec<i32>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let tid = task.ok()?.file_name();
        let listed = proc_file(&format!("/proc/{pid}/task/{}/children", tid.to_string_lossy()))?;
        out.extend(listed.split_whitespace().filter_map(|n| n.parse::<i32>().ok()));
    }
    Some(out)
}

/// The tree below `me` from its `first` children down.
fn descendants_from(me: i32, first: Vec<i32>) -> Vec<Stat> {
    let mut found = Vec::new();
    let mut pending = first;
    while let Some(pid) = pending.pop() {
        // Gone since it was listed: so are its children, or they are ours.
        let Some(stat) = stat_of(pid).filter(|s| s.pid != me) else { continue };
        pending.extend(children(pid).unwrap_or_default());
        found.push(stat);
    }
    found
}

/// This process's descendants, from one pass over `/proc`.
fn descendants_in_all(me: i32) -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let all: Vec<Stat> =
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter_map(stat_of).collect();
    let mut found = Vec::new();
    let mut parents = vec![me];
    while let Some(parent) = parents.pop() {
        for s in all.iter().filter(|s| s.ppid == parent && s.pid != me) {
            parents.push(s.pid);
            found.push(*s);
        }
    }
    found
}

/// Tell the watchdog of every escaped descendant not yet told, and reap
/// the chat's escaped orphans that have exited. Cheap when there is
/// nothing to find (one pass over `/proc`); does nothing unless
/// [`adopt_orphans`] was called.
pub fn sweep() {
    if !ADOPTING.load(Ordering::SeqCst) {
        return;
    }
    let me = std::process::id() as i32;
    // SAFETY: getpgrp takes nothing and cannot fail.
    let own_group = unsafe { libc::getpgrp() };
    let (guarded, watchdog) = super::reaper::guarded();
    let left = LEFT_ALONE.lock().map(|l| l.clone()).unwrap_or_default();
    let Ok(mut escaped) = ESCAPED.lock() else { return };
    for s in descendants(me) {
        let known = escaped.contains(&(s.pid, s.start));
        if s.zombie {
            if known && s.ppid == me {
                reap(s);
                escaped.retain(|e| *e != (s.pid, s.start));
            }
            continue;
        }
        let ours = s.pgid == own_group || guarded.contains(&s.pgid) || left.contains(&s.pgid);
        if known || ours || Some(s.pid) == watchdog {
            continue;
        }
        escaped.push((s.pid, s.start));
        super::reaper::guard_process(s.pid, s.start);
    }
}

/// Reap an escaped orphan that has exited, then have the watchdog forget
/// it: its pid is free only once reaped, and the watchdog checks the start
/// time anyway.
fn reap(s: Stat) {
    let mut status = 0;
    // SAFETY: waitpid on a zombie child of ours that nothing else waits
    // for (it was adopted, not started by us), with WNOHANG.
    unsafe {
        libc::waitpid(s.pid, &mut status, libc::WNOHANG);
    }
    super::reaper::release_process(s.pid, s.start);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_list_of_children_finds_what_a_pass_over_proc_finds() {
        use std::os::unix::process::CommandExt;
        let me = std::process::id() as i32;
        let mut shells: Vec<std::process::Child> = (0..2)
            .map(|_| std::process::Command::new("sh").args(["-c", "sleep 30 & wait"]).process_group(0).spawn().unwrap())
            .collect();
        let ids: Vec<i32> = shells.iter().map(|c| c.id() as i32).collect();
        // Only these trees: other tests start processes of their own.
        let ours = |found: Vec<Stat>| {
            let mut pids: Vec<i32> =
                found.iter().filter(|s| ids.contains(&s.pid) || ids.contains(&s.ppid)).map(|s| s.pid).collect();
            pids.sort();
            pids
        };
        // Named wait, bounded: until both shells have started their sleep.
        let started = std::time::Instant::now();
        while ours(descendants_in_all(me)).len() < 4 && started.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let listed = children(me).expect("this kernel lists children");
        let (fast, full) = (ours(descendants_from(me, listed)), ours(descendants_in_all(me)));
        for shell in &mut shells {
            // SAFETY: kill of the process group this test started.
            unsafe { libc::kill(-(shell.id() as i32), libc::SIGKILL) };
            let _ = shell.wait();
        }
        assert_eq!(full.len(), 4, "two shells and their sleeps: {full:?}");
        assert_eq!(fast, full);
    }

    #[test]
    fn the_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let me = stat_of(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        // SAFETY: getppid cannot fail.
        assert_eq!(me.ppid, unsafe { libc::getppid() });
        assert!(me.start > 0 && !me.zombie);
    }
}
