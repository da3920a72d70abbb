//! The other glrs programs: where they are and how to run one. The chat
//! calls them for slash commands and compaction, and `glrs NAME` for
//! everything, so this lives in the library rather than in `cli`.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};

use anyhow::Context;

/// Where another glrs program is: beside the running executable, else the
/// bare name, found on PATH when run.
pub fn program_path(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Run another glrs program with the terminal, and wait for it.
pub fn run_program(name: &str, args: &[&str]) -> anyhow::Result<ExitStatus> {
    Command::new(program_path(name))
        .args(args)
        .status()
        .with_context(|| format!("cannot run {name} (looked beside this program and on PATH)"))
}
