//! Damaged lines (issue 33): a session file in the store's layout (one
//! entry a line) with a line that is no entry (a hand edit, a disk error,
//! another program) is read past that line rather than refused whole. The
//! line becomes a `custom` entry named [`NAME`] holding its text and line
//! number, in its place (so entry numbers stay as they were): kept, shown
//! as damaged, never sent to a model (no `custom` entry is).
//!
//! Reading never changes the file. A writer that has to rewrite it whole,
//! and `glrs-sessions repair`, write the salvaged file, the original kept
//! beside it as `<id>.json.bak` ([`keep_backup`]).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::StoreError;

/// The `custom` entry's name for a damaged line.
pub const NAME: &str = "damaged";

/// A file's bytes with each damaged line replaced by its `custom` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Salvaged {
    /// The file as it would be written.
    pub bytes: Vec<u8>,
    /// The damaged lines' numbers in the file (from 1).
    pub lines: Vec<usize>,
}

/// Salvage `bytes`: `None` when the file is not in the layout (the header
/// on the first line, ending `"events":[`, the entries one a line, `⏎]`
/// and the trailing fields) or has no damaged line. Whether the header and
/// the trailing fields are sound is for the parser to say, on the result.
pub fn salvage(bytes: &[u8]) -> Option<Salvaged> {
    let first = memchr::memchr(b'\n', bytes)?;
    let head = &bytes[..first];
    if !head.ends_with(b"\"events\":[") {
        return None;
    }
    let close = memchr::memmem::rfind(bytes, b"\n]")?;
    if close <= first {
        return None;
    }
    let at = stamp_of(head, &bytes[close..]);
    let mut out = Vec::with_capacity(bytes.len() + 256);
    out.extend_from_slice(&bytes[..=first]);
    let mut damaged = Vec::new();
    let middle = &bytes[first + 1..close];
    for (i, line) in middle.split(|b| *b == b'\n').enumerate() {
        if i > 0 {
            out.extend_from_slice(b",\n");
        }
        let entry = line.strip_suffix(b",").unwrap_or(line);
        if is_object(entry) {
            out.extend_from_slice(entry);
        } else {
            // Line numbers as editors count them: the header is line 1.
            let number = i + 2;
            damaged.push(number);
            out.extend_from_slice(entry_for(number, line, &at).as_bytes());
        }
    }
    if damaged.is_empty() {
        return None;
    }
    out.extend_from_slice(&bytes[close..]);
    Some(Salvaged { bytes: out, lines: damaged })
}

/// True when `line` is one whole JSON object.
fn is_object(line: &[u8]) -> bool {
    line.first() == Some(&b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

/// The `custom` entry that keeps a damaged line: its text (bytes that are
/// not UTF-8 as U+FFFD; the `.bak` keeps them as they were) and number.
fn entry_for(number: usize, line: &[u8], at: &str) -> String {
    let text = String::from_utf8_lossy(line);
    let entry = json!({"type": "custom", "at": at, "name": NAME, "data": {"line": number, "text": text}});
    entry.to_string()
}

/// The time a damaged line is given: the file's `updatedAt` (the line has
/// no time of its own), found in the header or the trailing fields.
fn stamp_of(head: &[u8], tail: &[u8]) -> String {
    let find = |bytes: &[u8]| {
        let key = b"\"updatedAt\":\"";
        let start = memchr::memmem::find(bytes, key)? + key.len();
        let len = memchr::memchr(b'"', &bytes[start..])?;
        std::str::from_utf8(&bytes[start..start + len]).ok().map(str::to_string)
    };
    find(head).or_else(|| find(tail)).unwrap_or_default()
}

/// Keep the file as it was before it is rewritten salvaged:
/// `<id>.json.bak`, else `<id>.json.bak.2`, … (an earlier one is never
/// overwritten). Written 0600 like the session, and synced.
pub fn keep_backup(session: &Path, original: &[u8]) -> Result<PathBuf, StoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = session.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut n = 1;
    loop {
        let path = match n {
            1 => session.with_file_name(format!("{name}.bak")),
            n => session.with_file_name(format!("{name}.bak.{n}")),
        };
        n += 1;
        let opened = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path);
        let mut file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(StoreError::io(&path, "create", e)),
        };
        file.write_all(original).and_then(|()| file.sync_all()).map_err(|e| StoreError::io(&path, "write", e))?;
        return Ok(path);
    }
}

/// Remove the backups [`keep_backup`] made of `session` (it is removed).
pub fn remove_backups(session: &Path) {
    let name = session.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let _ = std::fs::remove_file(session.with_file_name(format!("{name}.bak")));
    for n in 2.. {
        if std::fs::remove_file(session.with_file_name(format!("{name}.bak.{n}"))).is_err() {
            break;
        }
    }
}

/// Parse `bytes` with `parse`; a file it calls corrupt is parsed again
/// salvaged, when it can be. The caller has settled the file (read it
/// under the write lock after recovery): a torn append is never salvaged.
pub(crate) fn parse_or_salvage<T>(
    bytes: Vec<u8>,
    parse: impl Fn(Vec<u8>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    // A copy only on this path (a file found corrupt, or an append under
    // way when first read): the parse takes its bytes.
    match parse(bytes.clone()) {
        Err(e @ StoreError::Corrupt { .. }) => match salvage(&bytes) {
            Some(salvaged) => parse(salvaged.bytes).map_err(|_| e),
            None => Err(e),
        },
        other => other,
    }
}

/// A damaged line's number and text, when `data` is a [`NAME`] entry's.
pub fn line_of(data: &Value) -> Option<(u64, &str)> {
    Some((data.get("line")?.as_u64()?, data.get("text")?.as_str()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"{"schema":2,"id":"3f9a1c2b","createdAt":"t0","updatedAt":"t1","cwd":"/","events":["#;

    #[test]
    fn a_damaged_line_becomes_a_custom_entry_in_its_place() {
        let file = format!(
            "{HEAD}\n{{\"type\":\"user\",\"at\":\"a\",\"text\":\"hi\"}},\nnot json at all\n{{\"type\":\"notice\",\"at\":\"b\",\"text\":\"x\"}}\n],\"contextTokens\":1}}\n"
        );
        let s = salvage(file.as_bytes()).unwrap();
        assert_eq!(s.lines, [3]);
        let doc: Value = serde_json::from_slice(&s.bytes).unwrap();
        let events = doc["events"].as_array().unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[1],
            json!({"type": "custom", "at": "t1", "name": "damaged", "data": {"line": 3, "text": "not json at all"}})
        );
        assert_eq!(events[2]["type"], "notice");
    }

    #[test]
    fn a_sound_file_or_one_not_in_the_layout_is_left_alone() {
        let sound = format!("{HEAD}\n{{\"type\":\"user\",\"at\":\"a\",\"text\":\"hi\"}}\n],\"contextTokens\":1}}\n");
        assert_eq!(salvage(sound.as_bytes()), None);
        assert_eq!(salvage(b"{\"schema\":2,\"events\":[garbage]}"), None);
    }

    #[test]
    fn a_truncated_last_line_and_a_torn_object_are_damaged_too() {
        let file = format!("{HEAD}\n{{\"type\":\"user\",\"at\":\"a\",\"te,\n{{\"type\":\"user\", oops}}\n]}}\n");
        assert_eq!(salvage(file.as_bytes()).unwrap().lines, [2, 3]);
    }
}
