//! The Linux backend: Landlock, seccomp and namespaces of the command's own,
//! applied to the child between `fork` and `exec` (so the command and
//! everything it starts, `setsid` children included, are held; nothing can
//! lift it: `no_new_privs`, and Landlock refuses mount changes to a
//! sandboxed process).
//!
//! Landlock is allow-list only: a rule granting writes under a root grants
//! them to everything beneath it, so by itself it cannot keep `.git`
//! read-only inside a writable workspace, nor keep `~/.ssh` unreadable
//! while `/` is readable. So, as codex-rs's linux-sandbox does, the child
//! first enters a user and mount namespace of its own (its uid and gid
//! mapped to themselves) and there
//! - bind-mounts each protected subpath (`.git` and its `gitdir:` target,
//!   `.glrs`, `AGENTS.md`, glrs's data folder when inside a root) onto
//!   itself read-only: writes give `EROFS` whatever Landlock allows;
//! - covers each `denyRead` folder with an empty read-only tmpfs and each
//!   `denyRead` file with a read-only bind of `/dev/null`;
//!
//! then restricts itself with Landlock (read and execute everywhere, write
//! under the writable roots and `/dev/null`; TCP bind/connect refused when
//! the network is off; signals and abstract Unix sockets scoped to the
//! sandbox) and a seccomp filter (`seccomp.rs`: no Unix sockets, no other
//! sockets with the network off, no io_uring, no `TIOCSTI`, no keyrings).
//! The mounts are made before Landlock, which then forbids the command to
//! unmount them. The namespaces themselves (user, mount, PID with its
//! init, IPC, UTS, network), the new session and the dropped capabilities
//! are `namespaces.rs`'s.
//!
//! Limits: what is protected is what exists when the command starts (a
//! `.git` or `AGENTS.md` the command creates is its own); a protected path
//! that is a symlink protects its target, and the link itself can be
//! replaced; the command sees files of other users as owned by `nobody`
//! (only its own ids are mapped); a writable root that does not exist when
//! the command starts cannot be made by it. Everything the parent must
//! allocate (the Landlock ruleset with its rules, the BPF program, the
//! mount paths) is built before `fork`; the child only makes system calls.

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::namespaces::Isolation;
use super::seccomp::{self, Allowed};
use super::{Mode, Policy};

/// The Landlock ABI the rules are written for (the crate maps it down to
/// what the kernel has).
const TARGET_ABI: ABI = ABI::V7;
/// The oldest Landlock ABI that holds: 3 adds `truncate`, without which a
/// command could empty a file it may not write.
const LEAST_ABI: i64 = 3;

/// The kernel's Landlock ABI version, or why there is none.
pub fn landlock_abi() -> Result<i64, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 and the VERSION flag the call
    // only returns a number; it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi >= 0 {
        return Ok(abi);
    }
    Err(match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)".into()
        }
        Some(libc::EOPNOTSUPP) => "Landlock is turned off in this kernel (add landlock to the lsm= boot option)".into(),
        _ => format!("Landlock cannot be used: {}", io::Error::last_os_error()),
    })
}

/// What the kernel offers: the Landlock ABI when it is new enough.
pub fn check_kernel() -> Result<i64, String> {
    let abi = landlock_abi()?;
    if abi < LEAST_ABI {
        return Err(format!("this kernel's Landlock (ABI {abi}) is too old: ABI {LEAST_ABI} (Linux 6.2) is needed"));
    }
    Ok(abi)
}

/// Everything the child needs, built in the parent.
pub struct Prepared {
    /// The Landlock ruleset (its rules added), restricted onto in the child.
    ruleset: std::os::fd::OwnedFd,
    seccomp: seccompiler::BpfProgram,
    mounts: super::mounts::Mounts,
    isolation: Isolation,
}

/// The Landlock ruleset for `policy`, with its rules, made in the parent.
fn ruleset(policy: &Policy, private_tmp: Option<&Path>) -> Result<RulesetCreated, landlock::RulesetError> {
    let abi = TARGET_ABI;
    let mut ruleset =
        Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(AccessFs::from_all(abi))?;
    if !policy.network() {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?.scope(Scope::AbstractUnixSocket)?;
    }
    ruleset = ruleset.scope(Scope::Signal)?;
    let mut writable: Vec<PathBuf> = vec![PathBuf::from("/dev/null")];
    match policy.mode() {
        Mode::WorkspaceWrite => writable.extend(policy.writable_roots().iter().cloned()),
        Mode::ReadOnly | Mode::Off => {}
    }
    if let Some(tmp) = private_tmp {
        writable.push(tmp.to_path_buf());
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(["/dev"], AccessFs::IoctlDev))?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
}

/// Build everything for one command under `policy` (not `off`).
pub fn prepare(policy: &Policy, private_tmp: Option<&Path>) -> io::Result<Prepared> {
    let ruleset = ruleset(policy, private_tmp).map_err(|e| io::Error::other(format!("Landlock rules: {e}")))?;
    let ruleset: Option<std::os::fd::OwnedFd> = ruleset.into();
    let ruleset = ruleset.ok_or_else(|| io::Error::other("this kernel has no Landlock"))?;
    let allowed = Allowed { network: policy.network(), unix_sockets: !policy.unix_sockets().is_empty() };
    let seccomp = seccomp::filter(allowed).map_err(|e| io::Error::other(format!("seccomp filter: {e}")))?;
    let mounts = super::mounts::Mounts::new(policy, private_tmp)?;
    Ok(Prepared { ruleset, seccomp, mounts, isolation: Isolation::new(policy.network())? })
}

/// `-1` from a libc call as the error it set.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

impl Prepared {
    /// Enter the namespace and make the mounts (in the child).
    fn enter_namespace(&self) -> io::Result<()> {
        self.isolation.enter()?;
        // SAFETY: plain system calls with C strings we own.
        unsafe {
            let null = std::ptr::null::<libc::c_char>();
            check(libc::mount(null, c"/".as_ptr(), null, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()))?;
        }
        self.mounts.apply()?;
        Ok(())
    }

    /// Everything, in the child between fork and exec: the namespaces
    /// and the mounts, the PID namespace's init (the child stays behind as
    /// its relay), then Landlock (with `no_new_privs`) and seccomp, which
    /// the init and the command it forks last both hold.
    pub fn apply_in_child(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        self.enter_namespace()?;
        let init = self.isolation.start_init()?;
        // SAFETY: plain system calls on an fd we own.
        unsafe {
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            let rc = libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset.as_raw_fd(), 0u32);
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        seccompiler::apply_filter(&self.seccomp).map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        init.start_command()
    }
}

/// Check the kernel, then sandbox `sh -c 'exit 0'` for real (a namespace,
/// a hidden folder, Landlock, seccomp): what works here, or why not.
pub fn probe() -> Result<String, String> {
    let abi = check_kernel()?;
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a folder to try the sandbox in: {e}"))?;
    let hidden = dir.path().join("hidden");
    std::fs::create_dir(&hidden).map_err(|e| format!("cannot make a folder to try the sandbox in: {e}"))?;
    let policy = Policy::probe(dir.path(), &hidden);
    let prepared = prepare(&policy, None).map_err(|e| format!("the sandbox cannot be set up: {e}"))?;
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "exit 0"]).current_dir(dir.path()).stdin(std::process::Stdio::null());
    // SAFETY: as in Sandbox::hold: system calls only.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || prepared.apply_in_child());
    }
    match cmd.status() {
        Ok(status) if status.success() => Ok(format!("Landlock ABI {abi}, seccomp, namespaces")),
        Ok(status) => Err(format!("a sandboxed test command failed ({status})")),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EINVAL) => Err(format!(
            "the kernel refused to set it up ({e}: user namespaces may be off, see /proc/sys/user/max_user_namespaces)"
        )),
        Err(e) => Err(format!("the kernel refused to set it up: {e}")),
    }
}
