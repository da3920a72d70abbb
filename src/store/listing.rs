//! Listing sessions at any size.
//!
//! A listing needs a few header fields and the number of entries of every
//! session, not the sessions themselves. Those are kept in
//! `<sessions>/.index` (layout in [`super::index`]), which is only ever a
//! cache of the files: each record is keyed by the file's name and folder
//! and stamped with its inode, size and modification time, and used only
//! while all three still match. A session written since (a rewrite renames
//! a new inode into place; an append in place changes size and time) is
//! summarised again from its file; a record whose file is gone is dropped.
//! Deleting the index is always safe; a damaged one is rebuilt. A file
//! that cannot be summarised is recorded with its problem only when the
//! problem is its content; one that failed to read is read again next time.
//!
//! So a warm listing costs one `readdir` and one `stat` per session plus
//! one read of the index, whatever the sessions' sizes; only changed files
//! are read, in parallel, and each with a validating scan that keeps nothing
//! but the header and a count of entries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::format::{self, Doc, EventsSummary};
use super::index;
use super::lock::{self, Stamp};
use super::{Located, Store};
use crate::error::StoreError;
use crate::id::SessionId;

/// The index file's name in the sessions folder.
pub const INDEX_FILE: &str = ".index";
/// The JSON index of earlier versions, removed when the index is written.
const OLD_INDEX_FILE: &str = ".index.json";

/// What a listing shows of one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// `importedAt`: when an imported session entered the store (cleanup
    /// counts its age from the later of this and `updatedAt`, SPEC 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported_at: Option<String>,
    /// Whether it is in the legacy folder.
    pub legacy: bool,
    /// Its file.
    pub path: PathBuf,
    /// `updatedAt` in milliseconds (`i64::MIN` when it does not parse):
    /// the sort key, not shown.
    #[serde(skip)]
    pub updated_ms: i64,
}

impl Summary {
    fn from_doc(doc: &Doc<EventsSummary>, at: &Located) -> Summary {
        let text = |name| doc.get_str(name).map(str::to_string);
        let title = text("title")
            .filter(|t| !t.is_empty())
            .or_else(|| doc.events.first_user_text.as_deref().map(format::title_from))
            .unwrap_or_default();
        let updated_at = text("updatedAt").unwrap_or_default();
        Summary {
            id: at.id.to_string(),
            created_at: text("createdAt").unwrap_or_default(),
            updated_ms: crate::time::parse_ms(&updated_at).unwrap_or(i64::MIN),
            updated_at,
            entries: doc.events.count,
            context_tokens: doc.get_u64("contextTokens").unwrap_or(0),
            cwd: text("cwd").unwrap_or_default(),
            title,
            key: text("key"),
            model: text("model"),
            parent: doc.get("parent").cloned(),
            pinned: doc.get("pinned").and_then(Value::as_bool).unwrap_or(false),
            imported_at: text("importedAt"),
            legacy: at.legacy,
            path: at.path.clone(),
        }
    }

    /// A summary from its index record, for the file at `at`.
    fn from_fields(f: &index::Fields, at: &Located) -> Summary {
        let text = |s: Option<&str>| s.map(str::to_string);
        Summary {
            id: at.id.to_string(),
            created_at: f.created_at.to_string(),
            updated_at: f.updated_at.to_string(),
            entries: f.entries,
            context_tokens: f.context_tokens,
            cwd: f.cwd.to_string(),
            title: f.title.to_string(),
            key: text(f.key),
            model: text(f.model),
            parent: f.parent.and_then(|p| serde_json::from_str(p).ok()),
            pinned: f.pinned,
            imported_at: text(f.imported_at),
            legacy: at.legacy,
            path: at.path.clone(),
            updated_ms: f.updated_ms,
        }
    }

    /// The summary as an index record's fields (`parent` as JSON text).
    fn fields<'a>(&'a self, parent: Option<&'a str>) -> index::Fields<'a> {
        index::Fields {
            updated_ms: self.updated_ms,
            entries: self.entries,
            context_tokens: self.context_tokens,
            id: &self.id,
            created_at: &self.created_at,
            updated_at: &self.updated_at,
            cwd: &self.cwd,
            title: &self.title,
            key: self.key.as_deref(),
            model: self.model.as_deref(),
            parent,
            pinned: self.pinned,
            imported_at: self.imported_at.as_deref(),
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
    /// Folders, and the index, that could not be read, each named with why.
    pub problems: Vec<String>,
    /// Session files that could not be read, with their times.
    pub unreadable: Vec<Unreadable>,
}

impl Listing {
    /// Every problem, files and folders alike, sorted: what `ls`, `grep`
    /// and `glrs-compact --all` warn of.
    pub fn all_problems(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.problems.iter().map(String::as_str).collect();
        all.extend(self.unreadable.iter().map(|u| u.problem.as_str()));
        all.sort_unstable();
        all
    }
}

/// A session file that could not be summarised: what a caller needs to
/// judge whether it may have hidden a session it looks for (its header, and
/// so its cwd and `updatedAt`, are unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// The file.
    pub path: PathBuf,
    /// Its modification time, in milliseconds since the epoch: its
    /// `updatedAt`, whatever it was, is no later.
    pub modified_ms: i64,
    /// Why it could not be read, naming the file.
    pub problem: String,
}

impl Unreadable {
    fn new(at: &Located, stamp: &Stamp, problem: &str) -> Unreadable {
        let modified_ms = stamp.mtime.saturating_mul(1000).saturating_add(stamp.mtime_ns / 1_000_000);
        Unreadable { path: at.path.clone(), modified_ms, problem: problem.to_string() }
    }
}

/// List every session in the store and the legacy folder.
///
/// One `readdir` and one `statx` (relative to the folder) per file, one
/// read of the index; the files whose stamp matches their record are not
/// opened. Changed and new files are summarised and the index rewritten.
/// An index that cannot be read is rebuilt, with a problem saying so.
pub fn list(store: &Store) -> Result<Listing, StoreError> {
    let index_path = store.paths.sessions.join(INDEX_FILE);
    let mut listing = Listing::default();
    let bytes = read_index(&index_path, &mut listing.problems);
    let (records, rebuilt) = decode_index(&bytes, &index_path, &mut listing.problems);
    let matched = match_records(store, &records, &mut listing.problems);
    let fresh = summarize_all(matched.stale);
    // A file that failed to read and had no record leaves the index as it
    // was: rewriting it at every listing until the cause goes away would
    // cost a write of the whole index each time.
    let changed = rebuilt || matched.replaced || matched.dropped || fresh.iter().any(remembered);
    listing.sessions.reserve(matched.kept.len() + fresh.len());
    for (record, at) in &matched.kept {
        match record.body {
            index::Body::Summary(fields) => listing.sessions.push(Summary::from_fields(&fields, at)),
            index::Body::Problem(problem) => {
                listing.unreadable.push(Unreadable::new(at, &record.stamp, problem));
            }
        }
    }
    for (at, stamp, result) in &fresh {
        match result {
            Ok(summary) => listing.sessions.push(summary.clone()),
            Err(failed) => {
                listing.unreadable.push(Unreadable::new(at, stamp, &failed.problem));
            }
        }
    }
    listing.problems.sort();
    sort_newest_first(&mut listing.sessions);
    if changed && store.paths.sessions.is_dir() {
        write_index(&index_path, &matched.kept, &fresh);
        // The JSON index of earlier versions, now never read.
        let _ = std::fs::remove_file(store.paths.sessions.join(OLD_INDEX_FILE));
    }
    Ok(listing)
}

/// The index's bytes; none when there is none, or when it cannot be read
/// (a problem saying so).
fn read_index(index_path: &Path, problems: &mut Vec<String>) -> Vec<u8> {
    match std::fs::read(index_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            problems.push(format!("{}: cannot read the listing index ({e}); not using it", index_path.display()));
            Vec::new()
        }
    }
}

/// The index's records, and whether it was damaged (then it has none, a
/// problem says so, and it is rebuilt).
fn decode_index<'a>(bytes: &'a [u8], index_path: &Path, problems: &mut Vec<String>) -> (Vec<index::Record<'a>>, bool) {
    if bytes.is_empty() && !index_path.exists() {
        return (Vec::new(), false);
    }
    if bytes.starts_with(index::MAGIC_FAMILY) && !bytes.starts_with(index::MAGIC) {
        return (Vec::new(), true);
    }
    match index::decode(bytes) {
        Ok(records) => (records, false),
        Err(index::Corrupt(why)) => {
            problems.push(format!(
                "{}: the listing index is damaged ({why}); rebuilt from the sessions",
                index_path.display()
            ));
            (Vec::new(), true)
        }
    }
}

/// The session files found, matched against the index's records.
struct Matched<'r, 'a> {
    /// The files whose stamp matches their record: not opened.
    kept: Vec<(&'r index::Record<'a>, Located)>,
    /// The files changed or new since, to summarise again.
    stale: Vec<(Located, Stamp)>,
    /// Whether a file read again had a record, which must now be replaced.
    replaced: bool,
    /// Whether a record's file is gone, so the record must go.
    dropped: bool,
}

/// Every session file (see [`scan`]), each with its record when its stamp
/// still matches it.
fn match_records<'r, 'a>(
    store: &Store,
    records: &'r [index::Record<'a>],
    problems: &mut Vec<String>,
) -> Matched<'r, 'a> {
    // By file name, one map for each folder.
    let mut lookup: [HashMap<&str, &index::Record>; 2] = [HashMap::new(), HashMap::new()];
    for record in records {
        lookup[usize::from(record.legacy)].insert(record.name, record);
    }
    let mut matched = Matched { kept: Vec::new(), stale: Vec::new(), replaced: false, dropped: false };
    for (at, stamp) in scan(store, problems) {
        match lookup[usize::from(at.legacy)].remove(file_name(&at.path)) {
            Some(record) if record.stamp == stamp => matched.kept.push((record, at)),
            found => {
                matched.replaced |= found.is_some();
                matched.stale.push((at, stamp));
            }
        }
    }
    matched.dropped = lookup.iter().any(|m| !m.is_empty());
    matched
}

/// Whether a fresh summary goes into the index: every summary, and only
/// the problems with a file's content (see [`Failed::remembered`]); a file
/// that failed to read has no record, so the next listing reads it again.
fn remembered(fresh: &(Located, Stamp, Result<Summary, Failed>)) -> bool {
    fresh.2.as_ref().map_or_else(|f| f.remembered, |_| true)
}

/// Write the index anew: the records kept, as they were, then the fresh
/// summaries remembered.
///
/// Only a cache: a failure (read-only store, full disk) costs the next
/// listing some reading, nothing more. Not synced either: an fdatasync
/// before the rename (10,000 sessions, a 2 MB index) made a listing after
/// one session changed 5 to 10% slower, to spare after a power cut a
/// rebuild (records torn there fail to decode or to match their files'
/// stamps). Unchanged listings do not write it.
fn write_index(
    index_path: &Path,
    kept: &[(&index::Record, Located)],
    fresh: &[(Located, Stamp, Result<Summary, Failed>)],
) {
    let remembered: Vec<_> = fresh.iter().filter(|f| remembered(f)).collect();
    let _ = lock::write_atomic(index_path, false, |w| {
        index::write_head(w, kept.len() + remembered.len())?;
        for (record, _) in kept {
            w.write_all(record.raw)?;
        }
        for (at, stamp, result) in &remembered {
            let parent = match result {
                Ok(s) => s.parent.as_ref().map(Value::to_string),
                Err(_) => None,
            };
            let body = match result {
                Ok(s) => index::Body::Summary(s.fields(parent.as_deref())),
                Err(failed) => index::Body::Problem(&failed.problem),
            };
            index::write_record(w, stamp, at.legacy, file_name(&at.path), &body)?;
        }
        Ok(())
    });
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Every session file with its stamp: the store's, then the legacy
/// folder's whose id the store does not have. Each file is stat-ed
/// relative to its folder (no walk of the whole path); a link is followed.
///
/// A folder that cannot be read (or stops being readable partway) is a
/// problem naming it, and the sessions found elsewhere are still listed:
/// one bad folder never hides the others.
fn scan(store: &Store, problems: &mut Vec<String>) -> Vec<(Located, Stamp)> {
    let mut found = Vec::new();
    let mut scan_or_warn = |dir: &Path, legacy: bool, out: &mut Vec<(Located, Stamp)>| {
        if let Err(e) = scan_folder(dir, legacy, out) {
            problems.push(format!("{}; sessions in it may be missing from the list", e.report()));
        }
    };
    scan_or_warn(&store.paths.sessions, false, &mut found);
    let mut legacy = Vec::new();
    scan_or_warn(&store.paths.legacy_sessions, true, &mut legacy);
    if !legacy.is_empty() {
        let known: std::collections::HashSet<SessionId> = found.iter().map(|(at, _)| at.id.clone()).collect();
        found.extend(legacy.into_iter().filter(|(at, _)| !known.contains(&at.id)));
    }
    found
}

fn scan_folder(dir: &Path, legacy: bool, out: &mut Vec<(Located, Stamp)>) -> Result<(), StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(dir, "read folder", e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, "read folder", e))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if !SessionId::is_id(stem) {
            continue;
        }
        let Ok(id) = SessionId::parse(stem) else {
            continue;
        };
        let path = entry.path();
        let metadata = match entry.file_type() {
            Ok(kind) if kind.is_symlink() => std::fs::metadata(&path),
            _ => entry.metadata(),
        };
        // A file removed between readdir and stat is simply not listed.
        if let Ok(metadata) = metadata {
            out.push((Located { id, path, legacy }, Stamp::from_metadata(&metadata)));
        }
    }
    Ok(())
}

/// Newest `updatedAt` first; ties by id, so the order is stable.
pub fn sort_newest_first(sessions: &mut [Summary]) {
    // Keys of 16 bytes, then one permutation: cheaper than moving whole
    // summaries at every comparison. Ids are 8 hex digits, so their value
    // orders them as their text does.
    sessions
        .sort_by_cached_key(|s| (std::cmp::Reverse(s.updated_ms), u64::from_str_radix(&s.id, 16).unwrap_or(u64::MAX)));
}

/// Why a file could not be summarised.
#[derive(Debug)]
struct Failed {
    /// The message, naming the file.
    problem: String,
    /// Whether the problem is about the file's content (corrupt, a schema
    /// this version does not know), so it holds until the file changes and
    /// the index may keep it under the file's stamp. A failure to read
    /// (permissions, too many open files, the file gone meanwhile) can end
    /// without the file's inode, size or time changing: not remembered.
    remembered: bool,
}

impl Failed {
    fn of(e: &StoreError) -> Failed {
        let remembered = matches!(e, StoreError::Corrupt { .. } | StoreError::UnsupportedSchema { .. });
        Failed { problem: e.report().to_string(), remembered }
    }

    /// A file whose summary panicked: glrs's fault, not the file's, so not
    /// remembered (a fixed glrs reads it again).
    fn panicked(at: &Located, panic: &(dyn std::any::Any + Send)) -> Failed {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Failed {
            problem: format!(
                "{}: not listed: glrs failed while reading it ({why}); please report this",
                at.path.display()
            ),
            remembered: false,
        }
    }
}

/// Summarise changed files on every core: a cold listing of a large store
/// is bound by reading and scanning JSON.
fn summarize_all(stale: Vec<(Located, Stamp)>) -> Vec<(Located, Stamp, Result<Summary, Failed>)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    summarize_all_with(stale, threads, summarize)
}

/// [`summarize_all`] with the number of threads and the summariser given.
///
/// A panic while summarising a file (a bug: the parser is fuzzed never to
/// panic on any bytes) costs that file only, reported as a problem naming
/// it and not remembered in the index. The workers borrow their share of
/// `stale`, so even a worker lost whole leaves the files it had to name.
fn summarize_all_with(
    stale: Vec<(Located, Stamp)>,
    threads: usize,
    summarize: impl Fn(&Located) -> Result<Summary, StoreError> + Sync,
) -> Vec<(Located, Stamp, Result<Summary, Failed>)> {
    let one = |at: &Located| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| summarize(at))) {
        Ok(result) => result.map_err(|e| Failed::of(&e)),
        Err(panic) => Err(Failed::panicked(at, panic.as_ref())),
    };
    let results: Vec<Result<Summary, Failed>> = if threads <= 1 || stale.len() < 4 {
        stale.iter().map(|(at, _)| one(at)).collect()
    } else {
        let one = &one;
        std::thread::scope(|scope| {
            let workers: Vec<_> = stale
                .chunks(stale.len().div_ceil(threads))
                .map(|part| (part, scope.spawn(move || part.iter().map(|(at, _)| one(at)).collect::<Vec<_>>())))
                .collect();
            workers
                .into_iter()
                .flat_map(|(part, worker)| {
                    worker.join().unwrap_or_else(|panic| {
                        part.iter().map(|(at, _)| Err(Failed::panicked(at, panic.as_ref()))).collect()
                    })
                })
                .collect()
        })
    };
    stale.into_iter().zip(results).map(|((at, stamp), result)| (at, stamp, result)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stale(n: u32) -> Vec<(Located, Stamp)> {
        (0..n)
            .map(|i| {
                let id = SessionId::parse(&format!("{i:08x}")).unwrap();
                let path = PathBuf::from(format!("/s/{id}.json"));
                (Located { id, path, legacy: false }, Stamp::unknown())
            })
            .collect()
    }

    #[test]
    fn a_summariser_that_panics_loses_one_file_and_names_it() {
        // Every file is corrupt but one, on which the summariser panics (a
        // bug, not bad input): that file is a problem naming it, and no
        // other file is lost with it.
        let corrupt = |at: &Located| {
            if at.id.as_str() == "00000005" {
                panic!("a bug in the summariser");
            }
            Err(StoreError::Corrupt { path: at.path.clone(), detail: "bad".into() })
        };
        for threads in [1, 2, 8] {
            let fresh = summarize_all_with(stale(12), threads, corrupt);
            assert_eq!(fresh.len(), 12, "{threads} threads");
            for (at, _, result) in &fresh {
                let failed = result.as_ref().unwrap_err();
                assert!(failed.problem.contains(&*at.path.to_string_lossy()), "{failed:?}");
                if at.id.as_str() == "00000005" {
                    assert!(failed.problem.contains("a bug in the summariser"), "{failed:?}");
                    assert!(!failed.remembered, "a panic is not the file's fault: retried");
                } else {
                    assert!(failed.remembered);
                }
            }
        }
    }
}
