//! The environment children get (SPEC 15). Every command, hook, exec tool
//! and `apiKeyCommand` inherits glrs's environment less the *withheld*
//! variables: the providers' key variables (each `apiKeyEnv`, the ones glrs
//! reads by default) and `childEnv.withhold`, unless `childEnv.pass` names
//! them. The program's edge sets the list once it has read the config
//! ([`withhold`]); the runner removes them from each child.
//!
//! A stdio MCP server gets less: only [`MCP_INHERITED`] (the variables the
//! official MCP SDKs pass, `getDefaultEnvironment` of the TypeScript SDK)
//! plus its own `env`, where a key it needs is given by name
//! (`"GITHUB_TOKEN": "${GITHUB_TOKEN}"`).

use std::ffi::OsString;
use std::sync::RwLock;

/// The variables a stdio MCP server inherits (when set).
pub const MCP_INHERITED: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables no child inherits.
static WITHHELD: RwLock<Vec<OsString>> = RwLock::new(Vec::new());

/// Withhold `names` from every child started from now on (replacing the
/// list set before).
pub fn withhold(names: impl IntoIterator<Item = String>) {
    let mut names: Vec<OsString> = names.into_iter().map(OsString::from).collect();
    names.sort();
    names.dedup();
    if let Ok(mut withheld) = WITHHELD.write() {
        *withheld = names;
    }
}

/// Remove the withheld variables from what `cmd` passes on.
pub fn scrub(cmd: &mut std::process::Command) {
    if let Ok(withheld) = WITHHELD.read() {
        for name in withheld.iter() {
            cmd.env_remove(name);
        }
    }
}

/// Start `cmd` from an empty environment: [`MCP_INHERITED`] from ours,
/// then what the caller adds.
pub fn minimal(cmd: &mut std::process::Command) {
    cmd.env_clear();
    for name in MCP_INHERITED {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
}
