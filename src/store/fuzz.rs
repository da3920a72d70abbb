//! Property tests of the session file parser (`format::parse`), run for a
//! bounded time: generated files must read back exactly as written;
//! mutated ones (bytes flipped, inserted, removed, cut, pieces of JSON
//! spliced in) must never panic, and whatever parses must write and parse
//! again to the same thing. The harness is shared with the artifact front
//! matter's (`compact::fuzz`).
//!
//! `GLRS_FUZZ_SECS` sets how long each property runs (default 2 s; CI runs
//! the default), `GLRS_FUZZ_SEED` replays a failing seed (printed on
//! failure).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_json::value::RawValue;

use super::format::{self, SessionFile};

/// xorshift64*: enough randomness for generating inputs, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Run `case` with fresh seeds until the time budget is spent; a failure
/// names the seed that replays it.
pub(crate) fn for_a_while(name: &str, case: impl Fn(&mut Rng)) {
    let secs = std::env::var("GLRS_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let budget = Duration::from_secs_f64(secs);
    let mut seed = std::env::var("GLRS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        (nanos as u64) | 1
    });
    let start = Instant::now();
    let mut runs = 0u64;
    while runs == 0 || start.elapsed() < budget {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&mut Rng(seed))));
        if let Err(e) = result {
            panic!("{name}: failed with GLRS_FUZZ_SEED={seed} after {runs} runs: {e:?}");
        }
        seed = Rng(seed).next() | 1;
        runs += 1;
    }
    eprintln!("{name}: {runs} runs in {:.1} s without a failure", start.elapsed().as_secs_f64());
}

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
