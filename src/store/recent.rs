//! Reading a session for its context, whatever its size: the file is
//! scanned once as a stream (its lines counted, the few entries of the
//! kinds asked for picked out by their first bytes), and only the entries
//! from a chosen one to the end are read and kept. A resumed chat reads
//! from the last boundary on, and counts what it needs from the scan.
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
use super::{Located, Mark, layout};
use crate::error::StoreError;

/// How much of the file one read of the scan takes.
const CHUNK: usize = 1 << 20;
/// How many first bytes of an entry name its type (`{"type":"compacted"`).
const PREFIX: usize = 32;

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
    // A file that changes while it is scanned is scanned again, and after
    // a few tries read whole (which settles it under the lock if need be).
    if !at.legacy {
        for _ in 0..3 {
            match scan_read(at, types, &start).map_err(|e| StoreError::io(&at.path, "read", e))? {
                Scan::Done(recent) => return Ok(*recent),
                Scan::Changed => continue,
                Scan::Whole => break,
            }
        }
    }
    let lines = if locked { lines::read_locked(at)? } else { lines::read(at)? };
    let hits = (0..lines.len())
        .filter(|&i| picked(lines.entry(i).as_bytes(), types) && typed(lines.entry(i), types) == Some(true))
        .map(|index| Hit { index, text: lines.entry(index).to_string() })
        .collect::<Vec<_>>();
    Ok(Recent { total: lines.len(), first: 0, lines, hits })
}

/// True when an entry beginning with `prefix` is one `types` asks for, or
/// does not begin with its type (then only parsing it tells).
fn picked(prefix: &[u8], types: &[&str]) -> bool {
    let Some(rest) = prefix.strip_prefix(b"{\"type\":\"") else { return true };
    match memchr::memchr(b'"', rest) {
        Some(end) => types.iter().any(|t| t.as_bytes() == &rest[..end]),
        None => true,
    }
}

/// True when the entry `text` is of one of `types`, parsing it only when
/// it does not begin with its type. `None` when such a line is no entry
/// but a piece of one (see [`lines::foreign_type`]): the scan's line
/// boundaries cannot be trusted.
fn typed(text: &str, types: &[&str]) -> Option<bool> {
    match super::entry::quick_type(text) {
        Some(kind) => Some(types.contains(&kind)),
        None => Some(lines::foreign_type(text.as_bytes())?.is_some_and(|kind| types.contains(&kind.as_str()))),
    }
}

/// What one scan found.
enum Scan {
    Done(Box<Recent>),
    /// The file changed while it was read: scan again.
    Changed,
    /// Not in the layout, torn, or missing appends its journal holds: read
    /// it whole (which settles it under the lock if need be).
    Whole,
}

fn scan_read(at: &Located, types: &[&str], start: &impl Fn(&[Hit]) -> usize) -> io::Result<Scan> {
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
    let from = layout.head.len() as u64 + 1;
    let to = layout.tail_at;
    let Some((starts, hit_lines)) = lines_of(&file, from, to, types)? else { return Ok(Scan::Whole) };
    let end_of = |i: usize| if i + 1 < starts.len() { starts[i + 1] - 2 } else { to };
    let read_text = |range: Range<u64>| -> io::Result<Option<String>> {
        let mut bytes = vec![0; (range.end - range.start) as usize];
        file.read_exact_at(&mut bytes, range.start)?;
        Ok(String::from_utf8(bytes).ok())
    };
    let mut hits = Vec::with_capacity(hit_lines.len());
    for index in hit_lines {
        let Some(text) = read_text(starts[index]..end_of(index))? else { return Ok(Scan::Whole) };
        let Some(wanted) = typed(&text, types) else { return Ok(Scan::Whole) };
        if wanted {
            hits.push(Hit { index, text });
        }
    }
    let first = start(&hits).min(starts.len());
    let base = starts.get(first).copied().unwrap_or(to);
    let Some(text) = read_text(base..to)? else { return Ok(Scan::Whole) };
    let spans = (first..starts.len()).map(|i| (starts[i] - base) as usize..(end_of(i) - base) as usize).collect();
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
    let mut header = layout.head_fields;
    let events_pos = header.len();
    header.extend(layout.tail_fields);
    let doc = Doc { header, events_pos, events: spans };
    let mark = Mark { ino: meta.ino(), len, tail: mark_tail };
    let total = starts.len();
    Ok(Scan::Done(Box::new(Recent { lines: Lines::from_parts(at.clone(), doc, text, mark), first, total, hits })))
}

/// Where each entry line in `from..to` starts, and which lines `types`
/// picks, read as a stream. `None` when a line is not `{…},` (not the
/// layout, or torn). A hand edit can still put a newline inside an entry
/// right after a `},` (an array of objects): the piece that follows then
/// starts a "line" that does not begin with its type, which is always
/// picked and checked whole (`typed`).
fn lines_of(file: &File, from: u64, to: u64, types: &[&str]) -> io::Result<Option<(Vec<u64>, Vec<usize>)>> {
    let mut starts = vec![from];
    let mut hits = Vec::new();
    // Line starts too near the end of a chunk to see their first bytes.
    let mut deferred = Vec::new();
    let mut buf = vec![0; CHUNK.min((to - from) as usize)];
    let mut pos = from;
    // The two bytes before a chunk's first byte: an entry line ends `},`.
    let mut prev = [b'\n', b'\n'];
    let classify = |index: usize, prefix: &[u8], hits: &mut Vec<usize>| -> bool {
        if prefix.first() != Some(&b'{') {
            return false;
        }
        if picked(prefix, types) {
            hits.push(index);
        }
        true
    };
    deferred.push(0);
    while pos < to {
        let n = ((to - pos) as usize).min(buf.len());
        let chunk = &mut buf[..n];
        file.read_exact_at(chunk, pos)?;
        for j in memchr::memchr_iter(b'\n', chunk) {
            let before = match j {
                0 => prev,
                1 => [prev[1], chunk[0]],
                _ => [chunk[j - 2], chunk[j - 1]],
            };
            if before != *b"}," {
                return Ok(None);
            }
            let index = starts.len();
            let start = pos + j as u64 + 1;
            starts.push(start);
            let want = PREFIX.min((to - start) as usize);
            match chunk.get(j + 1..j + 1 + want) {
                Some(prefix) => {
                    if !classify(index, prefix, &mut hits) {
                        return Ok(None);
                    }
                }
                None => deferred.push(index),
            }
        }
        prev = if n >= 2 { [chunk[n - 2], chunk[n - 1]] } else { [prev[1], chunk[n - 1]] };
        pos += n as u64;
    }
    for index in deferred {
        let want = PREFIX.min((to - starts[index]) as usize);
        let mut prefix = vec![0; want];
        file.read_exact_at(&mut prefix, starts[index])?;
        if !classify(index, &prefix, &mut hits) {
            return Ok(None);
        }
    }
    hits.sort_unstable();
    Ok(Some((starts, hits)))
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
