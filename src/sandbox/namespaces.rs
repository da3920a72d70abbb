//! The sandboxed command's own namespaces, its init, and what it may not
//! keep: every sandboxed command runs
//!
//! - in a user namespace of its own (its uid and gid mapped to
//!   themselves), always, so root's commands hold no capability in the
//!   host's namespaces; and then with no capability at all, even in its own
//!   (the bounding set emptied, the ambient set cleared, and the
//!   securebits locked so that exec as uid 0 grants none): `hostname`,
//!   `mknod`, `mount` are refused;
//! - in a mount, IPC (SysV shared memory, semaphores and queues of other
//!   processes are out of sight) and UTS namespace of its own;
//! - with the network off, in a network namespace of its own with only
//!   `lo`, up: nothing outside is reachable whatever the other layers
//!   allow, abstract Unix sockets are those of this namespace only, and a
//!   network proxy can later be handed in as a socket listening on `lo`;
//! - in a PID namespace of its own with a fresh `/proc` (best effort: a
//!   container whose `/proc` has masked paths refuses it, and the host's
//!   stays): its init (pid 1) is a fork of the child that waits for the
//!   command and relays its status, and when the init ends, the kernel
//!   kills everything left in the namespace, `setsid`/`setpgid`/daemonised
//!   helpers included. So what a call started ends when the call ends;
//! - in a new session (`setsid`) with no controlling terminal, so it
//!   cannot open `/dev/tty` to type into the user's terminal;
//! - with a fresh session keyring (the user's keys are not its own).
//!
//! The chain of processes, each dying with the one before it
//! (`PR_SET_PDEATHSIG`): glrs-chat → the child glrs forked (the relay:
//! outside the PID namespace, it waits for the init and exits as the
//! command did) → the init (pid 1) → the command (pid 2). A SIGKILLed chat
//! kills the relay, which kills the init, which takes the namespace down.
//! The relay and the init close every descriptor they do not need (the
//! chat's files, the command's pipes), so nothing waits on them.
//!
//! Everything here runs between fork and exec: system calls only, nothing
//! allocated (the maps are built by [`Isolation::new`], in the parent).

use std::ffi::CString;
use std::io;

/// `KEYCTL_JOIN_SESSION_KEYRING` (keyutils): join a new anonymous
/// session keyring when the name is null.
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// `SECBIT_*` (linux/securebits.h): no capabilities for uid 0 at exec, no
/// fix-up on uid changes, no keeping them, no ambient raise; each locked.
const SECURE_NO_ROOT: libc::c_ulong = 0xff;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The namespaces of one command, built in the parent.
pub struct Isolation {
    uid_map: CString,
    gid_map: CString,
    /// The network is off: a network namespace of its own.
    own_network: bool,
}

/// `-1` from a libc call as the error it set.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Write `text` to the proc file `path` (in the child: no allocation).
fn write_proc(path: &std::ffi::CStr, text: &[u8]) -> io::Result<()> {
    // SAFETY: a valid C string path, a buffer we own; the fd is closed.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd)?;
        let n = libc::write(fd, text.as_ptr().cast(), text.len());
        libc::close(fd);
        if n != text.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Close every descriptor but `keep` (sorted, at most two).
fn close_all_but(keep: &[libc::c_int]) {
    let mut first: libc::c_uint = 0;
    // SAFETY: close_range on ranges of descriptor numbers; it touches no memory.
    unsafe {
        for &fd in keep {
            let fd = fd as libc::c_uint;
            if fd > first {
                libc::close_range(first, fd - 1, 0);
            }
            first = fd + 1;
        }
        libc::close_range(first, libc::c_uint::MAX, 0);
    }
}

/// Wait for `pid`, through interruptions; its wait status.
fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status we own.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Some(status);
        }
        if rc == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// End this process as wait status `status` says its command ended: the
/// same exit code, or the same signal.
fn exit_as(status: libc::c_int) -> ! {
    // SAFETY: _exit, kill, signal and setrlimit are async-signal-safe.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let mut only = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            // No core of this copy of glrs: the command's own was dumped.
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 1 })
    }
}

/// Block every signal (`all`), or none: the relay and the init are
/// copies of glrs that never exec, so glrs's own handlers (the runtime's
/// SIGCHLD one) are still installed in them and must never run; the
/// command gets the empty mask back before it execs.
fn block_signals(all: bool) {
    // SAFETY: a signal set we own; sigprocmask is async-signal-safe.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        if all {
            libc::sigfillset(&mut set);
        } else {
            libc::sigemptyset(&mut set);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// A pipe, both ends close-on-exec and non-blocking: (read, write).
fn pipe() -> io::Result<[libc::c_int; 2]> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array we own.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    Ok(fds)
}

/// Bring `lo` up in the command's own network namespace.
fn loopback_up() -> io::Result<()> {
    // SAFETY: a socket we close, and ioctls on the ifreq we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        check(fd)?;
        let mut req: libc::ifreq = std::mem::zeroed();
        for (to, from) in req.ifr_name.iter_mut().zip(b"lo") {
            *to = *from as libc::c_char;
        }
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        let error = io::Error::last_os_error();
        libc::close(fd);
        if rc != 0 {
            return Err(error);
        }
    }
    Ok(())
}

/// Drop every capability for good: bounding set, ambient set, the sets
/// themselves, and exec as uid 0 granting them again.
fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl and capset with plain integers and structs we own.
    unsafe {
        check(libc::prctl(libc::PR_SET_SECUREBITS, SECURE_NO_ROOT, 0, 0, 0))?;
        // Past the kernel's last capability the call gives EINVAL: done.
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(io::Error::last_os_error());
            }
        }
        check(libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0))?;
        let header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
        let none = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        check(libc::syscall(libc::SYS_capset, &header, none.as_ptr()) as libc::c_int)?;
    }
    Ok(())
}

impl Isolation {
    /// For a command of a sandbox whose network is `network`.
    pub fn new(network: bool) -> io::Result<Isolation> {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let map = |id: u32| CString::new(format!("{id} {id} 1\n")).map_err(io::Error::other);
        Ok(Isolation { uid_map: map(uid)?, gid_map: map(gid)?, own_network: !network })
    }

    /// Enter the namespaces (in the child; the PID namespace is the next
    /// child's): then the mounts may be made.
    pub fn enter(&self) -> io::Result<()> {
        let mut flags =
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
        if self.own_network {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: unshare takes flags; the child is single-threaded (just
        // forked), as CLONE_NEWUSER needs.
        check(unsafe { libc::unshare(flags) })?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/uid_map", self.uid_map.as_bytes())?;
        write_proc(c"/proc/self/gid_map", self.gid_map.as_bytes())?;
        if self.own_network {
            loopback_up()?;
        }
        Ok(())
    }

    /// Fork the PID namespace's init. Returns only in the init, set up:
    /// dying with the relay, a fresh `/proc`, a new session, a fresh
    /// session keyring, no capabilities. The child that called it becomes
    /// the relay: it waits for the init and exits as the command did.
    pub fn start_init(&self) -> io::Result<Init> {
        // `alive`: its write end lives as long as the relay, so the init
        // sees whether the relay died before it could ask to die with it.
        // `status`: the init hands the command's wait status on.
        let alive = pipe()?;
        let status = pipe()?;
        block_signals(true);
        // The relay and the init hold a copy of the chat's memory (its
        // environment, the provider's key): not dumpable, so a command in
        // the same Landlock domain cannot read it (`/proc/1/mem`,
        // `/proc/1/environ`, ptrace); the command's exec makes it dumpable.
        // SAFETY: prctl with plain integers.
        check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) })?;
        // SAFETY: fork in a single-threaded child; each side makes only
        // async-signal-safe calls after it.
        let init = unsafe { libc::fork() };
        check(init)?;
        if init > 0 {
            let mut keep = [alive[1], status[0]];
            keep.sort_unstable();
            close_all_but(&keep);
            let init_status = wait_for(init).unwrap_or(0);
            let mut relayed: libc::c_int = 0;
            // SAFETY: read into the integer we own; the pipe is non-blocking.
            let n = unsafe { libc::read(status[0], (&raw mut relayed).cast(), size_of::<libc::c_int>()) };
            exit_as(if n == size_of::<libc::c_int>() as isize { relayed } else { init_status });
        }
        // SAFETY: close, prctl, read, mount, setsid, syscall: plain calls.
        unsafe {
            libc::close(alive[1]);
            libc::close(status[0]);
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0))?;
            let mut byte = 0u8;
            // End of file: the relay is gone already, and no signal will come.
            if libc::read(alive[0], (&raw mut byte).cast(), 1) == 0 {
                libc::_exit(1);
            }
            libc::close(alive[0]);
            // Best effort (a container's masked /proc refuses it): the
            // host's /proc then stays, its numbers not the namespace's.
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            let null = std::ptr::null::<libc::c_void>();
            libc::mount(c"proc".as_ptr(), c"/proc".as_ptr(), c"proc".as_ptr(), flags, null);
            check(libc::setsid())?;
            // Without keyrings in the kernel there is nothing to leave.
            libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0usize);
        }
        drop_capabilities()?;
        Ok(Init { status_fd: status[1] })
    }
}

/// In the init: what it hands the command's status on to.
pub struct Init {
    status_fd: libc::c_int,
}

impl Init {
    /// Last, in the init: fork the command, which returns (and execs);
    /// the init reaps whatever is reparented to it until the command has
    /// exited, hands its status to the relay and exits, and the kernel
    /// then kills what is left in the namespace.
    pub fn start_command(self) -> io::Result<()> {
        let status_fd = self.status_fd;
        // SAFETY: fork in the single-threaded init.
        let command = unsafe { libc::fork() };
        check(command)?;
        if command == 0 {
            block_signals(false);
            return Ok(());
        }
        close_all_but(&[status_fd]);
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status we own.
            let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
            if pid == command {
                // SAFETY: write of the integer we own; then _exit.
                unsafe {
                    libc::write(status_fd, (&raw const status).cast(), size_of::<libc::c_int>());
                    libc::_exit(0);
                }
            }
            if pid == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // SAFETY: _exit.
                unsafe { libc::_exit(1) };
            }
        }
    }
}
