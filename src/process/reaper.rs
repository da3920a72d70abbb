//! The process groups of running commands die with glrs, however it dies.
//!
//! Every `bash` command, hook and exec tool runs in a process group of its
//! own ([`super::run_process`]), killed when the call ends. That kill
//! is the chat's to make, so a SIGKILLed chat cannot make it; its direct
//! children still die ([`super::deathsig`]), but what they started (a
//! backgrounded `sleep`, the compilers `make` runs) would be reparented to
//! init and run on. So the first group a process creates starts a watchdog,
//! `glrs-reaper`: a child that reads the groups to guard (`+ PGID`) and the
//! ones no longer running (`- PGID`) from a pipe whose write end only this
//! process holds (close-on-exec, so no command inherits it). When this
//! process dies, in any way, the kernel closes that end; the watchdog reads
//! end-of-file, SIGKILLs every group it still guards, and exits. It is
//! never sent a death signal of its own (it must outlive the chat by the
//! moment it takes to act), exits at end-of-file whatever it guards (on an
//! orderly exit that is nothing: every group was released), and runs in
//! its own process group, so Ctrl-C at the terminal does not reach it.
//!
//! Why this and not:
//! - `PR_SET_CHILD_SUBREAPER`: it makes the chat the parent of orphans, but
//!   the chat is what died; its orphans go on to init and nothing acts.
//! - cgroups: killing a cgroup needs one delegated to the user (systemd
//!   does, not every system), and moving processes into it races the fork.
//! - `PR_SET_PDEATHSIG` on every descendant: it is cleared by fork, and
//!   the commands are arbitrary programs.
//! - re-running the current executable with a hidden variable: the library
//!   runs inside six programs but also inside `cargo test`'s and the
//!   benches' binaries, whose mains it does not own (re-running one runs a
//!   test harness or a benchmark); and a fork without exec would keep a
//!   copy of the chat's memory and every descriptor it had open (session
//!   locks, MCP servers' pipes) for the chat's whole life. `/bin/sh` is
//!   there wherever the `bash` tool works, costs a megabyte, and the
//!   script below is the watchdog's whole job.
//!
//! A group is guarded from just after its leader starts (its pid is its
//! group's id, known only then) until just after it is killed: a SIGKILL
//! in the microseconds between a leader's exec and its registration leaves
//! only what the leader forked in that time (a shell takes a millisecond
//! to start). A release comes after the group's SIGKILL, so a later
//! process that reuses the number is never killed for it. A background
//! `glrs-compact` ([`super::Background`]) is guarded the
//! same way, and released once it is seen to have exited but before it is
//! reaped, for the same reason.

use std::io::Write as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The watchdog's name (its `argv[0]`, as `ps` shows it).
pub const NAME: &str = "glrs-reaper";

/// The watchdog. `g` holds the guarded groups, space-separated with a space
/// at each end so a group is found as ` PGID `; `e` the escaped processes
/// (`p PID START`, forgotten by `x PID START`; [`super::escaped`]) as
/// `PID:START`, each killed with its group at the end only if its start
/// time (field 22 of its stat, the 20th after the name) is still START, so
/// a pid reused since is left alone. Lines that are not an op and numbers
/// are ignored. `kill -s KILL -- -PGID` is the form every
/// POSIX shell's builtin takes (dash rejects `-9 -- -PGID`).
const SCRIPT: &str = r#"g=' '
e=' '
while read -r op p t; do
  case $p in ''|*[!0-9]*) continue ;; esac
  case $op in
    +) g="$g$p " ;;
    -) case $g in *" $p "*) g="${g%%" $p "*} ${g#*" $p "}" ;; esac ;;
    p|x) case $t in ''|*[!0-9]*) continue ;; esac
      case $op in
        p) e="$e$p:$t " ;;
        x) case $e in *" $p:$t "*) e="${e%%" $p:$t "*} ${e#*" $p:$t "}" ;; esac ;;
      esac ;;
  esac
done
for p in $g; do kill -s KILL -- "-$p" 2>/dev/null; done
for pt in $e; do
  p=${pt%%:*}; s=
  read -r s < "/proc/$p/stat" 2>/dev/null || continue
  s=${s##*) }; set -- $s
  [ "${20}" = "${pt#*:}" ] || continue
  kill -s KILL -- "-$p" 2>/dev/null; kill -s KILL "$p" 2>/dev/null
done
"#;

/// A running watchdog and the write end of its pipe.
pub struct Watchdog {
    child: Child,
    pipe: ChildStdin,
}

impl Watchdog {
    /// Start one, guarding nothing yet.
    pub fn start() -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("/bin/sh")
            .arg0(NAME)
            .args(["-c", SCRIPT])
            // No BASH_ENV or ENV (a /bin/sh that is bash would run it), and
            // no hold on the chat's directory.
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        match child.stdin.take() {
            Some(pipe) => Ok(Watchdog { child, pipe }),
            None => Err(std::io::Error::other("the watchdog has no stdin")),
        }
    }

    /// Its pid.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Guard `pgid`.
    pub fn guard(&mut self, pgid: i32) -> std::io::Result<()> {
        self.send('+', pgid)
    }

    /// Stop guarding `pgid`.
    pub fn release(&mut self, pgid: i32) -> std::io::Result<()> {
        self.send('-', pgid)
    }

    /// Kill process `pid` (and its group, if it leads one) at the end if
    /// it still started at `start`.
    pub fn guard_process(&mut self, pid: i32, start: u64) -> std::io::Result<()> {
        self.write(&format!("p {pid} {start}\n"))
    }

    /// Stop guarding process `pid` that started at `start`.
    pub fn release_process(&mut self, pid: i32, start: u64) -> std::io::Result<()> {
        self.write(&format!("x {pid} {start}\n"))
    }

    fn send(&mut self, op: char, pgid: i32) -> std::io::Result<()> {
        self.write(&format!("{op} {pgid}\n"))
    }

    fn write(&mut self, line: &str) -> std::io::Result<()> {
        // One write of a few bytes: atomic on a pipe (under PIPE_BUF), so
        // a SIGKILL never leaves half a line.
        self.pipe.write_all(line.as_bytes())
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Close the pipe, as this process's death would: the watchdog kills
    /// what it guards and exits. Returns the child to wait for.
    pub fn close(self) -> Child {
        drop(self.pipe);
        self.child
    }

    /// End it without its end-of-file kill: SIGKILL first, then the pipe.
    fn discard(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This process's watchdog (started at the first group) and the groups it
/// guards, kept so a replacement can be told them all.
struct Guarded {
    watchdog: Option<Watchdog>,
    groups: Vec<i32>,
    /// Escaped processes: pid and start time.
    processes: Vec<(i32, u64)>,
}

static GUARDED: Mutex<Guarded> = Mutex::new(Guarded { watchdog: None, groups: Vec::new(), processes: Vec::new() });

/// Have the watchdog SIGKILL group `pgid` if this process dies before
/// [`release`]. Starts the watchdog the first time, and again if it was
/// killed. Best effort: without `/bin/sh` the group is only killed on
/// orderly ways out, as before, rather than the command failing.
pub fn guard(pgid: i32) {
    let mut guarded = GUARDED.lock().unwrap_or_else(PoisonError::into_inner);
    guarded.groups.push(pgid);
    if let Some(watchdog) = &mut guarded.watchdog
        && watchdog.running()
        && watchdog.guard(pgid).is_ok()
    {
        return;
    }
    restart(&mut guarded);
}

/// Have the watchdog SIGKILL process `pid` (and the group it leads) if
/// this process dies, provided it still started at `start`.
pub fn guard_process(pid: i32, start: u64) {
    let mut guarded = GUARDED.lock().unwrap_or_else(PoisonError::into_inner);
    guarded.processes.push((pid, start));
    if let Some(watchdog) = &mut guarded.watchdog
        && watchdog.running()
        && watchdog.guard_process(pid, start).is_ok()
    {
        return;
    }
    restart(&mut guarded);
}

/// Stop guarding process `pid` that started at `start` (it was reaped).
pub fn release_process(pid: i32, start: u64) {
    let mut guarded = GUARDED.lock().unwrap_or_else(PoisonError::into_inner);
    guarded.processes.retain(|p| *p != (pid, start));
    if let Some(watchdog) = &mut guarded.watchdog {
        let _ = watchdog.release_process(pid, start);
    }
}

/// The guarded groups, and the watchdog's pid (if it runs).
pub fn guarded() -> (Vec<i32>, Option<i32>) {
    let guarded = GUARDED.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = guarded.watchdog.as_ref().and_then(|w| i32::try_from(w.id()).ok());
    (guarded.groups.clone(), pid)
}

/// None yet, or someone killed it: a new one, told everything guarded.
fn restart(guarded: &mut Guarded) {
    if let Some(old) = guarded.watchdog.take() {
        old.discard();
    }
    let Ok(mut watchdog) = Watchdog::start() else { return };
    let told = guarded.groups.iter().all(|g| watchdog.guard(*g).is_ok())
        && guarded.processes.iter().all(|(p, t)| watchdog.guard_process(*p, *t).is_ok());
    if told {
        guarded.watchdog = Some(watchdog);
    } else {
        watchdog.discard();
    }
}

/// Stop guarding `pgid`: call after killing the group.
pub fn release(pgid: i32) {
    let mut guarded = GUARDED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(at) = guarded.groups.iter().position(|g| *g == pgid) {
        guarded.groups.swap_remove(at);
    }
    if let Some(watchdog) = &mut guarded.watchdog {
        // A dead watchdog is replaced at the next guard, told only the
        // groups still live.
        let _ = watchdog.release(pgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::time::{Duration, Instant};

    fn sleeper() -> Child {
        Command::new("sleep").arg("30").process_group(0).spawn().unwrap()
    }

    /// The exit status of `child`, once it has one (bounded).
    fn ended(child: &mut Child, what: &str) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{what} did not end within 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn at_end_of_file_it_kills_the_groups_it_guards_and_exits() {
        let mut guarded = sleeper();
        let mut released = sleeper();
        let mut watchdog = Watchdog::start().unwrap();
        watchdog.guard(guarded.id() as i32).unwrap();
        watchdog.guard(released.id() as i32).unwrap();
        watchdog.release(released.id() as i32).unwrap();
        let mut child = watchdog.close();
        assert!(ended(&mut child, "the watchdog").success());
        assert_eq!(ended(&mut guarded, "the guarded group").signal(), Some(libc::SIGKILL));
        assert_eq!(released.try_wait().unwrap(), None, "a released group is left alone");
        released.kill().unwrap();
        released.wait().unwrap();
    }

    /// Field 22 of `pid`'s stat: its start time.
    fn start_of(pid: u32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_escaped_process_is_killed_only_while_its_start_time_is_the_one_told() {
        let mut escaped = sleeper();
        let mut other = sleeper();
        let mut released = sleeper();
        let mut watchdog = Watchdog::start().unwrap();
        watchdog.guard_process(escaped.id() as i32, start_of(escaped.id())).unwrap();
        // Told with another start time: a pid reused since is left alone.
        watchdog.guard_process(other.id() as i32, start_of(other.id()) + 1).unwrap();
        watchdog.guard_process(released.id() as i32, start_of(released.id())).unwrap();
        watchdog.release_process(released.id() as i32, start_of(released.id())).unwrap();
        let mut child = watchdog.close();
        assert!(ended(&mut child, "the watchdog").success());
        assert_eq!(ended(&mut escaped, "the escaped process").signal(), Some(libc::SIGKILL));
        for (left, what) in [(&mut other, "a reused pid"), (&mut released, "a released process")] {
            assert_eq!(left.try_wait().unwrap(), None, "{what} is left alone");
            left.kill().unwrap();
            left.wait().unwrap();
        }
    }

    #[test]
    fn guarding_nothing_it_exits_at_end_of_file() {
        let mut child = Watchdog::start().unwrap().close();
        assert!(ended(&mut child, "the watchdog").success());
    }
}
