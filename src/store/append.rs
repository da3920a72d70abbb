//! What one append adds to a session: entries and header fields. Entries
//! a writer may make large (a model's answer) are kept as they are and
//! serialized only into the file, so a 100 MB answer is never held a second
//! time as JSON text (issue 14).

use std::path::PathBuf;

use serde_json::Value;
use serde_json::value::RawValue;

use super::entry::Entry;
use super::format::{self, SessionFile};
use crate::error::StoreError;

/// What one [`Store::append`] adds: entries, and header fields to set.
#[derive(Debug, Default)]
pub struct Append {
    pub(super) entries: Vec<Pending>,
    pub(super) title: Option<String>,
    pub(super) header: Vec<(String, Value)>,
}

/// An entry on its way to the file: already JSON, or serialized only as it
/// is written (so a large one is never held twice, as itself and as text).
#[derive(Debug)]
pub(super) enum Pending {
    Raw(Box<RawValue>),
    Known(Entry),
}

impl serde::Serialize for Pending {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Pending::Raw(raw) => raw.serialize(serializer),
            Pending::Known(entry) => entry.serialize(serializer),
        }
    }
}

impl Pending {
    fn to_raw(&self) -> Result<Box<RawValue>, StoreError> {
        match self {
            Pending::Raw(raw) => Ok(raw.clone()),
            Pending::Known(entry) => entry
                .to_raw()
                .map_err(|e| StoreError::Corrupt { path: PathBuf::from("(new entry)"), detail: e.to_string() }),
        }
    }

    fn text(&self) -> String {
        match self {
            Pending::Raw(raw) => raw.get().to_string(),
            // An entry always serializes (string keys, no failing field);
            // were one not to, it reads as no entry at all.
            Pending::Known(entry) => serde_json::to_string(entry).unwrap_or_default(),
        }
    }
}

impl Append {
    /// An empty change.
    pub fn new() -> Append {
        Append::default()
    }

    /// Add an entry. The first user message also gives an untitled session
    /// its `title`.
    pub fn entry(mut self, entry: &Entry) -> Result<Append, StoreError> {
        if let (None, Entry::User { text, .. }) = (&self.title, entry) {
            self.title = Some(format::title_from(text));
        }
        let raw = entry
            .to_raw()
            .map_err(|e| StoreError::Corrupt { path: PathBuf::from("(new entry)"), detail: e.to_string() })?;
        self.entries.push(Pending::Raw(raw));
        Ok(self)
    }

    /// Add an entry that is serialized only as it is written, straight into
    /// the file: for entries that may be large (a model's answer), which
    /// [`Append::entry`] would hold a second time as JSON text.
    pub fn entry_owned(mut self, entry: Entry) -> Append {
        if let (None, Entry::User { text, .. }) = (&self.title, &entry) {
            self.title = Some(format::title_from(text));
        }
        self.entries.push(Pending::Known(entry));
        self
    }

    /// Add an entry already in raw form (a type this version does not know).
    pub fn raw_entry(mut self, raw: Box<RawValue>) -> Append {
        self.entries.push(Pending::Raw(raw));
        self
    }

    /// How many entries it adds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when it adds no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The text of each entry to add (built here for an entry added with
    /// [`Append::entry_owned`]: for a merge that must read them, not for
    /// writing).
    pub fn entry_texts(&self) -> Vec<String> {
        self.entries.iter().map(Pending::text).collect()
    }

    /// Apply to a file read under the write lock: the entries after
    /// whatever is there, the header fields, `title` from the first user
    /// message when the session has none, and `updatedAt`.
    pub fn apply(self, file: &mut SessionFile) -> Result<(), StoreError> {
        self.apply_header(file);
        for entry in &self.entries {
            file.events.push(entry.to_raw()?);
        }
        Ok(())
    }

    /// The header part of [`Append::apply`]: the fields, `title` and
    /// `updatedAt`, not the entries.
    pub(super) fn apply_header(&self, file: &mut SessionFile) {
        // An untitled file (a legacy one, say) that already has a user
        // message takes its title from that, not from the new message.
        let untitled = file.get_str("title").is_none_or(str::is_empty);
        let title = if untitled { first_user_title(&file.events).or_else(|| self.title.clone()) } else { None };
        for (name, value) in &self.header {
            file.set(name, value.clone());
        }
        if let Some(title) = title {
            file.set("title", Value::from(title));
        }
        file.set("updatedAt", Value::from(crate::time::now()));
    }

    /// Set a header field (`contextTokens`, `model`, `key`, …).
    pub fn set(mut self, name: &str, value: impl Into<Value>) -> Append {
        self.set_field(name, value);
        self
    }

    /// [`Append::set`] in place; a field set twice takes the later value.
    pub fn set_field(&mut self, name: &str, value: impl Into<Value>) {
        let value = value.into();
        match self.header.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.header.push((name.to_string(), value)),
        }
    }
}

/// The title the first user entry among `events` gives, if there is one.
fn first_user_title(events: &[Box<RawValue>]) -> Option<String> {
    events.iter().find_map(|raw| {
        let value: Value = serde_json::from_str(raw.get()).ok()?;
        if value.get("type")?.as_str()? != "user" {
            return None;
        }
        value.get("text")?.as_str().map(format::title_from)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_probe::peak_during;
    use crate::message::Text;
    use crate::store::Store;
    use crate::{Paths, SessionId};

    #[test]
    fn a_large_entry_goes_into_the_file_without_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::from_vars(Some(dir.path().into()), None, None, Some(dir.path().into())).unwrap();
        let store = Store::new(paths);
        let id = SessionId::parse("3f9a1c2b").unwrap();
        store.create_as(&id, "/w").unwrap();
        let text = Text::from("y".repeat(8 << 20));
        let answer = || Entry::Assistant {
            at: crate::time::now(),
            text: text.clone(),
            model: "openai/gpt-4.1".into(),
            tool_calls: Vec::new(),
            stop_reason: "stop".into(),
        };
        // The first append rewrites the new file whole (it gains a title);
        // the second appends in place. Neither holds the answer again.
        for in_place in [false, true] {
            let user = Entry::User { at: crate::time::now(), text: "hi".into(), steer: false, internal: None };
            let (written, held) =
                peak_during(|| store.append(&id, Append::new().entry_owned(user).entry_owned(answer())).unwrap());
            assert_eq!(written.rewritten.is_none(), in_place);
            assert!(held < 1 << 20, "held {held} bytes more to write an 8 MB answer (in place: {in_place})");
        }
        let loaded = store.read(&store.locate(&id).unwrap()).unwrap();
        assert_eq!(loaded.file.events.len(), 4);
        for raw in [&loaded.file.events[1], &loaded.file.events[3]] {
            match crate::store::Parsed::from_raw(raw) {
                crate::store::Parsed::Known(Entry::Assistant { text: got, .. }) => assert!(got == text),
                other => panic!("{other:?}"),
            }
        }
    }
}
