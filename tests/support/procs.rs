//! Processes a test started indirectly (an MCP server, a `bash` tool's
//! command): learning their pids from the file they write, and checking
//! they are running or gone; and where the MCP test server is. Every wait is bounded and names what it
//! waited for.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Kills the processes it names when dropped: whatever a test started is
/// left at the end, pass or fail.
pub struct Reap(pub Vec<i32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: a plain kill(2) of a pid the test learned.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
    }
}

/// Whether `pid` is a live process (a zombie, which runs nothing and only
/// waits to be reaped, is not).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// The pids written to `file` (separated by white space), once it holds at
/// least one and nothing else: a shell's `echo $$ > file` creates the file
/// before it writes, so an empty file means "not yet". Fails the test after
/// `limit`, naming `what` should have written them.
pub fn wait_for_pids(file: &Path, limit: Duration, what: &str) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Option<Vec<i32>> = text.split_whitespace().map(|p| p.parse().ok()).collect();
        match pids {
            Some(pids) if !pids.is_empty() => return pids,
            _ => assert!(
                Instant::now() < deadline,
                "waited {limit:?} for {what} to write its pids to {} (it holds {text:?})",
                file.display()
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (at most `limit`) until none of `pids` is running; fails the test
/// naming `what` they are.
pub fn wait_until_gone(pids: &[i32], limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    while pids.iter().any(|p| alive(*p)) {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        assert!(Instant::now() < deadline, "waited {limit:?} for {what} to end: still running: {left:?} of {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The MCP test server (`examples/mcp_test_server.rs`), which `cargo test`
/// builds beside the test binary.
pub fn mcp_test_server() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let debug = exe.parent().and_then(Path::parent).expect("the target profile folder");
    let path = debug.join("examples").join("mcp_test_server");
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds it; alone, run `cargo build --example mcp_test_server`",
        path.display()
    );
    path
}

/// The variable a test's command sets to find its processes from outside:
/// a sandboxed command runs in a PID namespace of its own, so the `$$` it
/// writes is not the host's number.
pub const MARK: &str = "GLRS_TEST_MARK";

/// The live processes whose environment (as they were started) holds
/// `GLRS_TEST_MARK=mark`.
pub fn marked(mark: &str) -> Vec<i32> {
    let want = format!("{MARK}={mark}");
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            alive(*pid) && environ.split(|b| *b == 0).any(|v| v == want.as_bytes())
        })
        .collect()
}

/// Once `file` exists (the command writes it after starting what it
/// marked with the file's path, [`MARK`]), the marked processes, waited
/// for (a shell's `exec` may not have run yet). Fails the test after
/// `limit`, naming `what` they are.
pub fn wait_for_marked(file: &Path, limit: Duration, what: &str) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if file.exists() {
            let found = marked(&file.display().to_string());
            if !found.is_empty() {
                return found;
            }
        }
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} for {what} (marked {MARK}={}, and the file written)",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The parent of `pid`, field 4 of its stat (after the parenthesised name,
/// which may hold spaces).
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()
}

/// The ancestors of `pid`, nearest first, up to (not including) `stop`.
pub fn ancestors_below(pid: i32, stop: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut at = pid;
    while let Some(parent) = parent_of(at).filter(|p| *p != stop && *p > 1) {
        found.push(parent);
        at = parent;
    }
    found
}
