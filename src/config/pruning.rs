//! `contextPruning` (SPEC 16) as written in the config, and its checks.
//! What the settings do: `crate::prune`.

use anyhow::{Result, bail};
use serde::Deserialize;

use super::{Amount, parse_duration_rule};

/// `contextPruning.softTrimRatio` when the config sets none.
pub const DEFAULT_SOFT_TRIM_RATIO: f64 = 0.3;
/// `contextPruning.hardClearRatio` when the config sets none.
pub const DEFAULT_HARD_CLEAR_RATIO: f64 = 0.5;

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
    // Clearing is the step after trimming: it cannot start below where
    // trimming does. The values in force are compared, defaults filled in.
    let soft = c.soft_trim_ratio.unwrap_or(DEFAULT_SOFT_TRIM_RATIO);
    let hard = c.hard_clear_ratio.unwrap_or(DEFAULT_HARD_CLEAR_RATIO);
    if hard < soft {
        let shown = |v: Option<f64>, d: f64| v.map_or(format!("{d} (the default)"), |v| v.to_string());
        bail!(
            "contextPruning.hardClearRatio ({}) must be at least contextPruning.softTrimRatio ({})",
            shown(c.hard_clear_ratio, DEFAULT_HARD_CLEAR_RATIO),
            shown(c.soft_trim_ratio, DEFAULT_SOFT_TRIM_RATIO)
        );
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

#[cfg(test)]
mod tests {
    use super::super::Config;

    #[test]
    fn hard_clear_ratio_is_at_least_soft_trim_ratio() {
        for (text, shown) in [
            (
                r#"{"softTrimRatio": 0.6, "hardClearRatio": 0.4}"#,
                "hardClearRatio (0.4) must be at least contextPruning.softTrimRatio (0.6)",
            ),
            (
                r#"{"softTrimRatio": 0.6}"#,
                "hardClearRatio (0.5 (the default)) must be at least contextPruning.softTrimRatio (0.6)",
            ),
            (
                r#"{"hardClearRatio": 0.2}"#,
                "hardClearRatio (0.2) must be at least contextPruning.softTrimRatio (0.3 (the default))",
            ),
        ] {
            let err = format!("{:#}", Config::parse(&format!(r#"{{"contextPruning": {text}}}"#)).unwrap_err());
            assert_eq!(err, format!("contextPruning.{shown}"));
        }
        for ok in [r#"{"softTrimRatio": 0.5, "hardClearRatio": 0.5}"#, r#"{"hardClearRatio": 0.9}"#, "{}"] {
            Config::parse(&format!(r#"{{"contextPruning": {ok}}}"#)).unwrap();
        }
    }
}
