//! Process control, in one place: every child glrs starts (a `bash`
//! command, a hook, an exec tool, an `apiKeyCommand`, an MCP server, a
//! background `glrs-compact`) is started, confined, stopped and killed
//! with its descendants from here, however glrs ends.
//!
//! - [`run`]: the runner of commands, hooks and exec tools ([`run_process`]
//!   with a [`Spawn`], giving a [`Ran`] and its [`Ending`]): a process group
//!   of its own, output in files (capped by [`capture`]: head, a note,
//!   tail), the group killed when the run ends.
//!   [`Spawn::confine`] is where a sandbox goes: a step applied in the
//!   child after fork and before exec (Landlock, seccomp, `no_new_privs`),
//!   after the group and the parent-death signal are set.
//! - [`own`]: [`run_own`], for programs glrs runs for its own work and
//!   whose output it parses (`git` for checkpoints): stdout in memory,
//!   whole; never confined.
//! - [`group`]: [`GroupKill`], a process group killed when dropped and
//!   guarded by the watchdog while it lives.
//! - [`deathsig`]: [`die_with_parent`], the kernel's parent-death signal.
//! - [`reaper`]: the watchdog (`glrs-reaper`) that kills guarded groups
//!   when glrs dies, even by SIGKILL.
//! - [`background`]: [`Background`], a child left running while the chat
//!   goes on, seen to exit with `waitid(WNOWAIT)` so its group is released
//!   before its pid can be reused.
//! - [`servers`]: the groups of long-lived children (stdio MCP servers),
//!   stopped together on the paths that end the process at once.
//! - [`escaped`]: descendants that left their group (`setsid`): the chat
//!   adopts orphans (a child subreaper) and tells the watchdog of each
//!   escaped descendant it finds, so they die with the chat too.
//! - [`exits`]: waiting, bounded, for processes to exit, on their pidfds.
//! - [`env`]: the environment children get: no provider key unless the
//!   config passes it; a minimal one for MCP servers.
//!
//! A leaf: it knows no tool, hook, provider or chat.

pub mod background;
pub mod capture;
pub mod deathsig;
pub mod env;
pub mod escaped;
pub mod exits;
pub mod group;
pub mod own;
pub mod reaper;
pub mod run;
pub mod servers;

pub use background::Background;
pub use deathsig::die_with_parent;
pub use group::GroupKill;
pub use own::{Finished, Own, run_own};
pub use run::{Confine, Ending, Ran, Spawn, output_text, run_command, run_process};
