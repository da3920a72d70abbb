//! Listing sessions at any size.
//!
//! A listing needs a few header fields and the number of entries of every
//! session, not the sessions themselves. Those are kept in
//! `<sessions>/.index.json`, which is only ever a cache of the files: each
//! record is keyed by the file's path and stamped with its inode, size and
//! modification time, and used only while all three still match. A session
//! written since (every write renames a new inode into place) is summarised
//! again from its file; a record whose file is gone is dropped. Deleting the
//! index is always safe.
//!
//! So a warm listing costs one `readdir` and one `stat` per session plus
//! reading the index, whatever the sessions' sizes; only changed files are
//! read, in parallel, and each with a validating scan that keeps nothing but
//! the header and a count of entries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::format::{self, Doc, EventsSummary};
use super::lock::{self, Stamp};
use super::{Located, Store};
use crate::error::StoreError;

/// The index file's name in the sessions folder.
pub const INDEX_FILE: &str = ".index.json";
const INDEX_VERSION: u32 = 1;

/// What a listing shows of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The session id.
    pub id: String,
    /// `createdAt`.
    pub created_at: String,
    /// `updatedAt`.
    pub updated_at: String,
    /// How many entries.
    pub entries: u64,
    /// `contextTokens`.
    pub context_tokens: u64,
    /// `cwd`.
    pub cwd: String,
    /// The title (the header's, else the first user message's first line).
    pub title: String,
    /// The session key that owns it.
    pub key: Option<String>,
    /// The model it last used.
    pub model: Option<String>,
    /// `parent` as written by a fork.
    pub parent: Option<Value>,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Whether it is in the legacy folder.
    pub legacy: bool,
    /// Its file.
    pub path: PathBuf,
}

impl Summary {
    fn from_doc(doc: &Doc<EventsSummary>, at: &Located) -> Summary {
        let text = |name| doc.get_str(name).map(str::to_string);
        let title = text("title")
            .filter(|t| !t.is_empty())
            .or_else(|| doc.events.first_user_text.as_deref().map(format::title_from))
            .unwrap_or_default();
        Summary {
            id: at.id.to_string(),
            created_at: text("createdAt").unwrap_or_default(),
            updated_at: text("updatedAt").unwrap_or_default(),
            entries: doc.events.count,
            context_tokens: doc.get_u64("contextTokens").unwrap_or(0),
            cwd: text("cwd").unwrap_or_default(),
            title,
            key: text("key"),
            model: text("model"),
            parent: doc.get("parent").cloned(),
            pinned: doc.get("pinned").and_then(Value::as_bool).unwrap_or(false),
            legacy: at.legacy,
            path: at.path.clone(),
        }
    }
}

/// Summarise one session file from its bytes on disk.
pub fn summarize(at: &Located) -> Result<Summary, StoreError> {
    let (doc, _): (Doc<EventsSummary>, _) =
        super::read_settled(at, |bytes| format::parse(&bytes, &at.path, Some(at.id.as_str())))?;
    Ok(Summary::from_doc(&doc, at))
}

/// Every readable session, newest first, and a message for each file that
/// could not be read (one bad session never hides the others).
#[derive(Debug, Default)]
pub struct Listing {
    /// Every readable session.
    pub sessions: Vec<Summary>,
    /// Files that could not be read, each named with why.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    files: HashMap<PathBuf, Record>,
}

fn read_index(path: &Path) -> IndexFile {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<IndexFile>(&bytes).ok())
        .filter(|index| index.version == INDEX_VERSION)
        .unwrap_or_default()
}

/// List every session in the store and the legacy folder.
pub fn list(store: &Store) -> Result<Listing, StoreError> {
    let index_path = store.paths.sessions.join(INDEX_FILE);
    let mut index = read_index(&index_path);
    let found = store.all()?;
    let mut records: HashMap<PathBuf, Record> = HashMap::with_capacity(found.len());
    let mut stale: Vec<(Located, Stamp)> = Vec::new();
    for at in found {
        // A file removed between readdir and stat is simply not listed.
        let Ok(stamp) = Stamp::of(&at.path) else {
            continue;
        };
        match index.files.remove(&at.path) {
            Some(record) if record.stamp == stamp => {
                records.insert(at.path, record);
            }
            _ => stale.push((at, stamp)),
        }
    }
    let changed = !stale.is_empty() || !index.files.is_empty();
    for (path, record) in summarize_all(stale) {
        records.insert(path, record);
    }

    let mut listing = Listing::default();
    for record in records.values() {
        if let Some(summary) = &record.summary {
            listing.sessions.push(summary.clone());
        }
        if let Some(problem) = &record.problem {
            listing.problems.push(problem.clone());
        }
    }
    listing.problems.sort();
    sort_newest_first(&mut listing.sessions);

    if changed && store.paths.sessions.is_dir() {
        let index = IndexFile { version: INDEX_VERSION, files: records };
        // Only a cache: a failure (read-only store, full disk) costs the
        // next listing some reading, nothing more.
        let _ =
            lock::write_atomic(&index_path, false, |w| serde_json::to_writer(w, &index).map_err(std::io::Error::other));
    }
    Ok(listing)
}

/// Newest `updatedAt` first; ties by id, so the order is stable.
pub fn sort_newest_first(sessions: &mut [Summary]) {
    let key = |s: &Summary| crate::time::parse_ms(&s.updated_at).unwrap_or(i64::MIN);
    sessions.sort_by_cached_key(|s| (std::cmp::Reverse(key(s)), s.id.clone()));
}

/// Summarise changed files on every core: a cold listing of a large store
/// is bound by reading and scanning JSON.
fn summarize_all(stale: Vec<(Located, Stamp)>) -> Vec<(PathBuf, Record)> {
    let one = |(at, stamp): (Located, Stamp)| {
        let record = match summarize(&at) {
            Ok(summary) => Record { stamp, summary: Some(summary), problem: None },
            Err(e) => Record { stamp, summary: None, problem: Some(e.to_string()) },
        };
        (at.path, record)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if threads == 1 || stale.len() < 4 {
        return stale.into_iter().map(one).collect();
    }
    let chunk = stale.len().div_ceil(threads);
    let mut work = stale;
    let mut parts = Vec::new();
    while !work.is_empty() {
        let rest = work.split_off(work.len().saturating_sub(chunk));
        parts.push(rest);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            parts.into_iter().map(|part| scope.spawn(move || part.into_iter().map(one).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}
