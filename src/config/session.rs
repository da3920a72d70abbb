//! `session.*` (SPEC 9 and 10) as written in the config: resets, and the
//! maintenance rules with their amounts (durations, counts, sizes), each
//! read strictly: a value that would wrap or mean "remove everything" is an
//! error that names what to write instead.

use anyhow::{Result, bail};
use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `session`: resets and maintenance.
pub struct SessionConfig {
    #[serde(default)]
    /// `session.reset`.
    pub reset: Reset,
    #[serde(default)]
    /// `session.maintenance`.
    pub maintenance: Maintenance,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
/// `session.reset.mode`.
pub enum ResetMode {
    /// A new session each day at `atHour`.
    Daily,
    /// A new session after `idleMinutes` without use.
    Idle,
    /// Only when asked.
    Manual,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `session.reset`: when a key starts a new session (SPEC 9).
pub struct Reset {
    /// `mode`.
    pub mode: Option<ResetMode>,
    /// `atHour`: the local hour of a daily reset.
    pub at_hour: Option<u8>,
    /// `idleMinutes`: the idle time that resets.
    pub idle_minutes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
/// `session.maintenance.mode`.
pub enum MaintenanceMode {
    /// Report what cleanup would remove.
    Warn,
    /// Remove it.
    Enforce,
}

/// A size (`10mb`, `1.5gb`, `4096`) or a duration (`30d`, `24h`) as written;
/// `false` turns a rule off where the key allows it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Amount {
    /// `true` or `false`.
    Switch(bool),
    /// A plain number.
    Number(u64),
    /// Text with a unit (`30d`, `10mb`).
    Text(String),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
/// `session.maintenance`: cleanup and retention (SPEC 10).
pub struct Maintenance {
    /// `mode`: warn or enforce.
    pub mode: Option<MaintenanceMode>,
    /// `pruneAfter`: the age of a stale session.
    pub prune_after: Option<Amount>,
    /// `maxEntries`: how many sessions to keep.
    pub max_entries: Option<Amount>,
    /// `maxDiskBytes`: the sessions folder's budget.
    pub max_disk_bytes: Option<Amount>,
    /// `highWaterBytes`: what an over-budget cleanup brings it down to.
    pub high_water_bytes: Option<Amount>,
    /// `cronRetention`: how long `cron:` keys' sessions are kept.
    pub cron_retention: Option<Amount>,
    /// `checkEvery`: how often the chat runs maintenance by itself.
    pub check_every: Option<Amount>,
    /// `outputRetention`: how long the whole outputs of long tool results
    /// (`$XDG_CACHE_HOME/glrs/output/`) are kept.
    pub output_retention: Option<Amount>,
}

/// The longest duration a rule takes: a hundred years. Anything longer is
/// almost certainly a typo (or a test of the limits), and time arithmetic on
/// it would overflow; `false` is the way to say "never".
pub const MAX_DURATION_SECS: u64 = 100 * 365 * 86_400;

/// A duration rule: `30d`, `24h`, `90m`, `45s`, `2w`, a number of seconds, or
/// `false` (the rule is off: `None`). Zero is an error that says to use
/// `false`; more than [`MAX_DURATION_SECS`] is an error, never a value that
/// wraps.
pub fn parse_duration_rule(value: &Amount) -> Result<Option<u64>> {
    let secs = match value {
        Amount::Switch(false) => return Ok(None),
        Amount::Switch(true) => {
            bail!("true is not a duration: give one like 30d or 24h, or false to turn the rule off")
        }
        Amount::Number(n) => *n as f64,
        Amount::Text(t) => {
            let text = t.trim().to_ascii_lowercase();
            let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
            let (number, unit) = text.split_at(split);
            let bad =
                || anyhow::anyhow!("{text:?} is not a duration like 30d, 24h, 90m or 45s (false turns the rule off)");
            let n: f64 = number.parse().map_err(|_| bad())?;
            let scale = match unit.trim() {
                "" | "s" => 1.0,
                "m" => 60.0,
                "h" => 3600.0,
                "d" => 86_400.0,
                "w" => 604_800.0,
                _ => return Err(bad()),
            };
            n * scale
        }
    };
    if !secs.is_finite() || secs > MAX_DURATION_SECS as f64 {
        bail!("{} is longer than 100 years: use false to turn the rule off", describe(value));
    }
    if secs < 1.0 {
        bail!("{} is not a duration here: use false to turn the rule off", describe(value));
    }
    Ok(Some(secs as u64))
}

/// A count rule (`maxEntries`): a number of at least 1, or `false` (off).
pub fn parse_count_rule(value: &Amount) -> Result<Option<u64>> {
    match value {
        Amount::Switch(false) => Ok(None),
        Amount::Number(0) => bail!("0 would remove every session: use false to turn the rule off"),
        Amount::Number(n) => Ok(Some(*n)),
        other => bail!("{} is not a number of sessions (or false to turn the rule off)", describe(other)),
    }
}

fn describe(value: &Amount) -> String {
    match value {
        Amount::Switch(b) => b.to_string(),
        Amount::Number(n) => n.to_string(),
        Amount::Text(t) => format!("{t:?}"),
    }
}

/// `10mb`, `1.5gb`, `500kb`, `4096b`, or a number of bytes (powers of 1024).
pub fn parse_size_bytes(value: &Amount) -> Result<u64> {
    let text = match value {
        Amount::Number(n) => return Ok(*n),
        Amount::Switch(b) => bail!("{b} is not a size like 500kb, 10mb or 2gb"),
        Amount::Text(t) => t.trim().to_ascii_lowercase(),
    };
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().map_err(|_| anyhow::anyhow!("{text:?} is not a size like 500kb, 10mb or 2gb"))?;
    let scale = match unit.trim() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1024.0 * 1024.0,
        "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
        _ => bail!("{text:?} is not a size like 500kb, 10mb or 2gb"),
    };
    Ok((n * scale) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts() {
        let t = |s: &str| Amount::Text(s.into());
        assert_eq!(parse_duration_rule(&t("30d")).unwrap(), Some(30 * 86_400));
        assert_eq!(parse_duration_rule(&t("24h")).unwrap(), Some(86_400));
        assert_eq!(parse_duration_rule(&Amount::Number(5)).unwrap(), Some(5));
        assert_eq!(parse_duration_rule(&Amount::Switch(false)).unwrap(), None);
        assert!(parse_duration_rule(&t("3 fortnights")).is_err());
        assert_eq!(parse_size_bytes(&t("10mb")).unwrap(), 10 << 20);
        assert_eq!(parse_size_bytes(&t("1.5kb")).unwrap(), 1536);
        assert!(parse_size_bytes(&t("lots")).is_err());
        assert_eq!(parse_count_rule(&Amount::Switch(false)).unwrap(), None);
        assert_eq!(parse_count_rule(&Amount::Number(3)).unwrap(), Some(3));
    }
}
