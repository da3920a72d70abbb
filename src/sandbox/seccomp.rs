//! The sandbox's seccomp filter: the system calls a sandboxed command may
//! not make, each refused with `EPERM` (so the command sees an error it
//! can report, not a kill), built in the parent and loaded in the child.
//!
//! - `socket` of any family but `AF_UNIX` when the network is off (the
//!   network namespace has nothing to reach anyway; this keeps a clear
//!   error), and `socket(AF_UNIX)` unless `sandbox.allowUnixSockets` lists
//!   a path: Landlock does not govern `connect()` to a socket file, and the
//!   user's own servers (tmux, screen, D-Bus, docker, an editor's) run
//!   anything they are asked to, outside the sandbox. seccomp sees only the
//!   call's numbers, not the path a later `connect` names, so a listed path
//!   turns Unix sockets on for every path. `socketpair(AF_UNIX)` stays: it
//!   connects two ends the command makes and nothing else (libuv's and
//!   Python's child pipes use it).
//! - `io_uring_setup`: io_uring opens sockets and files past this filter.
//! - `ioctl` `TIOCSTI` and `TIOCLINUX`: typing into (or reading) a
//!   terminal. The command has no controlling terminal (it starts in a new
//!   session), so this only matters for a terminal it finds another way.
//! - `keyctl`, `add_key`, `request_key`: the kernel's keyrings are shared
//!   by the user's processes (a fresh session keyring is joined first).

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

/// What the filter lets through.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// `sandbox.network`: sockets of any family.
    pub network: bool,
    /// `sandbox.allowUnixSockets` is not empty: `socket(AF_UNIX)`.
    pub unix_sockets: bool,
}

/// A rule matching when argument `arg` (its low 32 bits: the kernel reads
/// these arguments as `int`) compares to `value` by `op`.
fn arg_is(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, seccompiler::Error> {
    Ok(SeccompRule::new(vec![SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)?])?)
}

/// The filter for a command allowed `allowed`.
pub fn filter(allowed: Allowed) -> Result<BpfProgram, seccompiler::Error> {
    use SeccompCmpOp::{Eq, Ne};
    let unix = libc::AF_UNIX as u64;
    // An empty rule list refuses the call whatever its arguments.
    let mut rules: Vec<(i64, Vec<SeccompRule>)> = vec![
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_keyctl, Vec::new()),
        (libc::SYS_add_key, Vec::new()),
        (libc::SYS_request_key, Vec::new()),
        (libc::SYS_ioctl, vec![arg_is(1, Eq, libc::TIOCSTI)?, arg_is(1, Eq, libc::TIOCLINUX)?]),
    ];
    match (allowed.network, allowed.unix_sockets) {
        (false, false) => rules.push((libc::SYS_socket, Vec::new())),
        (false, true) => rules.push((libc::SYS_socket, vec![arg_is(0, Ne, unix)?])),
        (true, false) => rules.push((libc::SYS_socket, vec![arg_is(0, Eq, unix)?])),
        (true, true) => {}
    }
    if !allowed.network {
        rules.push((libc::SYS_socketpair, vec![arg_is(0, Ne, unix)?]));
    }
    let arch = std::env::consts::ARCH.try_into()?;
    let filter = SeccompFilter::new(
        rules.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_builds() {
        for network in [false, true] {
            for unix_sockets in [false, true] {
                let program = filter(Allowed { network, unix_sockets }).unwrap();
                assert!(!program.is_empty());
            }
        }
    }
}
