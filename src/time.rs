//! Times as the store writes them: RFC 3339, UTC, milliseconds
//! (`2026-11-29T15:24:19.412Z`).

use jiff::{Timestamp, Unit};

/// The current time, formatted for the store.
pub fn now() -> String {
    format_ts(Timestamp::now())
}

/// Format a timestamp for the store, rounded down to the millisecond.
pub fn format_ts(ts: Timestamp) -> String {
    let ms = ts.as_millisecond();
    let ts = Timestamp::from_millisecond(ms).unwrap_or(ts);
    format!("{:.3}", ts.round(Unit::Millisecond).unwrap_or(ts))
}

/// Now in the local time zone. jiff's `Zoned::now()` finds the zone's name
/// by listing every folder of `/usr/share/zoneinfo` (about 100 system
/// calls, a seventh of a one-shot turn's, issue 32); glrs shows local dates
/// and hours only, so with no `TZ` set `/etc/localtime` is read as it is
/// (named after the zone its link points to), once a process.
pub fn local_now() -> jiff::Zoned {
    Timestamp::now().to_zoned(local_zone())
}

/// The local time zone, as [`local_now`] finds it.
pub fn local_zone() -> jiff::tz::TimeZone {
    static ZONE: std::sync::OnceLock<jiff::tz::TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        const LOCALTIME: &str = "/etc/localtime";
        if std::env::var_os("TZ").is_some() {
            return jiff::tz::TimeZone::system();
        }
        let link = std::fs::read_link(LOCALTIME).ok();
        let name = link.as_ref().and_then(|t| t.to_str()).and_then(|t| t.rsplit_once("zoneinfo/")).map(|(_, n)| n);
        std::fs::read(LOCALTIME)
            .ok()
            .and_then(|data| jiff::tz::TimeZone::tzif(name.unwrap_or("Local"), &data).ok())
            .unwrap_or_else(jiff::tz::TimeZone::system)
    })
    .clone()
}

/// Milliseconds since the epoch of a stored time, for sorting; `None` when the
/// text is not an RFC 3339 time.
pub fn parse_ms(text: &str) -> Option<i64> {
    text.parse::<Timestamp>().ok().map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        let ts: Timestamp = "2026-11-29T15:24:19.412999Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2026-11-29T15:24:19.412Z");
        let ts: Timestamp = "2026-11-29T15:24:19Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2026-11-29T15:24:19.000Z");
    }

    #[test]
    fn the_local_zone_is_the_system_zone() {
        let now = Timestamp::now();
        let ours = now.to_zoned(local_zone());
        let jiffs = now.to_zoned(jiff::tz::TimeZone::system());
        assert_eq!(ours.offset(), jiffs.offset());
        assert_eq!(ours.date(), jiffs.date());
    }

    #[test]
    fn now_round_trips() {
        let text = now();
        assert_eq!(text.len(), 24, "{text}");
        assert!(parse_ms(&text).is_some());
        assert_eq!(parse_ms("yesterday"), None);
    }
}
