//! `contextPruning` (SPEC 16) as written in the config, and its checks.
//! What the settings do: `crate::prune`.

use anyhow::{Result, bail};
use serde::Deserialize;

use super::{Amount, parse_duration_rule};

/// `contextPruning.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PruneMode {
    #[serde(rename = "cache-ttl")]
    CacheTtl,
    #[serde(rename = "off")]
    Off,
}

/// `contextPruning` as written in the config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PruningConfig {
    pub mode: Option<PruneMode>,
    pub ttl: Option<Amount>,
    pub keep_last_assistants: Option<u64>,
    pub soft_trim_ratio: Option<f64>,
    pub hard_clear_ratio: Option<f64>,
    pub min_prunable_tool_chars: Option<u64>,
    #[serde(default)]
    pub soft_trim: SoftTrimConfig,
    #[serde(default)]
    pub hard_clear: HardClearConfig,
    #[serde(default)]
    pub tools: ToolGlobs,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SoftTrimConfig {
    pub max_chars: Option<u64>,
    pub head_chars: Option<u64>,
    pub tail_chars: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HardClearConfig {
    pub enabled: Option<bool>,
    pub placeholder: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolGlobs {
    #[serde(default)]
    pub allow: Vec<String>,
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
