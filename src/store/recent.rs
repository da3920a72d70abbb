//! Reading a session for its context, whatever its size: a scan of its
//! entry lines (see [`super::survey`]: kept beside the file, so a reader
//! scans only what was appended since the last one) counts them and picks
//! out the few entries of the kinds asked for by their first bytes, and
//! only the entries from a chosen one to the end are read and kept, found
//! from the end backwards. A resumed chat reads from the last boundary on;
//! `show --tail N` reads the last N entries; `status` reads none.
//!
//! A file not in the store's layout (see [`super::layout`]), or one that
//! changes while it is read, is read whole instead (see [`super::lines`]),
//! so the answer is always that of one whole file.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};

use super::format::Doc;
use super::lines::{self, Lines};
use super::lock::Stamp;
pub use super::survey::UsageSum;
use super::survey::{self, KEPT};
use super::{Located, Mark, layout};
use crate::error::StoreError;

/// A scan that read at least this much of a file not covered by the kept
/// scan keeps its own (below it, scanning again costs less than a file).
const KEEP_FROM: u64 = 1 << 20;

/// An entry the scan picked out: its index in the session and its text.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The entry's index (from 0).
    pub index: usize,
    /// Its JSON text.
    pub text: String,
}

/// A session read from a chosen entry on.
#[derive(Debug, Clone)]
pub struct Recent {
    /// The header, the trailing fields and the entries read (from
    /// `first` on), with the mark of the file read.
    pub lines: Lines,
    /// The index of the first entry in `lines`.
    pub first: usize,
    /// How many entries the session has.
    pub total: usize,
    /// The entries whose type was asked for (or that do not begin with
    /// their type), in file order.
    pub hits: Vec<Hit>,
}

impl Recent {
    /// The texts of the entries the scan picked out.
    pub fn hit_texts(&self) -> Vec<&str> {
        self.hits.iter().map(|h| h.text.as_str()).collect()
    }

    /// Entry `index` (from 0), when it was read.
    pub fn entry(&self, index: usize) -> Option<&str> {
        let i = index.checked_sub(self.first)?;
        (i < self.lines.len()).then(|| self.lines.entry(i))
    }
}

/// What to read: the types picked out, where to start, the usage totals.
struct Ask<'a, F> {
    types: &'a [&'a str],
    /// The first entry to read, from the hits and the count.
    start: F,
    usage: bool,
    locked: bool,
    keep_from: u64,
}

/// Read `at`: a scan counts its entries and picks out those whose type is
/// one of `types`; `start` chooses from those the first entry to read.
pub fn read(at: &Located, types: &[&str], start: impl Fn(&[Hit]) -> usize) -> Result<Recent, StoreError> {
    read_with(at, types, start, false)
}

/// [`read`] by a caller that holds the session's write lock (and has
/// recovered it): a file that must be read whole is read as it is.
pub(crate) fn read_with(
    at: &Located,
    types: &[&str],
    start: impl Fn(&[Hit]) -> usize,
    locked: bool,
) -> Result<Recent, StoreError> {
    let ask = Ask { types, start: |hits: &[Hit], _: usize| start(hits), usage: false, locked, keep_from: KEEP_FROM };
    Ok(read_asked(at, &ask)?.0)
}

/// The last `n` entries of `at` (all when it has fewer), found from the
/// end backwards, with the header and the count.
pub fn read_tail(at: &Located, n: usize) -> Result<Recent, StoreError> {
    read_from(at, |total| total.saturating_sub(n))
}

/// The entries of `at` from the one `first` chooses (from the count) on.
pub fn read_from(at: &Located, first: impl Fn(usize) -> usize) -> Result<Recent, StoreError> {
    let ask = Ask {
        types: &[],
        start: |_: &[Hit], total: usize| first(total),
        usage: false,
        locked: false,
        keep_from: KEEP_FROM,
    };
    Ok(read_asked(at, &ask)?.0)
}

/// The header and count of `at`, its `compacted`, `cleared` and `custom`
/// entries, and the totals of its `usage` entries: what `status` shows.
pub fn tally(at: &Located) -> Result<(Recent, UsageSum), StoreError> {
    let ask =
        Ask { types: KEPT, start: |_: &[Hit], total: usize| total, usage: true, locked: false, keep_from: KEEP_FROM };
    let (recent, usage) = read_asked(at, &ask)?;
    Ok((recent, usage.unwrap_or_default()))
}

fn read_asked<F: Fn(&[Hit], usize) -> usize>(
    at: &Located,
    ask: &Ask<'_, F>,
) -> Result<(Recent, Option<UsageSum>), StoreError> {
    // A file that changes while it is scanned is scanned again, and after
    // a few tries read whole (which settles it under the lock if need be).
    if !at.legacy {
        for _ in 0..3 {
            match scan_read(at, ask).map_err(|e| StoreError::io(&at.path, "read", e))? {
                Scan::Done(done) => return Ok(*done),
                Scan::Changed => continue,
                Scan::Stale => {
                    // The kept scan no longer describes the file: never
                    // used again, the next scan starts from the first entry.
                    let _ = std::fs::remove_file(survey::kept_path(&at.path));
                }
                Scan::Whole => break,
            }
        }
    }
    let lines = if ask.locked { lines::read_locked(at)? } else { lines::read(at)? };
    let total = lines.len();
    let mut usage = ask.usage.then(UsageSum::default);
    let mut hits = Vec::new();
    for index in 0..total {
        let text = lines.entry(index);
        let kind = kind_of(text);
        if let (Some("usage"), Some(sum)) = (kind.as_deref(), &mut usage) {
            sum.add_text(text.as_bytes());
        }
        if kind.is_some_and(|k| ask.types.contains(&k.as_str())) {
            hits.push(Hit { index, text: text.to_string() });
        }
    }
    // Read whole, every entry is at hand: from the first one.
    Ok((Recent { total, first: 0, lines, hits }, usage))
}

/// The type of the entry `text`, parsing it only when it does not begin
/// with its type. `None` when it has none, or is no entry but a piece of
/// one (see [`lines::foreign_type`]).
fn kind_of(text: &str) -> Option<String> {
    match super::entry::quick_type(text) {
        Some(kind) => Some(kind.to_string()),
        None => lines::foreign_type(text.as_bytes()).flatten(),
    }
}

/// What one scan found.
enum Scan {
    Done(Box<(Recent, Option<UsageSum>)>),
    /// The file changed while it was read: scan again.
    Changed,
    /// The kept scan does not hold for the file: scan again without it.
    Stale,
    /// Not in the layout, torn, or missing appends its journal holds: read
    /// it whole (which settles it under the lock if need be).
    Whole,
}

fn scan_read<F: Fn(&[Hit], usize) -> usize>(at: &Located, ask: &Ask<'_, F>) -> io::Result<Scan> {
    if std::fs::symlink_metadata(&at.path)?.file_type().is_symlink() {
        return Ok(Scan::Whole);
    }
    let file = File::open(&at.path)?;
    let meta = file.metadata()?;
    let before = Stamp::from_metadata(&meta);
    let len = meta.len();
    let Some(layout) = layout::find(&file, len, &at.path)? else { return Ok(Scan::Whole) };
    let mark_len = len.min(256);
    let mut mark_tail = vec![0; mark_len as usize];
    file.read_exact_at(&mut mark_tail, len - mark_len)?;
    let (from, to) = (layout.head.len() as u64 + 1, layout.tail_at);
    // The kept scan serves only the kinds it records.
    let keep = ask.types.iter().all(|t| KEPT.contains(t));
    let kinds = if keep { KEPT } else { ask.types };
    let found = survey::survey(&file, &at.path, before, (from, to), kinds, ask.usage, keep)?;
    let Some(found) = found else { return Ok(Scan::Whole) };
    // What the kept scan said, found untrue, makes it stale; what this
    // scan found untrue makes the file unreadable as lines.
    let untrue = if found.kept_end.is_some() { Scan::Stale } else { Scan::Whole };
    let read_text = |range: Range<u64>| -> io::Result<Option<String>> {
        let mut bytes = vec![0; (range.end - range.start) as usize];
        file.read_exact_at(&mut bytes, range.start)?;
        Ok(String::from_utf8(bytes).ok())
    };
    let mut hits = Vec::new();
    for spot in found.scanned.spots.iter().filter(|s| ask.types.contains(&s.kind.as_str())) {
        let text = read_text(spot.start..spot.end)?;
        match text {
            Some(text) if kind_of(&text).as_deref() == Some(spot.kind.as_str()) => {
                hits.push(Hit { index: spot.index, text })
            }
            _ => return Ok(untrue),
        }
    }
    let total = found.scanned.count;
    let first = (ask.start)(&hits, total).min(total);
    let Some(base) = found.start_of(&file, first)? else { return Ok(untrue) };
    let Some(text) = read_text(base..to)? else { return Ok(Scan::Whole) };
    let Some(spans) = split_entries(&text) else { return Ok(untrue) };
    if spans.len() != total - first {
        return Ok(untrue);
    }
    if Stamp::from_metadata(&file.metadata()?) != before || Stamp::of(&at.path)? != before {
        return Ok(Scan::Changed);
    }
    let read_at = |from: u64, n: usize| {
        let mut bytes = vec![0; n];
        file.read_exact_at(&mut bytes, from).ok().map(|()| bytes)
    };
    if !super::journal::holds_all(&at.path.with_extension("journal"), meta.ino(), len, read_at) {
        return Ok(Scan::Whole);
    }
    if keep && (found.kept_end.is_none() || found.scanned_now >= ask.keep_from) && to - from >= ask.keep_from {
        survey::save(&at.path, &found.scanned);
    }
    let usage = found.scanned.usage.clone();
    let mut header = layout.head_fields;
    let events_pos = header.len();
    header.extend(layout.tail_fields);
    let doc = Doc { header, events_pos, events: spans };
    let mark = Mark { ino: meta.ino(), len, tail: mark_tail };
    let lines = Lines::from_parts(at.clone(), doc, text, mark);
    Ok(Scan::Done(Box::new((Recent { lines, first, total, hits }, usage))))
}

/// Each entry's place in `text` (entries joined by `,⏎`, as in the file).
/// `None` when a line break is not `},⏎`.
fn split_entries(text: &str) -> Option<Vec<Range<usize>>> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let mut spans = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', bytes) {
        if nl < 2 || &bytes[nl - 2..nl] != b"}," {
            return None;
        }
        spans.push(start..nl - 1);
        start = nl + 1;
    }
    spans.push(start..bytes.len());
    Some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionId;
    use crate::store::{Entry, SessionFile};
    use serde_json::Value;

    fn at(dir: &std::path::Path) -> Located {
        Located { id: SessionId::parse("3f9a1c2b").unwrap(), path: dir.join("3f9a1c2b.json"), legacy: false }
    }

    #[test]
    fn a_scan_finds_what_a_whole_read_finds() {
        let dir = tempfile::tempdir().unwrap();
        let at = at(dir.path());
        let mut file = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
        file.set("title", Value::from("t"));
        for i in 0..3000 {
            let e = if i % 1000 == 999 {
                Entry::Cleared { at: "t".into() }
            } else {
                Entry::Notice { at: "t".into(), text: format!("line {i} {}", "x".repeat(i % 700)) }
            };
            file.events.push(e.to_raw().unwrap());
        }
        // An entry another program wrote, its type not first.
        file.events.push(serde_json::value::to_raw_value(&serde_json::json!({"at": "t", "type": "cleared"})).unwrap());
        file.events.push(Entry::Notice { at: "t".into(), text: "last".into() }.to_raw().unwrap());
        file.set("contextTokens", Value::from(12));
        std::fs::write(&at.path, file.to_bytes()).unwrap();
        let whole = lines::read(&at).unwrap();
        let recent = read(&at, &["cleared"], |hits| hits[1].index + 1).unwrap();
        assert_eq!(recent.total, 3002);
        let indices: Vec<usize> = recent.hits.iter().map(|h| h.index).collect();
        assert_eq!(indices, [999, 1999, 2999, 3000]);
        assert_eq!(recent.hits[3].text, whole.entry(3000));
        assert_eq!(recent.first, 2000);
        assert_eq!(recent.lines.entries(), whole.entries()[2000..].to_vec());
        assert_eq!(recent.lines.doc.header, whole.doc.header);
        assert_eq!(recent.lines.mark, whole.mark);
        // Not in the layout (pretty-printed): read whole, the same answer.
        let value: Value = serde_json::from_slice(&file.to_bytes()).unwrap();
        std::fs::write(&at.path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
        let pretty = read(&at, &["cleared"], |hits| hits[1].index + 1).unwrap();
        assert_eq!((pretty.total, pretty.first), (3002, 0));
        assert_eq!(pretty.hits.iter().map(|h| h.index).collect::<Vec<_>>(), indices);
    }

    /// A newline a hand edit put inside an entry, after a `},` or a `,`,
    /// with a `{` next: no extra entries, the same answer as a whole read.
    #[test]
    fn a_newline_inside_an_entry_is_not_taken_for_a_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let at = at(dir.path());
        let mut file = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
        for i in 0..3 {
            file.events.push(Entry::Notice { at: "t".into(), text: format!("n{i}") }.to_raw().unwrap());
        }
        let bytes = String::from_utf8(file.to_bytes()).unwrap();
        for data in [r#"[1,{"a":1}]"#, r#"[{"a":1},{"b":2}]"#] {
            let custom = format!(r#"{{"type":"custom","at":"t","name":"x","data":{data}}}"#);
            let edited = data.replacen(",{", ",\n{", 1);
            let text = bytes.replacen(r#"{"type":"notice","at":"t","text":"n1"}"#, &custom, 1).replace(data, &edited);
            assert!(text.contains(",\n{\""), "the edit is in place: {text}");
            std::fs::write(&at.path, &text).unwrap();
            let whole = lines::read(&at).unwrap();
            assert_eq!(whole.entries().len(), 3);
            let recent = read(&at, &["cleared"], |_| 0).unwrap();
            assert_eq!(recent.total, 3, "{data}");
            assert_eq!(recent.lines.entries(), whole.entries(), "{data}");
        }
    }
}

#[cfg(test)]
#[path = "recent_kept_tests.rs"]
mod kept_tests;
