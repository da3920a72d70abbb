//! Appends that cost what they append: the session file is extended in
//! place, guarded by a rollback journal (in the spirit of SQLite's).
//!
//! A file in the store's layout ends
//! `…{last entry}⏎],"contextTokens":N}⏎`. An append overwrites that tail
//! (from the `⏎]`) with `,⏎{new entry}…⏎],"contextTokens":M}⏎` and rewrites
//! the fixed-width `updatedAt` in the header; nothing else changes. Under
//! the write lock:
//!
//! 1. write the journal `<id>.journal`: the file's inode and old length, the
//!    bytes about to be overwritten (header range and tail), the 32 bytes
//!    before the tail, the new length and a hash of the new bytes, and a
//!    checksum of all that; fdatasync it (and the folder, the first time);
//! 2. write the new header range and tail in place, truncate if shorter,
//!    fdatasync the session;
//! 3. mark the journal inactive (its first bytes zeroed; no sync needed).
//!
//! Whoever takes the write lock next runs [`recover`] first. A journal
//! whose checksum fails was cut short in step 1: the session was never
//! touched. A journal whose new bytes are all in the file describes a write
//! that finished (the kill came before step 3). Anything else is a write
//! cut short in step 2: the old bytes go back, the file is truncated to its
//! old length, and it is exactly the file before the write. So a crash at
//! any moment leaves the old file or the new one, and a session file stays
//! one JSON document any JSON parser reads.
//!
//! A full rewrite (rename over the file) first clears the journal durably
//! ([`clear`]), so a stale journal can never be applied to a file it does
//! not describe; the inode and the bytes before the tail are checked too.
//!
//! Only files in the exact layout glrs writes are appended in place: the
//! header and the trailing fields are parsed and must re-encode to the same
//! bytes, the first line break must follow `"events":[` and the last `⏎]`
//! must be followed by the trailing fields alone. Anything else (a file
//! another program pretty-printed, an empty session, a header that grows)
//! takes the full rewrite, which also restores the layout.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use serde_json::Value;

use super::Append;
use super::format::{self, Doc};
use crate::error::StoreError;

const MAGIC: &[u8; 8] = b"GLRSJNL1";
/// How much of the head and of the tail is read to find the layout: a
/// header or trailing fields larger than this take the full rewrite.
const WINDOW: usize = 64 * 1024;
/// How many bytes before the tail the journal keeps, to recognise its file.
const GUARD: usize = 32;
/// How many final bytes of the file a [`Mark`] keeps.
const MARK_TAIL: usize = 256;

/// What a writer knows of the file it last wrote or read: if the file still
/// has the same inode, length and final bytes, no other program has added
/// entries since (entries are only ever added at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The file's inode.
    pub ino: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Its final bytes.
    pub tail: Vec<u8>,
}

impl Mark {
    /// The mark of a file whose whole bytes are `bytes`.
    pub fn of_bytes(ino: u64, bytes: &[u8]) -> Mark {
        let start = bytes.len().saturating_sub(MARK_TAIL);
        Mark { ino, len: bytes.len() as u64, tail: bytes[start..].to_vec() }
    }

    /// The mark of the file at `path` now.
    pub fn of_file(path: &Path) -> io::Result<Mark> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let keep = meta.len().min(MARK_TAIL as u64);
        let mut tail = vec![0; keep as usize];
        file.read_exact_at(&mut tail, meta.len() - keep)?;
        Ok(Mark { ino: meta.ino(), len: meta.len(), tail })
    }
}

/// What an in-place append did.
#[derive(Debug)]
pub enum Outcome {
    /// Appended; the file's new mark.
    Done(Mark),
    /// The file is not in the layout, or the change needs the header to
    /// grow: the caller rewrites the file whole.
    Rewrite,
    /// The file is not what the caller's mark says: another program added
    /// entries. The caller reads it whole to merge.
    Foreign,
}

/// The layout of a file in the store's format, found from its two ends.
struct Layout {
    head: Vec<u8>,
    head_fields: Vec<(String, Value)>,
    /// Offset of the `\n]` that closes `events`.
    tail_at: u64,
    tail: Vec<u8>,
    tail_fields: Vec<(String, Value)>,
}

/// The header fields of a head (`{…,"events":[`) or tail (`\n],…}\n`),
/// encoded as glrs writes them.
fn encode_fields(fields: &[(String, Value)], lead: bool, out: &mut Vec<u8>) {
    for (i, (name, value)) in fields.iter().enumerate() {
        if lead || i > 0 {
            out.push(b',');
        }
        // Encoding a string and a Value to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, value);
    }
}

fn encode_head(fields: &[(String, Value)]) -> Vec<u8> {
    let mut out = vec![b'{'];
    encode_fields(fields, false, &mut out);
    out.extend_from_slice(if fields.is_empty() { b"\"events\":[" } else { b",\"events\":[" });
    out
}

fn encode_tail(entries: &[&str], fields: &[(String, Value)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.iter().map(|e| e.len() + 2).sum::<usize>() + 64);
    for entry in entries {
        out.extend_from_slice(b",\n");
        out.extend_from_slice(entry.as_bytes());
    }
    out.extend_from_slice(b"\n]");
    encode_fields(fields, true, &mut out);
    out.extend_from_slice(b"}\n");
    out
}

/// Find the layout of `file` (of length `len`), or `None` when it is not
/// exactly the store's layout.
fn layout(file: &File, len: u64, path: &Path) -> io::Result<Option<Layout>> {
    let mut start = vec![0; (len as usize).min(WINDOW)];
    file.read_exact_at(&mut start, 0)?;
    let Some(nl) = start.iter().position(|b| *b == b'\n') else { return Ok(None) };
    let head = &start[..nl];
    // The header alone, closed, parsed and checked like any session file.
    let mut closed = head.to_vec();
    closed.extend_from_slice(b"]}");
    let Ok(doc): Result<Doc<serde::de::IgnoredAny>, _> = format::parse(&closed, path, None) else {
        return Ok(None);
    };
    if encode_head(&doc.header) != head {
        return Ok(None);
    }
    let from = len.saturating_sub(WINDOW as u64).max(nl as u64);
    let mut end = vec![0; (len - from) as usize];
    file.read_exact_at(&mut end, from)?;
    let Some(close) = end.windows(2).rposition(|w| w == b"\n]") else { return Ok(None) };
    let tail_at = from + close as u64;
    // Events must not be empty: the last entry ends just before.
    if tail_at <= nl as u64 || tail_at == 0 {
        return Ok(None);
    }
    let mut before = [0u8; 1];
    file.read_exact_at(&mut before, tail_at - 1)?;
    if before[0] != b'}' {
        return Ok(None);
    }
    let tail = end[close..].to_vec();
    let Some(fields_text) = tail.strip_prefix(b"\n]").and_then(|t| t.strip_suffix(b"}\n")) else {
        return Ok(None);
    };
    let tail_fields: Vec<(String, Value)> = if fields_text.is_empty() {
        Vec::new()
    } else {
        let Some(inner) = fields_text.strip_prefix(b",") else { return Ok(None) };
        let mut object = b"{".to_vec();
        object.extend_from_slice(inner);
        object.push(b'}');
        match serde_json::from_slice::<serde_json::Map<String, Value>>(&object) {
            Ok(map) => map.into_iter().collect(),
            Err(_) => return Ok(None),
        }
    };
    if encode_tail(&[], &tail_fields) != tail
        || tail_fields.iter().any(|(k, _)| k == "events" || doc.header.iter().any(|(h, _)| h == k))
    {
        return Ok(None);
    }
    Ok(Some(Layout { head: head.to_vec(), head_fields: doc.header, tail_at, tail, tail_fields }))
}

/// The journal of one in-place write.
#[derive(Debug, PartialEq)]
struct Journal {
    ino: u64,
    old_len: u64,
    new_len: u64,
    head_at: u64,
    old_head: Vec<u8>,
    new_head: Vec<u8>,
    tail_at: u64,
    old_tail: Vec<u8>,
    new_tail_hash: u64,
    guard: Vec<u8>,
}

/// FNV-1a, 64 bits: stable across versions and platforms, which a journal
/// read by another glrs build needs (std's hasher promises neither).
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Journal {
    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        for n in [self.ino, self.old_len, self.new_len, self.head_at, self.tail_at, self.new_tail_hash] {
            body.extend_from_slice(&n.to_le_bytes());
        }
        for part in [&self.old_head, &self.new_head, &self.old_tail, &self.guard] {
            body.extend_from_slice(&(part.len() as u64).to_le_bytes());
            body.extend_from_slice(part);
        }
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&fnv(&body).to_le_bytes());
        out.extend_from_slice(&body);
        // Whole blocks: rewriting a journal of the same size changes no
        // metadata, so its fdatasync stays cheap.
        out.resize(out.len().next_multiple_of(4096), 0);
        out
    }

    /// `None` for an inactive, cut-short or foreign journal.
    fn decode(bytes: &[u8]) -> Option<Journal> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let len = usize::try_from(u64::from_le_bytes(rest.get(..8)?.try_into().ok()?)).ok()?;
        let sum = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?);
        let body = rest.get(16..16usize.checked_add(len)?)?;
        if fnv(body) != sum {
            return None;
        }
        let mut at = 0usize;
        let mut num = || -> Option<u64> {
            let n = u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?);
            at += 8;
            Some(n)
        };
        let (ino, old_len, new_len, head_at, tail_at, new_tail_hash) = (num()?, num()?, num()?, num()?, num()?, num()?);
        let mut part = || -> Option<Vec<u8>> {
            let n = usize::try_from(u64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?)).ok()?;
            let bytes = body.get(at + 8..(at + 8).checked_add(n)?)?.to_vec();
            at += 8 + n;
            Some(bytes)
        };
        let (old_head, new_head, old_tail, guard) = (part()?, part()?, part()?, part()?);
        Some(Journal { ino, old_len, new_len, head_at, old_head, new_head, tail_at, old_tail, new_tail_hash, guard })
    }

    /// True when every byte this write meant to put in `file` is there.
    fn finished_in(&self, file: &File, len: u64) -> io::Result<bool> {
        if len != self.new_len || self.new_len < self.tail_at {
            return Ok(false);
        }
        let mut head = vec![0; self.new_head.len()];
        file.read_exact_at(&mut head, self.head_at)?;
        if head != self.new_head {
            return Ok(false);
        }
        let mut tail = vec![0; (self.new_len - self.tail_at) as usize];
        file.read_exact_at(&mut tail, self.tail_at)?;
        Ok(fnv(&tail) == self.new_tail_hash)
    }

    /// Put the old bytes back and the old length, and sync.
    fn roll_back(&self, file: &File) -> io::Result<()> {
        file.write_all_at(&self.old_head, self.head_at)?;
        file.write_all_at(&self.old_tail, self.tail_at)?;
        file.set_len(self.old_len)?;
        file.sync_data()
    }
}

/// `O_NOFOLLOW`: a session file or journal planted as a link is never
/// written through (issue 14, item 13).
fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// Mark the journal inactive. Not synced: should that be lost, the journal
/// still describes a write that either finished (nothing to do) or was
/// rolled back (rolling back again writes the same bytes).
fn deactivate(journal: &File) -> io::Result<()> {
    journal.write_all_at(&[0; 8], 0)
}

/// Finish or undo an interrupted in-place write of `session` (call under
/// the session's write lock). Returns true when a write was rolled back.
pub fn recover(session: &Path, journal_path: &Path) -> Result<bool, StoreError> {
    let fail = |e| StoreError::io(journal_path, "recover from", e);
    let mut journal = match open_rw(journal_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(fail(e)),
    };
    let mut bytes = Vec::new();
    journal.read_to_end(&mut bytes).map_err(fail)?;
    if !bytes.starts_with(MAGIC) {
        return Ok(false);
    }
    let Some(entry) = Journal::decode(&bytes) else {
        // Cut short while being written: the session was never touched.
        deactivate(&journal).map_err(fail)?;
        return Ok(false);
    };
    let file = match open_rw(session) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            deactivate(&journal).map_err(fail)?;
            return Ok(false);
        }
        Err(e) => return Err(StoreError::io(session, "recover", e)),
    };
    let meta = file.metadata().map_err(|e| StoreError::io(session, "recover", e))?;
    let session_fail = |e| StoreError::io(session, "roll back", e);
    if meta.ino() != entry.ino || entry.finished_in(&file, meta.len()).map_err(session_fail)? {
        deactivate(&journal).map_err(fail)?;
        return Ok(false);
    }
    let guard_at = entry.tail_at - entry.guard.len() as u64;
    let mut guard = vec![0; entry.guard.len()];
    if meta.len() < entry.tail_at || file.read_exact_at(&mut guard, guard_at).is_err() || guard != entry.guard {
        return Err(StoreError::Corrupt {
            path: session.to_path_buf(),
            detail: format!(
                "an interrupted write left {} but the session no longer matches it; move that journal away to use the file as it is",
                journal_path.display()
            ),
        });
    }
    entry.roll_back(&file).map_err(session_fail)?;
    deactivate(&journal).map_err(fail)?;
    Ok(true)
}

/// Before a full rewrite: make sure no journal can later be applied to the
/// new file (call under the write lock, after [`recover`]).
pub fn clear(journal_path: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(journal_path) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(()),
    }
    let journal = open_rw(journal_path).map_err(|e| StoreError::io(journal_path, "clear", e))?;
    journal.set_len(0).and_then(|()| journal.sync_data()).map_err(|e| StoreError::io(journal_path, "clear", e))
}

/// True when `journal_path` holds an active journal: a write is under way,
/// or one was interrupted.
pub fn is_active(journal_path: &Path) -> bool {
    let mut magic = [0u8; 8];
    File::open(journal_path).and_then(|f| f.read_exact_at(&mut magic, 0)).is_ok() && &magic == MAGIC
}

/// A point at which a test stops an in-place write, as a kill would.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum StopAt {
    Never,
    JournalHalfWritten,
    TailHalfWritten,
    BeforeDeactivate,
}

/// Append `change` to `session` in place (call under the write lock, after
/// [`recover`]). `since`: the caller's mark, checked first.
pub fn append(
    session: &Path,
    journal_path: &Path,
    change: &Append,
    since: Option<&Mark>,
    now: &str,
) -> Result<Outcome, StoreError> {
    append_stopping(session, journal_path, change, since, now, StopAt::Never)
}

pub(crate) fn append_stopping(
    session: &Path,
    journal_path: &Path,
    change: &Append,
    since: Option<&Mark>,
    now: &str,
    stop: StopAt,
) -> Result<Outcome, StoreError> {
    let fail = |e| StoreError::io(session, "write", e);
    let file = match open_rw(session) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Outcome::Rewrite),
        Err(e) => return Err(fail(e)),
    };
    let meta = file.metadata().map_err(fail)?;
    let len = meta.len();
    if let Some(mark) = since {
        let mut tail = vec![0; mark.tail.len()];
        let from = len.saturating_sub(mark.tail.len() as u64);
        let same = mark.ino == meta.ino()
            && mark.len == len
            && file.read_exact_at(&mut tail, from).is_ok()
            && tail == mark.tail;
        if !same {
            return Ok(Outcome::Foreign);
        }
    }
    let Some(layout) = layout(&file, len, session).map_err(fail)? else { return Ok(Outcome::Rewrite) };

    // The change, applied to the header and trailing fields. A field the
    // file does not have yet (or a first title) would grow the header.
    let (mut head_fields, mut tail_fields) = (layout.head_fields.clone(), layout.tail_fields.clone());
    let mut set = |name: &str, value: Value| -> bool {
        for fields in [&mut head_fields, &mut tail_fields] {
            if let Some(slot) = fields.iter_mut().find(|(k, _)| k == name) {
                slot.1 = value;
                return true;
            }
        }
        false
    };
    for (name, value) in &change.header {
        if !set(name, value.clone()) {
            return Ok(Outcome::Rewrite);
        }
    }
    if !set("updatedAt", Value::from(now)) {
        return Ok(Outcome::Rewrite);
    }
    let untitled =
        layout.head_fields.iter().find(|(k, _)| k == "title").and_then(|(_, v)| v.as_str()).is_none_or(str::is_empty);
    if change.title.is_some() && untitled {
        return Ok(Outcome::Rewrite);
    }
    let new_head = encode_head(&head_fields);
    if new_head.len() != layout.head.len() {
        return Ok(Outcome::Rewrite);
    }
    let entries: Vec<&str> = change.entries.iter().map(|e| e.get()).collect();
    let new_tail = encode_tail(&entries, &tail_fields);
    // Only the changed range of the header is journalled and written.
    let first = new_head.iter().zip(&layout.head).position(|(a, b)| a != b).unwrap_or(new_head.len());
    let last = new_head.iter().zip(&layout.head).rposition(|(a, b)| a != b).map_or(first, |i| i + 1);
    let guard_len = (layout.tail_at as usize).min(GUARD);
    let mut guard = vec![0; guard_len];
    file.read_exact_at(&mut guard, layout.tail_at - guard_len as u64).map_err(fail)?;
    let journal = Journal {
        ino: meta.ino(),
        old_len: len,
        new_len: layout.tail_at + new_tail.len() as u64,
        head_at: first as u64,
        old_head: layout.head[first..last].to_vec(),
        new_head: new_head[first..last].to_vec(),
        tail_at: layout.tail_at,
        old_tail: layout.tail.clone(),
        new_tail_hash: fnv(&new_tail),
        guard,
    };

    // 1. The journal, durable before the session is touched.
    let jfail = |e| StoreError::io(journal_path, "write", e);
    let existed = journal_path.exists();
    let jfile = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(journal_path)
        .map_err(jfail)?;
    let encoded = journal.encode();
    if stop == StopAt::JournalHalfWritten {
        // Cut inside the checksummed part, as a kill during the write would.
        jfile.write_all_at(&encoded[..40], 0).map_err(jfail)?;
        return Ok(Outcome::Rewrite);
    }
    jfile.write_all_at(&encoded, 0).and_then(|()| jfile.sync_data()).map_err(jfail)?;
    if !existed && super::lock::sync_folder(journal_path.parent().unwrap_or(Path::new("."))).is_err() {
        // Its name must survive a power cut as well as its bytes. Without
        // that, the session (still untouched) is rewritten whole instead,
        // where a failed folder sync is only a warning.
        deactivate(&jfile).map_err(jfail)?;
        return Ok(Outcome::Rewrite);
    }

    // 2. The new bytes in place. A failure puts the old ones back at once;
    // if even that fails, the journal stays for the next lock holder.
    if stop == StopAt::TailHalfWritten {
        file.write_all_at(&new_head[first..last], first as u64).map_err(fail)?;
        file.write_all_at(&new_tail[..new_tail.len() / 2], layout.tail_at).map_err(fail)?;
        return Ok(Outcome::Rewrite);
    }
    let written = file
        .write_all_at(&new_head[first..last], first as u64)
        .and_then(|()| file.write_all_at(&new_tail, layout.tail_at))
        .and_then(|()| if journal.new_len < len { file.set_len(journal.new_len) } else { Ok(()) })
        .and_then(|()| file.sync_data());
    if let Err(e) = written {
        if journal.roll_back(&file).is_ok() {
            let _ = deactivate(&jfile);
        }
        return Err(fail(e));
    }
    if stop == StopAt::BeforeDeactivate {
        return Ok(Outcome::Rewrite);
    }
    // 3. Done: the journal is no longer needed.
    deactivate(&jfile).map_err(jfail)?;
    let keep = journal.new_len.min(MARK_TAIL as u64);
    let mut tail = vec![0; keep as usize];
    file.read_exact_at(&mut tail, journal.new_len - keep).map_err(fail)?;
    Ok(Outcome::Done(Mark { ino: meta.ino(), len: journal.new_len, tail }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Entry, SessionFile};
    use std::path::PathBuf;

    const NOW: &str = "2026-11-30T08:00:00.000Z";

    fn notice(text: &str) -> Entry {
        Entry::Notice { at: NOW.into(), text: text.into() }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        path: PathBuf,
        journal: PathBuf,
        file: SessionFile,
    }

    /// A session file in the store's layout with `n` entries.
    fn session(n: usize) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3f9a1c2b.json");
        let journal = dir.path().join("3f9a1c2b.journal");
        let mut file = SessionFile::new("3f9a1c2b", "/w", "2026-11-29T15:24:19.412Z");
        file.set("model", Value::from("openai/gpt-4.1"));
        for i in 0..n {
            file.events.push(notice(&format!("entry {i}")).to_raw().unwrap());
        }
        std::fs::write(&path, file.to_bytes()).unwrap();
        Fixture { _dir: dir, path, journal, file }
    }

    fn change(texts: &[&str], tokens: u64) -> Append {
        let mut change = Append::new().set("contextTokens", tokens);
        for t in texts {
            change = change.entry(&notice(t)).unwrap();
        }
        change
    }

    /// What a full rewrite of the same change would write.
    fn rewritten(f: &Fixture, texts: &[&str], tokens: u64) -> Vec<u8> {
        let mut file = f.file.clone();
        change(texts, tokens).apply(&mut file);
        file.set("updatedAt", Value::from(NOW));
        file.to_bytes()
    }

    fn run(f: &Fixture, texts: &[&str], tokens: u64, stop: StopAt) -> Outcome {
        append_stopping(&f.path, &f.journal, &change(texts, tokens), None, NOW, stop).unwrap()
    }

    #[test]
    fn an_append_in_place_writes_what_a_rewrite_would() {
        let f = session(3);
        let before = std::fs::metadata(&f.path).unwrap().ino();
        let Outcome::Done(mark) = run(&f, &["new one", "new two"], 1234, StopAt::Never) else { panic!("in place") };
        let bytes = std::fs::read(&f.path).unwrap();
        assert_eq!(bytes, rewritten(&f, &["new one", "new two"], 1234));
        assert_eq!(std::fs::metadata(&f.path).unwrap().ino(), before);
        assert_eq!(mark, Mark::of_bytes(before, &bytes));
        assert!(!is_active(&f.journal), "the journal is inactive after the write");
        // A shorter tail (fewer digits, no entries) truncates.
        assert!(matches!(run(&f, &[], 7, StopAt::Never), Outcome::Done(_)));
        let again: Value = serde_json::from_slice(&std::fs::read(&f.path).unwrap()).unwrap();
        assert_eq!(again["contextTokens"], 7);
        assert_eq!(again["events"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn a_write_stopped_at_any_point_recovers_to_the_old_or_the_new_file() {
        for stop in [StopAt::JournalHalfWritten, StopAt::TailHalfWritten, StopAt::BeforeDeactivate] {
            let f = session(2);
            let old = std::fs::read(&f.path).unwrap();
            let new = rewritten(&f, &[&"x".repeat(10_000)], 99);
            run(&f, &[&"x".repeat(10_000)], 99, stop);
            let rolled_back = recover(&f.path, &f.journal).unwrap();
            let now = std::fs::read(&f.path).unwrap();
            match stop {
                StopAt::BeforeDeactivate => assert!(now == new && !rolled_back, "{stop:?}: the write finished"),
                _ => assert!(now == old, "{stop:?}: rolled back to the old file"),
            }
            assert_eq!(rolled_back, stop == StopAt::TailHalfWritten, "{stop:?}");
            assert!(!is_active(&f.journal));
            // Recovering again changes nothing; the next append works.
            assert!(!recover(&f.path, &f.journal).unwrap());
            assert!(matches!(run(&f, &["after"], 1, StopAt::Never), Outcome::Done(_)));
            serde_json::from_slice::<Value>(&std::fs::read(&f.path).unwrap()).unwrap();
        }
    }

    #[test]
    fn a_journal_is_never_applied_to_a_file_it_does_not_describe() {
        let f = session(2);
        run(&f, &["cut"], 5, StopAt::TailHalfWritten);
        // The file replaced by a rename (another inode): the journal is stale.
        let replacement = f.file.to_bytes();
        let tmp = f.path.with_extension("tmp");
        std::fs::write(&tmp, &replacement).unwrap();
        std::fs::rename(&tmp, &f.path).unwrap();
        assert!(!recover(&f.path, &f.journal).unwrap());
        assert_eq!(std::fs::read(&f.path).unwrap(), replacement);
        // A cleared journal is nothing to recover.
        run(&f, &["cut"], 5, StopAt::TailHalfWritten);
        clear(&f.journal).unwrap();
        assert!(!recover(&f.path, &f.journal).unwrap());
        assert_eq!(std::fs::metadata(&f.journal).unwrap().len(), 0);
    }

    #[test]
    fn files_not_in_the_layout_are_rewritten_whole() {
        let f = session(0);
        assert!(matches!(run(&f, &["first"], 1, StopAt::Never), Outcome::Rewrite), "no entries yet");
        let f = session(2);
        let pretty = serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&f.file.to_bytes()).unwrap()).unwrap();
        std::fs::write(&f.path, pretty).unwrap();
        assert!(matches!(run(&f, &["x"], 1, StopAt::Never), Outcome::Rewrite), "pretty-printed");
        let f = session(2);
        let grows = Append::new().set("key", "work").entry(&notice("x")).unwrap();
        let out = append_stopping(&f.path, &f.journal, &grows, None, NOW, StopAt::Never).unwrap();
        assert!(matches!(out, Outcome::Rewrite), "a new header field");
        let titled = Append::new().entry(&Entry::User { at: NOW.into(), text: "hi".into(), steer: false }).unwrap();
        let out = append_stopping(&f.path, &f.journal, &titled, None, NOW, StopAt::Never).unwrap();
        assert!(matches!(out, Outcome::Rewrite), "a first title");
        assert_eq!(std::fs::read(&f.path).unwrap(), f.file.to_bytes(), "untouched");
    }

    #[test]
    fn a_stale_mark_is_foreign() {
        let f = session(2);
        let Outcome::Done(mark) = run(&f, &["mine"], 1, StopAt::Never) else { panic!() };
        run(&f, &["theirs"], 2, StopAt::Never);
        let out = append_stopping(&f.path, &f.journal, &change(&["mine again"], 3), Some(&mark), NOW, StopAt::Never);
        assert!(matches!(out.unwrap(), Outcome::Foreign));
    }

    #[test]
    fn journals_round_trip_and_reject_damage() {
        let j = Journal {
            ino: 7,
            old_len: 100,
            new_len: 120,
            head_at: 40,
            old_head: b"2026-11-29".to_vec(),
            new_head: b"2026-11-30".to_vec(),
            tail_at: 80,
            old_tail: b"\n],\"contextTokens\":1}\n".to_vec(),
            new_tail_hash: 42,
            guard: b"}".to_vec(),
        };
        let bytes = j.encode();
        assert_eq!(bytes.len() % 4096, 0);
        assert_eq!(Journal::decode(&bytes), Some(j));
        for cut in [0, 8, 20, 60] {
            assert_eq!(Journal::decode(&bytes[..cut]), None);
        }
        let mut flipped = bytes.clone();
        flipped[30] ^= 1;
        assert_eq!(Journal::decode(&flipped), None);
    }
}
