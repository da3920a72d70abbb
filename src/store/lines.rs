//! Reading a session at memory speed: the file is read once, its header and
//! trailing fields are parsed, and its entries are found as lines (glrs
//! writes one entry per line, and a JSON string cannot hold a raw line
//! break), without parsing them. Callers parse only the entries they use:
//! `show --tail 5` five, the chat's context those after the last boundary.
//!
//! A file not in that layout (another program wrote it, a legacy file)
//! is parsed whole instead, and one that does not parse is read again under
//! the write lock (see [`super::read_settled`]), so a reader never reports
//! a torn tail as corrupt.

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use super::format::{self, Doc};
use super::{Located, Mark, WriteLock, journal};
use crate::error::StoreError;

/// A session's header and the text of each entry.
#[derive(Debug, Clone)]
pub struct Lines {
    /// The session read.
    pub at: Located,
    /// The header fields (in file order) and each entry's place in `text`.
    pub doc: Doc<Vec<Range<usize>>>,
    text: String,
    /// The mark of the bytes read (see [`Mark`]).
    pub mark: Mark,
}

impl Lines {
    /// Lines made from parts already found (see [`super::recent`]).
    pub(crate) fn from_parts(at: Located, doc: Doc<Vec<Range<usize>>>, text: String, mark: Mark) -> Lines {
        Lines { at, doc, text, mark }
    }

    /// How many entries the session has.
    pub fn len(&self) -> usize {
        self.doc.events.len()
    }

    /// True when the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.doc.events.is_empty()
    }

    /// Entry `i` (from 0) as its JSON text.
    pub fn entry(&self, i: usize) -> &str {
        &self.text[self.doc.events[i].clone()]
    }

    /// Every entry's text, in file order.
    pub fn entries(&self) -> Vec<&str> {
        self.doc.events.iter().map(|r| &self.text[r.clone()]).collect()
    }

    /// A header field.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.doc.get(name)
    }

    /// A header field that is a string.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.doc.get_str(name)
    }

    /// A header field that is a number.
    pub fn get_u64(&self, name: &str) -> Option<u64> {
        self.doc.get_u64(name)
    }
}

/// Read `at` as lines.
pub fn read(at: &Located) -> Result<Lines, StoreError> {
    let ((doc, text), mark) = read_settled(at, |bytes| split(bytes, at))?;
    Ok(Lines { at: at.clone(), doc, text, mark })
}

/// [`read`] by a caller that holds the session's write lock (and has
/// recovered it): the file is as it is, never read again under the lock.
pub(crate) fn read_locked(at: &Located) -> Result<Lines, StoreError> {
    let (bytes, ino) = read_bytes(at)?;
    let mark = Mark::of_bytes(ino, &bytes);
    let (doc, text) = super::damage::parse_or_salvage(bytes, |bytes| split(bytes, at))?;
    Ok(Lines { at: at.clone(), doc, text, mark })
}

/// The header and entry spans of a whole file: by lines when it is in the
/// store's layout, else by a full parse.
fn split(bytes: Vec<u8>, at: &Located) -> Result<Split, StoreError> {
    let bytes = match by_lines(bytes, at)? {
        Ok(found) => return Ok(found),
        Err(bytes) => bytes,
    };
    let file: format::SessionFile = format::parse(&bytes, &at.path, Some(at.id.as_str()))?;
    let mut text = String::new();
    let mut spans = Vec::with_capacity(file.events.len());
    for raw in &file.events {
        let start = text.len();
        text.push_str(raw.get());
        spans.push(start..text.len());
        text.push('\n');
    }
    Ok((Doc { header: file.header, events_pos: file.events_pos, events: spans }, text))
}

type Split = (Doc<Vec<Range<usize>>>, String);

/// The bytes back when the file is not in the layout (the caller parses it
/// whole).
fn by_lines(bytes: Vec<u8>, at: &Located) -> Result<Result<Split, Vec<u8>>, StoreError> {
    match spans(&bytes, at) {
        Some((header, events_pos, spans)) => {
            let text = String::from_utf8(bytes).map_err(|e| {
                // Where, as JSON errors say it: line and column (from 1).
                let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = memchr::memchr_iter(b'\n', valid).count() + 1;
                let column = valid.len() - memchr::memrchr(b'\n', valid).map_or(0, |n| n + 1) + 1;
                StoreError::Corrupt {
                    path: at.path.clone(),
                    detail: format!("not UTF-8 at line {line} column {column}"),
                }
            })?;
            Ok(Ok((Doc { header, events_pos, events: spans }, text)))
        }
        None => Ok(Err(bytes)),
    }
}

type Spans = (Vec<(String, Value)>, usize, Vec<Range<usize>>);

fn spans(bytes: &[u8], at: &Located) -> Option<Spans> {
    let first = memchr::memchr(b'\n', bytes)?;
    let head = &bytes[..first];
    if !head.ends_with(b"\"events\":[") {
        return None;
    }
    let close = memchr::memmem::rfind(bytes, b"\n]")?;
    if close < first {
        return None;
    }
    let mut closed = head.to_vec();
    closed.extend_from_slice(b"]}");
    let Ok(doc) = format::parse::<serde::de::IgnoredAny>(&closed, &at.path, Some(at.id.as_str())) else {
        return None;
    };
    let tail = &bytes[close + 2..];
    let fields = tail.strip_suffix(b"}\n").or_else(|| tail.strip_suffix(b"}"))?;
    let mut header = doc.header;
    let events_pos = header.len();
    if !fields.is_empty() {
        let inner = fields.strip_prefix(b",")?;
        let mut object = b"{".to_vec();
        object.extend_from_slice(inner);
        object.push(b'}');
        let map = serde_json::from_slice::<serde_json::Map<String, Value>>(&object).ok()?;
        for (name, value) in map {
            if name == "events" || header.iter().any(|(k, _)| *k == name) {
                return None;
            }
            header.push((name, value));
        }
    }
    // Entries: every line between, `{…}` followed by `,` but the last.
    let middle = &bytes[first + 1..close];
    let mut spans = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', middle).chain(std::iter::once(middle.len())) {
        let line = &middle[start..end];
        let last = end == middle.len();
        let entry = if last { Some(line) } else { line.strip_suffix(b",") };
        match entry {
            Some(e) if e.first() == Some(&b'{') && e.last() == Some(&b'}') => {
                if !e.starts_with(b"{\"type\":\"") && foreign_type(e).is_none() {
                    return None;
                }
                spans.push(first + 1 + start..first + 1 + start + e.len());
            }
            _ => return None,
        }
        start = end + 1;
    }
    Some((header, events_pos, spans))
}

/// The `type` (when a string) of an entry line that does not begin with
/// `{"type":"` (another program's entry, rare), found by parsing it. `None`
/// when the line is no JSON object: then it is no entry but the piece of
/// one a hand edit broke after a `},` (an array of objects), so the file's
/// lines are not its entries, and both line readers (whole, here, and from
/// the boundary, [`super::recent`]) read it by a full parse instead.
pub(crate) fn foreign_type(line: &[u8]) -> Option<Option<String>> {
    /// Only the type is kept: the other fields are skipped, not built.
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<Value>,
    }
    // A struct also parses from an array: the brace makes it an object.
    if line.first() != Some(&b'{') {
        return None;
    }
    let typed: Typed = serde_json::from_slice(line).ok()?;
    Some(match typed.kind {
        Some(Value::String(kind)) => Some(kind),
        _ => None,
    })
}

/// The bytes of a session file and its inode.
pub(crate) fn read_bytes(at: &Located) -> Result<(Vec<u8>, u64), StoreError> {
    let fail = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound { id: at.id.to_string() },
        _ => StoreError::io(&at.path, "read", e),
    };
    // A session file that is a link must not lead out of its folder.
    if std::fs::symlink_metadata(&at.path).is_ok_and(|m| m.file_type().is_symlink()) {
        let dir = at.path.parent().unwrap_or(Path::new("."));
        crate::paths::check_inside(dir, &at.path).map_err(|e| StoreError::io(&at.path, "read", e))?;
    }
    let mut handle = std::fs::File::open(&at.path).map_err(fail)?;
    let ino = std::os::unix::fs::MetadataExt::ino(&handle.metadata().map_err(fail)?);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut handle, &mut bytes).map_err(fail)?;
    Ok((bytes, ino))
}

/// Read a session file whole and `parse` it. Readers take no lock, and an
/// in-place append may be under way as they read: a file that does not
/// parse is read once more under the session's write lock (after any
/// append the journal committed is written again) before it is called corrupt.
/// Legacy files are never written, so they are read once.
pub(crate) fn read_settled<T>(
    at: &Located,
    parse: impl Fn(Vec<u8>) -> Result<T, StoreError>,
) -> Result<(T, Mark), StoreError> {
    let (bytes, ino) = read_bytes(at)?;
    let mark = Mark::of_bytes(ino, &bytes);
    let journal_path = at.path.with_extension("journal");
    let slice = |from: u64, n: usize| bytes.get(from as usize..(from as usize).checked_add(n)?).map(<[u8]>::to_vec);
    let complete = at.legacy || journal::holds_all(&journal_path, ino, bytes.len() as u64, slice);
    let parsed =
        if complete { parse(bytes) } else { Err(StoreError::Corrupt { path: at.path.clone(), detail: String::new() }) };
    // Settled, a file still corrupt is read past its damaged lines, if
    // that is all that is wrong with it (see [`super::damage`]).
    match parsed {
        Err(StoreError::Corrupt { .. }) if !at.legacy => {
            let _lock = WriteLock::acquire(&at.path.with_extension("lock"))?;
            journal::recover(&at.path, &journal_path)?;
            let (bytes, ino) = read_bytes(at)?;
            let mark = Mark::of_bytes(ino, &bytes);
            Ok((super::damage::parse_or_salvage(bytes, parse)?, mark))
        }
        Err(StoreError::Corrupt { .. }) => {
            let (bytes, ino) = read_bytes(at)?;
            let mark = Mark::of_bytes(ino, &bytes);
            Ok((super::damage::parse_or_salvage(bytes, parse)?, mark))
        }
        other => Ok((other?, mark)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionId;
    use crate::store::{Entry, SessionFile};

    fn at(dir: &std::path::Path) -> Located {
        Located { id: SessionId::parse("3f9a1c2b").unwrap(), path: dir.join("3f9a1c2b.json"), legacy: false }
    }

    fn file(n: usize) -> SessionFile {
        let mut file = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
        for i in 0..n {
            let e = Entry::Notice { at: "t".into(), text: format!("line {i}\nwith a break, and {{braces}}") };
            file.events.push(e.to_raw().unwrap());
        }
        file.set("title", Value::from("t"));
        file
    }

    #[test]
    fn lines_match_a_full_parse() {
        let dir = tempfile::tempdir().unwrap();
        let at = at(dir.path());
        for n in [0, 1, 3] {
            let f = file(n);
            std::fs::write(&at.path, f.to_bytes()).unwrap();
            let lines = read(&at).unwrap();
            assert_eq!(lines.len(), n);
            let texts: Vec<&str> = f.events.iter().map(|r| r.get()).collect();
            assert_eq!(lines.entries(), texts);
            assert_eq!(lines.doc.header, f.header);
            assert_eq!(lines.doc.events_pos, f.events_pos);
        }
        // Pretty-printed by another program: parsed whole, same answer.
        let f = file(2);
        let value: Value = serde_json::from_slice(&f.to_bytes()).unwrap();
        std::fs::write(&at.path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
        let lines = read(&at).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(serde_json::from_str::<Value>(lines.entry(1)).unwrap(), value["events"][1]);
    }

    #[test]
    fn a_broken_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let at = at(dir.path());
        let bytes = file(3).to_bytes();
        std::fs::write(&at.path, &bytes[..bytes.len() - 20]).unwrap();
        let err = read(&at).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }) && err.to_string().contains("3f9a1c2b.json"), "{err}");
    }

    #[test]
    fn a_file_that_is_not_utf8_names_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let at = at(dir.path());
        let text = String::from_utf8(file(3).to_bytes()).unwrap().replacen("line 1", "lin\u{e9} 1", 1);
        let mut bytes = text.into_bytes();
        // Cut the é in half: what is left of it is no UTF-8.
        let at_e = bytes.windows(2).position(|w| w == "é".as_bytes()).unwrap();
        bytes[at_e + 1] = b'x';
        let line = bytes[..at_e].iter().filter(|b| **b == b'\n').count() + 1;
        let column = at_e - bytes[..at_e].iter().rposition(|b| *b == b'\n').unwrap();
        std::fs::write(&at.path, &bytes).unwrap();
        let err = read(&at).unwrap_err().to_string();
        assert!(err.contains(&format!("not UTF-8 at line {line} column {column}")), "{err}");
        assert!(err.contains("3f9a1c2b.json"), "{err}");
    }

    /// A line that does not begin with its type is an entry when it is a
    /// JSON object, whatever its type; a piece of one never is.
    #[test]
    fn a_foreign_line_is_an_entry_only_when_it_is_an_object() {
        assert_eq!(foreign_type(br#"{"at":"t","type":"cleared"}"#), Some(Some("cleared".into())));
        assert_eq!(foreign_type(br#"{"at":"t","type":3}"#), Some(None));
        assert_eq!(foreign_type(br#"{"at":"t"}"#), Some(None));
        assert_eq!(foreign_type(br#"{"b":2}]}"#), None, "the piece after a '}},' in an array");
        assert_eq!(foreign_type(br#"["cleared"]"#), None, "an array is no entry");
    }
}
