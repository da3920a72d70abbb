//! Maintenance by itself (SPEC 16): `glrs-chat` runs the cleanup plan at
//! start, at most once every `session.maintenance.checkEvery` (default 24h;
//! `false`: never). In `warn` mode it prints one line when anything would be
//! removed; in `enforce` mode it removes those things and prints one line.
//!
//! The time of the last check is kept in `<sessions>/maintenance.json`
//! (`{"lastCheck": "…"}`), written before the plan runs, so several chats
//! started together check once.

use std::time::SystemTime;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Action, Policy, enforce, plan};
use crate::config::Config;
use crate::store::Store;

/// The file that remembers the last check.
pub const STATE_FILE: &str = "maintenance.json";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_check: Option<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// Run the plan if it is due at `now`. Returns the line to print, if any.
pub fn at_chat_start(store: &Store, config: &Config, now: SystemTime) -> Result<Option<String>> {
    let policy = Policy::from_config(config)?;
    let Some(every) = policy.check_every else { return Ok(None) };
    // An empty store has nothing to maintain: leave no file behind.
    if !store.paths.sessions.is_dir() {
        return Ok(None);
    }
    let state: State = store.read_json_file(STATE_FILE, "the maintenance state")?;
    let now_ms = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i128);
    let last_ms = state.last_check.as_deref().and_then(crate::time::parse_ms).map(i128::from);
    // A last check in the future (a clock set back) does not block checks forever.
    if let Some(last) = last_ms
        && last <= now_ms
        && now_ms - last < every.as_millis() as i128
    {
        return Ok(None);
    }
    let stamp = jiff::Timestamp::from_millisecond(now_ms as i64).map(crate::time::format_ts)?;
    store.update_json_file(STATE_FILE, "the maintenance state", |s: &mut State| s.last_check = Some(stamp))?;
    let rows = plan(store, &policy, now)?;
    let (count, bytes) =
        rows.iter().filter(|r| r.action == Action::Remove).fold((0u64, 0u64), |(c, b), r| (c + 1, b + r.bytes));
    if count == 0 {
        return Ok(None);
    }
    if !policy.enforce {
        return Ok(Some(format!(
            "maintenance: {count} old sessions and files ({}) would be removed; glrs-sessions cleanup --dry-run lists them, --enforce removes them",
            size_text(bytes)
        )));
    }
    let failed = enforce(store, &rows);
    let removed = count - failed.len() as u64;
    let freed: u64 = bytes - failed.iter().map(|(r, _)| r.bytes).sum::<u64>();
    let mut line = format!(
        "maintenance: removed {removed} old sessions and files ({}) under session.maintenance",
        size_text(freed)
    );
    if let Some((row, why)) = failed.first() {
        line.push_str(&format!("; {} could not be removed ({}: {why})", failed.len(), row.path.display()));
    }
    Ok(Some(line))
}

/// `1.4 MB`, `512 B`: sizes for a one-line message.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(size_text(512), "512 B");
        assert_eq!(size_text(1536), "1.5 KB");
        assert_eq!(size_text(3 << 20), "3.0 MB");
    }
}
