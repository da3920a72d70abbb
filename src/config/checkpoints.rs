//! `checkpoints.{enabled, exclude, maxFileBytes}` (SPEC 19) as written in
//! the config. What they do: `crate::checkpoint`.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{Amount, parse_size_bytes};

/// `checkpoints.maxFileBytes` when the config sets none: 10 MB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// `checkpoints` as written in the config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckpointsConfig {
    /// `enabled` (default true): false records no checkpoints at all.
    pub enabled: Option<bool>,
    #[serde(default)]
    /// `exclude`: gitignore-style patterns left out of every checkpoint.
    pub exclude: Vec<String>,
    /// `maxFileBytes`: files larger than this are left out (and named).
    pub max_file_bytes: Option<Amount>,
}

impl CheckpointsConfig {
    /// Whether checkpoints are recorded.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The largest file a checkpoint keeps, in bytes.
    pub fn max_file_bytes(&self) -> Result<u64> {
        match &self.max_file_bytes {
            None => Ok(DEFAULT_MAX_FILE_BYTES),
            Some(amount) => parse_size_bytes(amount).context("checkpoints.maxFileBytes"),
        }
    }
}
