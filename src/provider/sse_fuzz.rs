//! Property tests of the SSE parser, run for a bounded time: random
//! streams of events written with every line ending, split into random
//! chunks, must give back exactly the events written; random bytes in
//! random chunks must never panic, must give the same events however they
//! are split, and must never hold more than the limit.
//!
//! `GLRS_FUZZ_SECS` sets how long each property runs (default 2 s; CI runs
//! the default), `GLRS_FUZZ_SEED` replays a failing seed (printed on
//! failure).

use super::sse_parse::{Event, EventParser};
use crate::fuzz::{Rng, for_a_while};

/// Feed `bytes` in random chunks.
fn parse_chunked(rng: &mut Rng, bytes: &[u8], limit: usize) -> Result<Vec<Event>, String> {
    let mut parser = EventParser::new(limit);
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = 1 + rng.below(rest.len().min(64));
        parser.feed(&rest[..n], &mut out).map_err(|e| e.to_string())?;
        assert!(parser.pending() <= limit, "{} bytes held over a limit of {limit}", parser.pending());
        rest = &rest[n..];
    }
    Ok(out)
}

const PIECES: &[&str] = &["a", "Zé", ":", " ", "  x", "{\"k\":1}", "data", "event", "日本", "\u{FEFF}", "[DONE]", "\t"];

fn text(rng: &mut Rng) -> String {
    (0..rng.below(6)).map(|_| *rng.pick(PIECES)).collect()
}

/// Lines with their endings; after a lone CR, an empty line may not end
/// in a lone LF (CR LF is one line ending).
struct Writer {
    bytes: Vec<u8>,
    last_cr: bool,
}

impl Writer {
    fn line(&mut self, text: &str, rng: &mut Rng) {
        self.bytes.extend_from_slice(text.as_bytes());
        let endings: &[&str] = if self.last_cr && text.is_empty() { &["\r", "\r\n"] } else { &["\n", "\r", "\r\n"] };
        let ending = *rng.pick(endings);
        self.bytes.extend_from_slice(ending.as_bytes());
        self.last_cr = ending == "\r";
    }
}

#[test]
fn written_events_come_back_exactly() {
    for_a_while("written events", |rng| {
        let mut w = Writer { bytes: Vec::new(), last_cr: false };
        if rng.below(4) == 0 {
            w.bytes.extend_from_slice(b"\xEF\xBB\xBF");
        }
        let mut expected = Vec::new();
        for _ in 0..rng.below(8) {
            if rng.below(3) == 0 {
                let comment = format!(":{}", text(rng));
                w.line(&comment, rng);
            }
            let name = text(rng);
            if !name.is_empty() || rng.below(2) == 0 {
                w.line(&format!("event: {name}"), rng);
            }
            let mut values = Vec::new();
            for _ in 0..rng.below(4) {
                let d = text(rng);
                // One space after the colon is not part of the value.
                if rng.below(2) == 0 {
                    w.line(&format!("data: {d}"), rng);
                    values.push(d);
                } else {
                    w.line(&format!("data:{d}"), rng);
                    values.push(d.strip_prefix(' ').unwrap_or(&d).to_string());
                }
                if rng.below(4) == 0 {
                    w.line("id: 7", rng);
                }
            }
            w.line("", rng);
            if !values.is_empty() {
                let event = if name.is_empty() { "message".to_string() } else { name };
                expected.push(Event { event, data: values.join("\n") });
            }
        }
        assert_eq!(parse_chunked(rng, &w.bytes, usize::MAX), Ok(expected), "{:?}", String::from_utf8_lossy(&w.bytes));
    });
}

#[test]
fn random_bytes_never_panic_and_split_anywhere_alike() {
    const BYTES: &[u8] = b"data: event:\r\n\n\r\xEF\xBB\xBF\xFFx{}";
    for_a_while("random bytes", |rng| {
        let bytes: Vec<u8> = (0..rng.below(400)).map(|_| *rng.pick(BYTES)).collect();
        let limit = 8 + rng.below(200);
        let once = {
            let mut parser = EventParser::new(limit);
            let mut out = Vec::new();
            parser.feed(&bytes, &mut out).map(|_| out).map_err(|e| e.to_string())
        };
        let chunked = parse_chunked(rng, &bytes, limit);
        // Over the limit, where the error comes may depend on the split; under it, nothing may.
        if once.is_ok() {
            assert_eq!(once, chunked, "{bytes:?}");
        }
    });
}
