//! Platforms without a sandbox backend yet: the sandbox is unavailable,
//! and every command asks.

use std::path::Path;

use super::Policy;

/// Nothing to apply.
pub struct Prepared;

impl Prepared {
    /// Never reached: [`probe`] fails, so nothing is prepared.
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }
}

/// There is no backend here.
pub fn probe() -> Result<String, String> {
    Err(format!("glrs has no sandbox for {} yet", std::env::consts::OS))
}

/// There is no backend here.
pub fn prepare(_policy: &Policy, _private_tmp: Option<&Path>) -> std::io::Result<Prepared> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}
