//! Session keys (SPEC section 9): `keys.json` maps a key (`work`,
//! `cron:nightly`) to its current session, and the reset rules decide when
//! the next message starts a new one: `daily` at `atHour` local time,
//! `idle` after `idleMinutes`, whichever comes first, or `manual`.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use jiff::{Timestamp, ToSpan, Zoned, civil};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{Config, ResetMode};
use crate::error::StoreError;
use crate::store::{Located, Store};
use crate::{SessionId, time};

/// One key's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRecord {
    /// The id of the key's current session.
    pub session: String,
    /// When the key last moved to a session.
    pub updated_at: String,
    #[serde(flatten)]
    /// Fields this version does not know, kept on rewrite.
    pub extra: Map<String, Value>,
}

/// Check a key: non-empty, one line.
pub fn check_key(key: &str) -> Result<()> {
    if key.trim().is_empty() || key.contains(['\n', '\r', '\0']) {
        bail!("invalid key {key:?}: a key is a non-empty name on one line (work, cron:nightly)");
    }
    Ok(())
}

impl Store {
    /// Every key and its current session.
    pub fn keys(&self) -> Result<BTreeMap<String, KeyRecord>, StoreError> {
        self.read_json_file("keys.json", "a key map")
    }

    /// Point `key` at session `id` (atomic, locked).
    pub fn set_key(&self, key: &str, id: &SessionId) -> Result<(), StoreError> {
        self.update_json_file("keys.json", "a key map", |keys: &mut BTreeMap<String, KeyRecord>| {
            let extra = keys.remove(key).map(|r| r.extra).unwrap_or_default();
            keys.insert(key.to_string(), KeyRecord { session: id.to_string(), updated_at: time::now(), extra });
        })
    }
}

/// The reset rules in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResetRule {
    /// How sessions of a key reset.
    pub mode: ResetMode,
    /// The local hour a daily reset happens at.
    pub at_hour: u8,
    /// The idle time after which a session resets, if that rule is on.
    pub idle_minutes: Option<u64>,
}

impl ResetRule {
    /// The rule of `session.reset` in `config`.
    pub fn from_config(config: &Config) -> ResetRule {
        let r = &config.session.reset;
        let mode = r.mode.unwrap_or(ResetMode::Daily);
        // Idle mode without a length means an hour.
        let idle = r.idle_minutes.or((mode == ResetMode::Idle).then_some(60));
        ResetRule { mode, at_hour: r.at_hour.unwrap_or(4), idle_minutes: idle }
    }

    /// The most recent daily boundary at or before `now` (local time).
    fn last_boundary(&self, now: &Zoned) -> Option<Timestamp> {
        let today = now.date().at(self.at_hour as i8, 0, 0, 0);
        let boundary = today.to_zoned(now.time_zone().clone()).ok()?;
        if boundary.timestamp() <= now.timestamp() {
            Some(boundary.timestamp())
        } else {
            let yesterday: civil::DateTime = today.checked_sub(1.day()).ok()?;
            Some(yesterday.to_zoned(now.time_zone().clone()).ok()?.timestamp())
        }
    }

    /// Why a session last active at `last` is due for a reset at `now`;
    /// `None` when it is not. The earlier of daily and idle wins.
    pub fn due(&self, last: Timestamp, now: &Zoned) -> Option<String> {
        if self.mode == ResetMode::Manual {
            return None;
        }
        let mut reasons: Vec<(Timestamp, String)> = Vec::new();
        if let Some(minutes) = self.idle_minutes
            && let Some(deadline) = idle_deadline(last, minutes)
            && deadline <= now.timestamp()
        {
            reasons.push((deadline, format!("idle for more than {minutes} minutes")));
        }
        if self.mode == ResetMode::Daily
            && let Some(boundary) = self.last_boundary(now)
            && last < boundary
        {
            reasons.push((boundary, format!("daily reset at {:02}:00", self.at_hour)));
        }
        reasons.into_iter().min_by_key(|(t, _)| *t).map(|(_, why)| why)
    }

    /// When a session last active at `last` resets next, for display.
    pub fn next(&self, last: Timestamp) -> String {
        let zone = crate::time::local_zone();
        let mut times: Vec<(Timestamp, String)> = Vec::new();
        if let Some(minutes) = self.idle_minutes
            && let Some(t) = idle_deadline(last, minutes)
        {
            times.push((t, "idle".into()));
        }
        if self.mode == ResetMode::Daily {
            let local = last.to_zoned(zone.clone());
            let mut day = local.date().at(self.at_hour as i8, 0, 0, 0);
            if let Ok(b) = day.to_zoned(zone.clone())
                && b.timestamp() <= last
            {
                day = day.checked_add(1.day()).unwrap_or(day);
            }
            if let Ok(b) = day.to_zoned(zone.clone()) {
                times.push((b.timestamp(), "daily".into()));
            }
        }
        if self.mode == ResetMode::Manual {
            return "manual".into();
        }
        match times.into_iter().min_by_key(|(t, _)| *t) {
            Some((t, kind)) => format!("{kind} {}", t.to_zoned(zone).strftime("%Y-%m-%d %H:%M %Z")),
            None => "manual".into(),
        }
    }
}

/// `last` plus `minutes`; `None` past the end of time (never idle), never a
/// panic or a wrapped value (`idleMinutes` is range-checked at load; this
/// holds for any value).
fn idle_deadline(last: Timestamp, minutes: u64) -> Option<Timestamp> {
    let span = jiff::Span::new().try_minutes(i64::try_from(minutes).ok()?).ok()?;
    last.checked_add(span).ok()
}

/// What `--key K` does now.
#[derive(Debug, Clone)]
pub enum KeyDecision {
    /// Continue the key's current session.
    Continue(Located),
    /// Start a new session; the reason, when there was an old one.
    New(Option<String>),
}

/// Decide for `key` at `now`.
pub fn decide(store: &Store, config: &Config, key: &str, now: &Zoned) -> Result<KeyDecision> {
    check_key(key)?;
    let Some(record) = store.keys()?.remove(key) else { return Ok(KeyDecision::New(None)) };
    let Some(at) = SessionId::parse(&record.session).ok().and_then(|id| store.locate(&id)) else {
        return Ok(KeyDecision::New(Some(format!("its session {} is gone", record.session))));
    };
    let file = store.read(&at)?.file;
    let last: Timestamp = file.get_str("updatedAt").and_then(|t| t.parse().ok()).unwrap_or(Timestamp::UNIX_EPOCH);
    match ResetRule::from_config(config).due(last, now) {
        Some(why) => Ok(KeyDecision::New(Some(why))),
        None => Ok(KeyDecision::Continue(at)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zoned(text: &str) -> Zoned {
        text.parse().unwrap()
    }
    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }
    fn rule(mode: ResetMode, idle: Option<u64>) -> ResetRule {
        ResetRule { mode, at_hour: 4, idle_minutes: idle }
    }

    #[test]
    fn daily_resets_after_the_hour_boundary() {
        let r = rule(ResetMode::Daily, None);
        let now = zoned("2026-11-29T10:00:00+00:00[UTC]");
        assert_eq!(r.due(ts("2026-11-29T03:59:00Z"), &now).as_deref(), Some("daily reset at 04:00"));
        assert_eq!(r.due(ts("2026-11-29T04:01:00Z"), &now), None);
        // Before today's hour, the boundary is yesterday's.
        let early = zoned("2026-11-29T02:00:00+00:00[UTC]");
        assert_eq!(r.due(ts("2026-11-28T05:00:00Z"), &early), None);
        assert!(r.due(ts("2026-11-28T03:00:00Z"), &early).is_some());
    }

    #[test]
    fn idle_and_the_earlier_of_both() {
        let now = zoned("2026-11-29T10:00:00+00:00[UTC]");
        let r = rule(ResetMode::Idle, Some(30));
        assert_eq!(r.due(ts("2026-11-29T09:29:00Z"), &now).as_deref(), Some("idle for more than 30 minutes"));
        assert_eq!(r.due(ts("2026-11-29T09:31:00Z"), &now), None);
        // Idle mode ignores the daily hour.
        assert_eq!(r.due(ts("2026-11-29T09:45:00Z"), &zoned("2026-11-29T10:00:00+00:00[UTC]")), None);
        let both = rule(ResetMode::Daily, Some(60));
        // Last active 03:30: the daily boundary (04:00) comes before idle (04:30).
        assert_eq!(both.due(ts("2026-11-29T03:30:00Z"), &now).as_deref(), Some("daily reset at 04:00"));
        // Last active 05:00: idle after 06:00; no daily boundary since.
        assert_eq!(both.due(ts("2026-11-29T05:00:00Z"), &now).as_deref(), Some("idle for more than 60 minutes"));
        assert_eq!(rule(ResetMode::Manual, Some(1)).due(ts("2020-01-01T00:00:00Z"), &now), None);
        // Values that once panicked (jiff's range) or wrapped (every message reset).
        for huge in [1_000_000_000_000, u64::MAX] {
            let r = rule(ResetMode::Idle, Some(huge));
            assert_eq!(r.due(ts("2026-11-29T09:00:00Z"), &now), None, "{huge}");
            assert!(!r.next(ts("2026-11-29T09:00:00Z")).is_empty());
        }
    }

    #[test]
    fn keys_must_be_names() {
        assert!(check_key("cron:nightly").is_ok());
        assert!(check_key("").is_err() && check_key("a\nb").is_err());
    }
}
