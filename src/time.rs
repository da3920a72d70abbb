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
    fn now_round_trips() {
        let text = now();
        assert_eq!(text.len(), 24, "{text}");
        assert!(parse_ms(&text).is_some());
        assert_eq!(parse_ms("yesterday"), None);
    }
}
