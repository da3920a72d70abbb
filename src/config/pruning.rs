//! `contextPruning` (SPEC 16) as written in the config, and its checks.
//! What the settings do: `crate::prune`.

use anyhow::{Result, bail};
use serde::Deserialize;

use super::{Amount, parse_duration_rule};

/// `contextPruning.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PruneMode {
    /// Prune once the session's last call is older than `ttl`.
    #[serde(rename = "cache-ttl")]
    CacheTtl,
    /// Never prune: every request carries everything.
    #[serde(rename = "off")]
    Off,
}

/// `contextPruning` as written in the config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PruningConfig {
    /// `cache-ttl` (default for Claude models) or `off` (for others).
    pub mode: Option<PruneMode>,
    /// How old the last call must be (default `5m`).
    pub ttl: Option<Amount>,
    /// Results in this many newest assistant messages stay (default 3).
    pub keep_last_assistants: Option<u64>,
    /// Trimming starts above this share of the window (default 0.3).
    pub soft_trim_ratio: Option<f64>,
    /// Clearing starts above this share of the window (default 0.5).
    pub hard_clear_ratio: Option<f64>,
    /// Clearing needs at least this many prunable characters (50,000).
    pub min_prunable_tool_chars: Option<u64>,
    /// `softTrim.*`.
    #[serde(default)]
    pub soft_trim: SoftTrimConfig,
    /// `hardClear.*`.
    #[serde(default)]
    pub hard_clear: HardClearConfig,
    /// `tools.{allow, deny}`: which tools' results may be pruned.
    #[serde(default)]
    pub tools: ToolGlobs,
}

/// `contextPruning.softTrim`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SoftTrimConfig {
    /// Results longer than this are trimmed (default 4,000 characters).
    pub max_chars: Option<u64>,
    /// Characters kept from the start (default 1,500).
    pub head_chars: Option<u64>,
    /// Characters kept from the end (default 1,500).
    pub tail_chars: Option<u64>,
}

/// `contextPruning.hardClear`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HardClearConfig {
    /// `false` stops at trimming (default true).
    pub enabled: Option<bool>,
    /// What a cleared result becomes.
    pub placeholder: Option<String>,
}

/// `contextPruning.tools`: globs over tool names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolGlobs {
    /// Only these tools' results may be pruned (empty: every tool).
    #[serde(default)]
    pub allow: Vec<String>,
    /// These tools' results are never pruned (deny wins).
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Check `contextPruning` at config load, naming the key.
pub(super) fn validate_pruning(c: &PruningConfig) -> Result<()> {
    for (key, v) in [("softTrimRatio", c.soft_trim_ratio), ("hardClearRatio", c.hard_clear_ratio)] {
        if let Some(v) = v
            && !(0.0..=1.0).contains(&v)
        {
            bail!("contextPruning.{key}: must be between 0 and 1, got {v}");
        }
    }
    if let Some(t) = &c.ttl
        && parse_duration_rule(t).map_err(|e| anyhow::anyhow!("contextPruning.ttl: {e}"))?.is_none()
    {
        bail!("contextPruning.ttl: must be a duration like 5m (mode \"off\" turns pruning off)");
    }
    if c.soft_trim.max_chars == Some(0) {
        bail!("contextPruning.softTrim.maxChars: must be at least 1");
    }
    Ok(())
}
