//! The session file (SPEC section 2, schema 2): parsing and writing.
//!
//! A file is read into an ordered list of header fields plus the raw text of
//! each entry. Entries are never re-encoded, so fields and entry types this
//! version does not know survive every rewrite unchanged, and a 100 MB
//! session costs one validating scan, not a tree of values.
//!
//! Files are written with one entry per line, so `grep` over the store
//! prints whole entries:
//!
//! ```text
//! {"schema":2,"id":"3f9a1c2b",…,"events":[
//! {"type":"user","at":"…","text":"hello"},
//! {"type":"assistant",…}
//! ],"contextTokens":12}
//! ```

use std::cell::Cell;
use std::fmt;
use std::io::{self, Write};
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::StoreError;

/// The schema this version writes and the newest it reads.
pub const SCHEMA: u64 = 2;

/// A parsed session document: header fields in file order, and the entries.
#[derive(Debug, Clone)]
pub struct Doc<E> {
    /// Every top-level field except `events`, in file order.
    pub header: Vec<(String, Value)>,
    /// How many header fields come before `events` in the file.
    pub events_pos: usize,
    /// The entries.
    pub events: E,
}

/// A whole session file, entries kept as their raw JSON text.
pub type SessionFile = Doc<Vec<Box<RawValue>>>;

impl<E> Doc<E> {
    /// A header field.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.header.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// A header field that is text.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// A header field that is a number.
    pub fn get_u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    /// Set a header field: in place when present, else just before `events`
    /// (so a fast reader of the head of the file finds it).
    pub fn set(&mut self, name: &str, value: Value) {
        if let Some(slot) = self.header.iter_mut().find(|(k, _)| k == name) {
            slot.1 = value;
        } else {
            self.header.insert(self.events_pos, (name.to_string(), value));
            self.events_pos += 1;
        }
    }

    /// Remove a header field; true when it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        match self.header.iter().position(|(k, _)| k == name) {
            Some(i) => {
                self.header.remove(i);
                if i < self.events_pos {
                    self.events_pos -= 1;
                }
                true
            }
            None => false,
        }
    }
}

impl SessionFile {
    /// A new, empty session.
    pub fn new(id: &str, cwd: &str, now: &str) -> SessionFile {
        let header = vec![
            ("schema".to_string(), Value::from(SCHEMA)),
            ("id".to_string(), Value::from(id)),
            ("createdAt".to_string(), Value::from(now)),
            ("updatedAt".to_string(), Value::from(now)),
            ("cwd".to_string(), Value::from(cwd)),
            ("contextTokens".to_string(), Value::from(0u64)),
        ];
        SessionFile { header, events_pos: 5, events: Vec::new() }
    }

    /// A new file derived from this one (a fork): entries `1..=keep`, the
    /// header fields not named in `not_copied` where they were (before or
    /// after `events`), an empty `id` for the caller to set, fresh times, and
    /// `contextTokens` at the end.
    pub fn derive(&self, keep: usize, not_copied: &[&str], now: &str, context_tokens: u64) -> SessionFile {
        let fresh = ["schema", "id", "createdAt", "updatedAt", "contextTokens"];
        let copied = |name: &String| !not_copied.contains(&name.as_str()) && !fresh.contains(&name.as_str());
        let mut header = vec![
            ("schema".to_string(), Value::from(SCHEMA)),
            ("id".to_string(), Value::from("")),
            ("createdAt".to_string(), Value::from(now)),
            ("updatedAt".to_string(), Value::from(now)),
        ];
        header.extend(self.header[..self.events_pos].iter().filter(|(k, _)| copied(k)).cloned());
        let events_pos = header.len();
        header.extend(self.header[self.events_pos..].iter().filter(|(k, _)| copied(k)).cloned());
        header.push(("contextTokens".to_string(), Value::from(context_tokens)));
        SessionFile { header, events_pos, events: self.events[..keep.min(self.events.len())].to_vec() }
    }

    /// Write the file in the store's layout (one entry per line).
    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        self.write_with(out, &[] as &[Box<RawValue>])
    }

    /// [`SessionFile::write_to`] with `more` entries after the file's own,
    /// each serialized straight into `out` (an entry holding a 100 MB
    /// answer is never built into a string first).
    pub fn write_with<T: serde::Serialize>(&self, out: &mut dyn Write, more: &[T]) -> io::Result<()> {
        out.write_all(b"{")?;
        let (before, after) = self.header.split_at(self.events_pos);
        for (i, (name, value)) in before.iter().enumerate() {
            write_field(out, i > 0, name, value)?;
        }
        out.write_all(if before.is_empty() { b"\"events\":[" } else { b",\"events\":[" })?;
        for (i, entry) in self.events.iter().enumerate() {
            out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            out.write_all(entry.get().as_bytes())?;
        }
        for (i, entry) in more.iter().enumerate() {
            out.write_all(if i == 0 && self.events.is_empty() { b"\n" } else { b",\n" })?;
            serde_json::to_writer(&mut *out, entry)?;
        }
        out.write_all(if self.events.is_empty() && more.is_empty() { b"]" } else { b"\n]" })?;
        for (name, value) in after {
            write_field(out, true, name, value)?;
        }
        out.write_all(b"}\n")
    }

    /// The file's bytes in the store's layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.events.iter().map(|e| e.get().len() + 2).sum::<usize>() + 512);
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }
}

fn write_field(out: &mut dyn Write, comma: bool, name: &str, value: &Value) -> io::Result<()> {
    if comma {
        out.write_all(b",")?;
    }
    serde_json::to_writer(&mut *out, name)?;
    out.write_all(b":")?;
    serde_json::to_writer(&mut *out, value)?;
    Ok(())
}

/// Parse a session file. `expected_id`, when given, must equal the file's
/// `id` (the file name is the id). Errors name `path` and, for JSON errors,
/// the line and column.
pub fn parse<E: DeserializeOwned>(bytes: &[u8], path: &Path, expected_id: Option<&str>) -> Result<Doc<E>, StoreError> {
    let newer_schema = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = de::Deserializer::deserialize_map(
        &mut de,
        DocVisitor::<E> { newer_schema: &newer_schema, marker: PhantomData },
    )
    .and_then(|doc| de.end().map(|()| doc));
    if let Some(schema) = newer_schema.take() {
        return Err(StoreError::UnsupportedSchema { path: path.to_path_buf(), schema });
    }
    let doc = parsed.map_err(|e| corrupt(path, json_error_detail(&e)))?;
    validate(&doc, path, expected_id)?;
    Ok(doc)
}

fn json_error_detail(e: &serde_json::Error) -> String {
    if e.is_eof() {
        format!("the file ends too early (truncated?) at line {} column {}", e.line(), e.column())
    } else {
        // serde_json's message already ends with "at line L column C".
        e.to_string()
    }
}

fn corrupt(path: &Path, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt { path: path.to_path_buf(), detail: detail.into() }
}

fn validate<E>(doc: &Doc<E>, path: &Path, expected_id: Option<&str>) -> Result<(), StoreError> {
    match doc.get("schema") {
        Some(Value::Number(n)) if matches!(n.as_u64(), Some(1..=SCHEMA)) => {}
        Some(other) => return Err(corrupt(path, format!("\"schema\" is {other}, not 2"))),
        None => return Err(corrupt(path, "no \"schema\" field")),
    }
    let id = doc.get_str("id").ok_or_else(|| corrupt(path, "no \"id\" string"))?;
    if let Some(expected) = expected_id
        && id != expected
    {
        return Err(corrupt(path, format!("its \"id\" is {id:?} but the file name says {expected}")));
    }
    for field in ["createdAt", "updatedAt"] {
        if doc.get_str(field).is_none() {
            return Err(corrupt(path, format!("no \"{field}\" string")));
        }
    }
    Ok(())
}

struct DocVisitor<'a, E> {
    newer_schema: &'a Cell<Option<String>>,
    marker: PhantomData<E>,
}

impl<'de, E: DeserializeOwned> Visitor<'de> for DocVisitor<'_, E> {
    type Value = Doc<E>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc<E>, A::Error> {
        let mut header: Vec<(String, Value)> = Vec::new();
        let mut events: Option<(usize, E)> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "events" {
                if events.is_some() {
                    return Err(de::Error::duplicate_field("events"));
                }
                events = Some((header.len(), map.next_value::<E>()?));
                continue;
            }
            let value: Value = map.next_value()?;
            if key == "schema"
                && let Some(n) = value.as_u64()
                && n > SCHEMA
            {
                // Stop here: a newer file may not even have our shape.
                self.newer_schema.set(Some(n.to_string()));
                return Err(de::Error::custom("newer schema"));
            }
            if header.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            header.push((key, value));
        }
        let (events_pos, events) = events.ok_or_else(|| de::Error::missing_field("events"))?;
        Ok(Doc { header, events_pos, events })
    }
}

/// What a listing needs from the `events` array without keeping it: the
/// number of entries and the first user message (a title for files written
/// without the `title` header field).
#[derive(Debug, Clone, Default)]
pub struct EventsSummary {
    /// How many entries there are.
    pub count: u64,
    /// The text of the first user entry, for a title.
    pub first_user_text: Option<String>,
}

impl<'de> serde::Deserialize<'de> for EventsSummary {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SeqVisitor;
        #[derive(serde::Deserialize)]
        struct Peek {
            #[serde(rename = "type")]
            kind: Option<String>,
            text: Option<String>,
        }
        impl<'de> Visitor<'de> for SeqVisitor {
            type Value = EventsSummary;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of entries")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<EventsSummary, A::Error> {
                let mut out = EventsSummary::default();
                loop {
                    if out.first_user_text.is_none() {
                        match seq.next_element::<Peek>()? {
                            None => break,
                            Some(peek) => {
                                if peek.kind.as_deref() == Some("user") {
                                    out.first_user_text = peek.text;
                                }
                            }
                        }
                    } else if seq.next_element::<de::IgnoredAny>()?.is_none() {
                        break;
                    }
                    out.count += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(SeqVisitor)
    }
}

/// The first line of a user message, as a session title.
pub fn title_from(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn p() -> PathBuf {
        PathBuf::from("/s/3f9a1c2b.json")
    }

    const SAMPLE: &str = r#"{"schema":2,"id":"3f9a1c2b","createdAt":"2026-11-29T15:24:19.412Z","updatedAt":"2026-11-29T15:31:02.007Z","cwd":"/w","future":{"a":[1,2]},"events":[{"type":"user","at":"x","text":"hi","extra":true},{"type":"hologram","at":"y","z":1}],"contextTokens":7,"after":"kept"}"#;

    #[test]
    fn unknown_fields_and_entries_survive_a_rewrite() {
        let doc: SessionFile = parse(SAMPLE.as_bytes(), &p(), Some("3f9a1c2b")).unwrap();
        let bytes = doc.to_bytes();
        let again: Value = serde_json::from_slice(&bytes).unwrap();
        let orig: Value = serde_json::from_str(SAMPLE).unwrap();
        assert_eq!(again, orig);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\n{\"type\":\"hologram\",\"at\":\"y\",\"z\":1}\n]"), "{text}");
        // Field order is kept, `contextTokens` and `after` after the events.
        let keys: Vec<&str> = doc.header.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["schema", "id", "createdAt", "updatedAt", "cwd", "future", "contextTokens", "after"]);
        assert_eq!(doc.events_pos, 6);
    }

    #[test]
    fn set_puts_new_fields_before_events() {
        let mut doc: SessionFile = parse(SAMPLE.as_bytes(), &p(), None).unwrap();
        doc.set("title", Value::from("t"));
        doc.set("contextTokens", Value::from(9));
        assert_eq!(doc.header[6].0, "title");
        assert_eq!(doc.events_pos, 7);
        assert!(doc.remove("title"));
        assert_eq!(doc.events_pos, 6);
        let v: Value = serde_json::from_slice(&doc.to_bytes()).unwrap();
        assert_eq!(v["contextTokens"], 9);
    }

    #[test]
    fn new_file_round_trips() {
        let doc = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
        let text = String::from_utf8(doc.to_bytes()).unwrap();
        assert_eq!(
            text,
            "{\"schema\":2,\"id\":\"3f9a1c2b\",\"createdAt\":\"2026-11-29T15:24:19.412Z\",\"updatedAt\":\"2026-11-29T15:24:19.412Z\",\"cwd\":\"/w\",\"events\":[],\"contextTokens\":0}\n"
        );
        let back: SessionFile = parse(text.as_bytes(), &p(), Some("3f9a1c2b")).unwrap();
        assert!(back.events.is_empty());
    }

    #[test]
    fn newer_schema_is_refused_by_name() {
        let text = r#"{"schema":3,"id":"3f9a1c2b","whatever":{"#;
        let err = parse::<Vec<Box<RawValue>>>(text.as_bytes(), &p(), None).unwrap_err();
        assert!(matches!(err, StoreError::UnsupportedSchema { .. }), "{err}");
        assert!(err.to_string().contains("schema 3"), "{err}");
    }

    #[test]
    fn truncated_and_wrong_files_name_the_problem() {
        let cut = &SAMPLE[..SAMPLE.len() - 30];
        let err = parse::<Vec<Box<RawValue>>>(cut.as_bytes(), &p(), None).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("3f9a1c2b.json") && msg.contains("line 1 column"), "{msg}");
        let err = parse::<Vec<Box<RawValue>>>(SAMPLE.as_bytes(), &p(), Some("00000000")).unwrap_err();
        assert!(err.to_string().contains("file name says 00000000"), "{err}");
        let err = parse::<Vec<Box<RawValue>>>(b"[1,2]", &p(), None).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }));
        let bad_utf8 = SAMPLE.replace("hi", "h\u{fffd}").replace('\u{fffd}', "\u{1}");
        let mut bytes = bad_utf8.into_bytes();
        let at = bytes.iter().position(|b| *b == 1).unwrap();
        bytes[at] = 0xff;
        let err = parse::<Vec<Box<RawValue>>>(&bytes, &p(), None).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn summary_counts_entries_and_finds_a_title() {
        let doc: Doc<EventsSummary> = parse(SAMPLE.as_bytes(), &p(), None).unwrap();
        assert_eq!(doc.events.count, 2);
        assert_eq!(doc.events.first_user_text.as_deref(), Some("hi"));
    }

    #[test]
    fn titles_are_first_lines_capped() {
        assert_eq!(title_from("\n  fix the build \nmore"), "fix the build");
        let long = "é".repeat(150);
        assert_eq!(title_from(&long).chars().count(), 101);
    }
}
