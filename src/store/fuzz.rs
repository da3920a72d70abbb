//! Property tests of the session file parser (`format::parse`), run for a
//! bounded time: generated files must read back exactly as written;
//! mutated ones (bytes flipped, inserted, removed, cut, pieces of JSON
//! spliced in) must never panic, and whatever parses must write and parse
//! again to the same thing. The harness is `crate::fuzz`; `compact::fuzz`
//! reuses this module's generators.
//!
//! `GLRS_FUZZ_SECS` sets how long each property runs (default 2 s; CI runs
//! the default), `GLRS_FUZZ_SEED` replays a failing seed (printed on
//! failure).

use serde_json::Value;
use serde_json::value::RawValue;
use std::path::Path;

use super::format::{self, SessionFile};
pub(crate) use crate::fuzz::{Rng, for_a_while};

const PIECES: &[&str] = &[
    "a",
    "Zé",
    ":",
    ": ",
    " ",
    "\"",
    "\\",
    "\n",
    "\r",
    "\t",
    "#",
    "-",
    "---",
    "{",
    "}",
    "[",
    "]",
    ",",
    "日本",
    "\u{FEFF}",
    "\u{0}",
    "\u{1b}[2J",
    "null",
    "true",
    "1e999",
    "-0",
    "\u{2028}",
    "'",
    "|",
    ">",
    "%",
    "@",
    "`",
    "x: y",
    " #c",
];

pub(crate) fn text(rng: &mut Rng) -> String {
    (0..rng.below(12)).map(|_| *rng.pick(PIECES)).collect()
}

/// A JSON value of any shape, a few levels deep.
fn json(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 4 } else { 6 }) {
        0 => Value::Null,
        1 => Value::from(rng.below(3) == 0),
        2 => Value::from(rng.next() as i64 >> rng.below(64)),
        3 => Value::from(text(rng)),
        4 => Value::Array((0..rng.below(4)).map(|_| json(rng, depth - 1)).collect()),
        _ => Value::Object((0..rng.below(4)).map(|_| (text(rng), json(rng, depth - 1))).collect()),
    }
}

/// A valid session file with random extra header fields and entries (known
/// types and others, with fields this version does not know).
fn session(rng: &mut Rng) -> SessionFile {
    let mut file = SessionFile::new("3f9a1c2b", &text(rng), "2026-11-29T15:24:19.412Z");
    for _ in 0..rng.below(4) {
        let name = format!("x{}", text(rng));
        if !["schema", "id", "createdAt", "updatedAt", "events"].contains(&name.as_str()) {
            file.set(&name, json(rng, 2));
        }
    }
    for _ in 0..rng.below(6) {
        let kind = *rng.pick(&["user", "assistant", "tool", "turn", "compacted", "custom", "future-kind"]);
        let mut entry = serde_json::Map::new();
        entry.insert("type".into(), Value::from(kind));
        entry.insert("at".into(), Value::from("2026-11-29T15:24:19.412Z"));
        entry.insert("text".into(), Value::from(text(rng)));
        for _ in 0..rng.below(3) {
            entry.insert(text(rng), json(rng, 2));
        }
        if let Ok(raw) = RawValue::from_string(Value::Object(entry).to_string()) {
            file.events.push(raw);
        }
    }
    file
}

fn parse(bytes: &[u8]) -> Result<SessionFile, crate::error::StoreError> {
    format::parse(bytes, Path::new("fuzz.json"), None)
}

fn same(a: &SessionFile, b: &SessionFile) {
    assert_eq!(a.header, b.header);
    let raw = |f: &SessionFile| f.events.iter().map(|e| e.get().to_string()).collect::<Vec<_>>();
    assert_eq!(raw(a), raw(b));
}

/// Flip, insert, remove, cut or splice: one mutation of `bytes`.
pub(crate) fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(b'{');
        return;
    }
    let at = rng.below(bytes.len());
    match rng.below(6) {
        0 => bytes[at] ^= 1 << rng.below(8),
        1 => bytes.insert(at, rng.next() as u8),
        2 => {
            bytes.remove(at);
        }
        3 => bytes.truncate(at),
        4 => {
            let piece =
                rng.pick(&["\"schema\":3", "\"id\":\"../x\"", ",", "]", "}", "\"events\":{}", "\\u0000", "9e99999"]);
            bytes.splice(at..at, piece.bytes());
        }
        _ => {
            let end = (at + rng.below(16)).min(bytes.len());
            let copy = bytes[at..end].to_vec();
            let to = rng.below(bytes.len());
            bytes.splice(to..to, copy);
        }
    }
}

#[test]
fn session_files_read_back_exactly_as_written() {
    for_a_while("session file round trip", |rng| {
        let file = session(rng);
        let back =
            parse(&file.to_bytes()).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&file.to_bytes())));
        same(&file, &back);
    });
}

#[test]
fn mutated_session_files_never_panic_and_what_parses_round_trips() {
    for_a_while("session file mutations", |rng| {
        let mut bytes = session(rng).to_bytes();
        for _ in 0..1 + rng.below(8) {
            mutate(rng, &mut bytes);
        }
        if let Ok(file) = parse(&bytes) {
            let again = parse(&file.to_bytes()).unwrap_or_else(|e| panic!("rewritten file does not parse: {e}"));
            same(&file, &again);
        }
    });
}
