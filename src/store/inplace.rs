//! Appends that cost what they append: the session file is extended in
//! place, its new bytes committed first in the write-ahead journal (see
//! [`super::journal`], which also gives the argument for why a crash at any
//! moment leaves the last committed file).
//!
//! A file in the store's layout (see [`super::layout`]) ends
//! `…{last entry}⏎],"contextTokens":N}⏎`. An append overwrites that tail
//! (from the `⏎]`) with `,⏎{new entry}…⏎],"contextTokens":M}⏎` and rewrites
//! the fixed-width `updatedAt` in the header; nothing else changes. Under
//! the write lock, after [`super::journal::recover`]:
//!
//! 1. when the journal has grown past a few dozen kilobytes, checkpoint:
//!    fdatasync the session, empty the journal;
//! 2. append a record (the session's inode, the new header range and tail
//!    with their offsets, the new length) to the journal and fdatasync it
//!    (and the folder, when the journal was just created): the append is
//!    committed;
//! 3. write the new header range and tail in place, truncate if shorter.
//!    Not synced: the journal holds the bytes until the next checkpoint.
//!
//! One sync per append, of a small file, as appending to any log costs.
//!
//! Only files in the exact layout glrs writes are appended in place.
//! Anything else (a file another program pretty-printed, an empty session,
//! a header that grows) takes the full rewrite, which also restores the
//! layout.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use serde_json::Value;

use super::Append;
use super::journal::{self, State};
use super::layout::{self, Layout};
use super::tail;
use crate::error::StoreError;

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
        Mark::of_open(&file, meta.ino(), meta.len())
    }

    fn of_open(file: &File, ino: u64, len: u64) -> io::Result<Mark> {
        let keep = len.min(MARK_TAIL as u64);
        let mut tail = vec![0; keep as usize];
        file.read_exact_at(&mut tail, len - keep)?;
        Ok(Mark { ino, len, tail })
    }

    /// True when `file` (inode `ino`, length `len`) is still what this mark
    /// says.
    fn holds(&self, file: &File, ino: u64, len: u64) -> bool {
        let mut tail = vec![0; self.tail.len()];
        self.ino == ino
            && self.len == len
            && file.read_exact_at(&mut tail, len.saturating_sub(self.tail.len() as u64)).is_ok()
            && tail == self.tail
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
    /// entries. The caller reads it to merge.
    Foreign,
}

/// A point at which a test stops an in-place write, as a kill would.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum StopAt {
    Never,
    /// Half the journal record written: the append never happened.
    RecordHalfWritten,
    /// The record committed, the session not touched yet.
    AfterRecord,
    /// The record committed, half the new tail written in place.
    TailHalfWritten,
}

/// Append `change` to `session` in place (call under the write lock, with
/// the `state` [`journal::recover`] returned). `since`: the caller's mark,
/// checked first. On [`Outcome::Foreign`] and [`Outcome::Rewrite`] found
/// before the journal is touched, `state` is left as it was, for another
/// call under the same lock.
pub fn append(
    session: &Path,
    journal_path: &Path,
    state: &mut State,
    change: &Append,
    since: Option<&Mark>,
    now: &str,
) -> Result<Outcome, StoreError> {
    append_stopping(session, journal_path, state, change, since, now, StopAt::Never)
}

/// The header and trailing fields with `change` and `updatedAt` applied,
/// or `None` when that would grow the header (a field the file does not
/// have yet, or a first title).
/// A new header line and trailing fields.
type Fields = (Vec<u8>, Vec<(String, Value)>);

fn apply_fields(layout: &Layout, change: &Append, now: &str) -> Option<Fields> {
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
            return None;
        }
    }
    if !set("updatedAt", Value::from(now)) {
        return None;
    }
    let untitled =
        layout.head_fields.iter().find(|(k, _)| k == "title").and_then(|(_, v)| v.as_str()).is_none_or(str::is_empty);
    if change.title.is_some() && untitled {
        return None;
    }
    let new_head = layout::encode_head(&head_fields);
    (new_head.len() == layout.head.len()).then_some((new_head, tail_fields))
}

pub(crate) fn append_stopping(
    session: &Path,
    journal_path: &Path,
    state: &mut State,
    change: &Append,
    since: Option<&Mark>,
    now: &str,
    stop: StopAt,
) -> Result<Outcome, StoreError> {
    let fail = |e| StoreError::io(session, "write", e);
    let file = match journal::open_rw(session) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Outcome::Rewrite),
        Err(e) => return Err(fail(e)),
    };
    let meta = file.metadata().map_err(fail)?;
    let (ino, len) = (meta.ino(), meta.len());
    if since.is_some_and(|mark| !mark.holds(&file, ino, len)) {
        return Ok(Outcome::Foreign);
    }
    let Some(layout) = layout::find(&file, len, session).map_err(fail)? else { return Ok(Outcome::Rewrite) };
    let Some((new_head, tail_fields)) = apply_fields(&layout, change, now) else { return Ok(Outcome::Rewrite) };
    // The new tail is never held: its entries are serialized straight into
    // the journal and then the session (and once before, to count them).
    let end = layout::encode_tail(&[], &tail_fields);
    let tail = |out: &mut dyn io::Write| tail::write_tail(out, &change.entries, &end);
    let tail_len = tail::measure(tail).map_err(fail)?;
    // Only the changed range of the header is journalled and written.
    let first = new_head.iter().zip(&layout.head).position(|(a, b)| a != b).unwrap_or(new_head.len());
    let last = new_head.iter().zip(&layout.head).rposition(|(a, b)| a != b).map_or(first, |i| i + 1);

    // 1. A checkpoint when the journal has grown.
    let jfail = |e| StoreError::io(journal_path, "write", e);
    let existed = state.exists;
    let jfile = match state.file.take() {
        Some(file) => file,
        None => journal::create(journal_path).map_err(jfail)?,
    };
    if state.end > journal::CHECKPOINT_BYTES {
        journal::checkpoint(&file, &jfile, state).map_err(fail)?;
    }
    // The first record of a chain keeps the bytes before its tail.
    let guard = if state.end == 0 {
        let n = (layout.tail_at as usize).min(journal::GUARD);
        let mut guard = vec![0; n];
        file.read_exact_at(&mut guard, layout.tail_at - n as u64).map_err(fail)?;
        guard
    } else {
        Vec::new()
    };
    let record = journal::Streamed {
        ino,
        head_at: first as u64,
        head: &new_head[first..last],
        tail_at: layout.tail_at,
        tail_len,
        guard: &guard,
    };
    let new_len = layout.tail_at + tail_len;

    // 2. The record, durable before the session is touched.
    if stop == StopAt::RecordHalfWritten {
        record.write(&jfile, state.end, state.sum, Some(record.len() / 2), tail).map_err(jfail)?;
        return Ok(Outcome::Rewrite);
    }
    let undo_record = |jfile: &File| jfile.set_len(state.end).and_then(|()| jfile.sync_data());
    if let Err(e) = record.write(&jfile, state.end, state.sum, None, tail).and_then(|_| jfile.sync_data()) {
        // Not committed: whatever part of the record reached the disk
        // goes, so it can never be applied.
        let _ = undo_record(&jfile);
        return Err(jfail(e));
    }
    if !existed && super::lock::sync_folder(journal_path.parent().unwrap_or(Path::new("."))).is_err() {
        // Its name must survive a power cut as well as its bytes. Without
        // that, the session (still untouched) is rewritten whole instead,
        // where a failed folder sync is only a warning.
        undo_record(&jfile).map_err(jfail)?;
        return Ok(Outcome::Rewrite);
    }
    if stop == StopAt::AfterRecord {
        return Ok(Outcome::Rewrite);
    }

    // 3. The new bytes in place, not synced.
    if stop == StopAt::TailHalfWritten {
        tail::write_at(&file, record.tail_at, Some(tail_len / 2), tail).map_err(fail)?;
        return Ok(Outcome::Rewrite);
    }
    let written = file
        .write_all_at(record.head, record.head_at)
        .and_then(|()| tail::write_at(&file, record.tail_at, None, tail))
        .and_then(|()| if new_len < len { file.set_len(new_len) } else { Ok(()) });
    if let Err(e) = written {
        // The write failed (a full disk): the append is taken back, the old
        // bytes first, then the record, so the journal never commits what
        // the caller is told failed.
        let restored = file
            .write_all_at(&layout.head[first..last], first as u64)
            .and_then(|()| file.write_all_at(&layout.tail, layout.tail_at))
            .and_then(|()| file.set_len(len));
        if restored.is_ok() {
            let _ = undo_record(&jfile);
        }
        return Err(fail(e));
    }
    let mark = Mark::of_open(&file, ino, new_len).map_err(fail)?;
    Ok(Outcome::Done(mark))
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

    impl Fixture {
        /// The file as a full rewrite would write it after `changes`.
        fn rewritten(&mut self, texts: &[&str], tokens: u64) -> Vec<u8> {
            change(texts, tokens).apply(&mut self.file).unwrap();
            self.file.set("updatedAt", Value::from(NOW));
            self.file.to_bytes()
        }

        /// Recover, then append (as [`super::super::Store::append`] does).
        fn run(&self, texts: &[&str], tokens: u64, stop: StopAt) -> Outcome {
            let (mut state, _) = journal::recover(&self.path, &self.journal).unwrap();
            append_stopping(&self.path, &self.journal, &mut state, &change(texts, tokens), None, NOW, stop).unwrap()
        }

        fn recover(&self) -> bool {
            journal::recover(&self.path, &self.journal).unwrap().1
        }

        fn bytes(&self) -> Vec<u8> {
            std::fs::read(&self.path).unwrap()
        }
    }

    #[test]
    fn an_append_in_place_writes_what_a_rewrite_would() {
        let mut f = session(3);
        let before = std::fs::metadata(&f.path).unwrap().ino();
        let Outcome::Done(mark) = f.run(&["new one", "new two"], 1234, StopAt::Never) else { panic!("in place") };
        assert_eq!(f.bytes(), f.rewritten(&["new one", "new two"], 1234));
        assert_eq!(std::fs::metadata(&f.path).unwrap().ino(), before);
        assert_eq!(mark, Mark::of_bytes(before, &f.bytes()));
        assert!(journal::is_active(&f.journal), "committed in the journal until a checkpoint");
        assert!(!f.recover(), "nothing to redo");
        // A shorter tail (fewer digits, no entries) truncates.
        assert!(matches!(f.run(&[], 7, StopAt::Never), Outcome::Done(_)));
        assert_eq!(f.bytes(), f.rewritten(&[], 7));
        let again: Value = serde_json::from_slice(&f.bytes()).unwrap();
        assert_eq!(again["events"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn a_write_stopped_at_any_point_recovers_to_the_old_or_the_new_file() {
        for stop in [StopAt::RecordHalfWritten, StopAt::AfterRecord, StopAt::TailHalfWritten] {
            let mut f = session(2);
            // One committed append first, so the stopped one is not the
            // journal's first record.
            f.run(&["before"], 5, StopAt::Never);
            let old = f.rewritten(&["before"], 5);
            let big = "x".repeat(10_000);
            f.run(&[big.as_str()], 99, stop);
            let redone = f.recover();
            if stop == StopAt::RecordHalfWritten {
                assert!(f.bytes() == old && !redone, "{stop:?}: the append never happened");
            } else {
                assert!(f.bytes() == f.rewritten(&[big.as_str()], 99) && redone, "{stop:?}: committed, so redone");
            }
            // Recovering again changes nothing; the next append works.
            assert!(!f.recover());
            assert!(matches!(f.run(&["after"], 1, StopAt::Never), Outcome::Done(_)));
            assert_eq!(f.bytes(), f.rewritten(&["after"], 1));
        }
    }

    #[test]
    fn a_power_cut_that_lost_unsynced_pages_in_any_order_is_redone() {
        let mut f = session(2);
        let synced = f.bytes();
        let texts: Vec<String> = (0..4).map(|i| format!("{i}{}", "y".repeat(3000))).collect();
        for (i, t) in texts.iter().enumerate() {
            f.run(&[t.as_str()], i as u64, StopAt::Never);
            f.rewritten(&[t.as_str()], i as u64);
        }
        let whole = f.bytes();
        assert_eq!(whole, f.file.to_bytes());
        // The disk kept the last checkpoint's bytes and some later pages:
        // here the last 4 KiB at the new length, and the old header.
        let mut cut = synced.clone();
        cut.resize(whole.len(), 0);
        let from = whole.len() - 4096;
        cut[from..].copy_from_slice(&whole[from..]);
        std::fs::write(&f.path, &cut).unwrap();
        assert!(serde_json::from_slice::<Value>(&cut).is_err());
        assert!(f.recover());
        assert_eq!(f.bytes(), whole, "every committed append is back");
        // Or the disk kept nothing after the checkpoint: the file parses,
        // but misses the committed appends until recovered.
        std::fs::write(&f.path, &synced).unwrap();
        assert!(f.recover());
        assert_eq!(f.bytes(), whole);
    }

    #[test]
    fn a_checkpoint_empties_the_journal_and_stale_records_are_never_applied() {
        let mut f = session(1);
        let big = "z".repeat(20_000);
        let journal_len = |f: &Fixture| std::fs::metadata(&f.journal).map_or(0, |m| m.len());
        let mut i = 0;
        while journal_len(&f) <= journal::CHECKPOINT_BYTES {
            f.run(&[big.as_str()], i, StopAt::Never);
            f.rewritten(&[big.as_str()], i);
            i += 1;
        }
        // The next append checkpoints first: the journal starts again.
        let old_chain = std::fs::read(&f.journal).unwrap();
        f.run(&["small"], 99, StopAt::Never);
        let expected = f.rewritten(&["small"], 99);
        let new_chain = std::fs::read(&f.journal).unwrap();
        assert!(new_chain.len() < 1024, "checkpointed: {} bytes", new_chain.len());
        assert_eq!(f.bytes(), expected);
        // A power cut lost the emptying but kept the new record: the old
        // chain's bytes follow it. They do not chain to it.
        let mut mixed = new_chain.clone();
        mixed.extend_from_slice(&old_chain[new_chain.len()..]);
        std::fs::write(&f.journal, &mixed).unwrap();
        assert!(!f.recover());
        assert_eq!(f.bytes(), expected);
        assert_eq!(std::fs::read(&f.journal).unwrap(), new_chain, "the stale bytes are trimmed");
    }

    #[test]
    fn a_journal_is_never_applied_to_a_file_it_does_not_describe() {
        let f = session(2);
        f.run(&["cut"], 5, StopAt::AfterRecord);
        // The file replaced by a rename (another inode): the journal is stale.
        let replacement = f.file.to_bytes();
        let tmp = f.path.with_extension("tmp");
        std::fs::write(&tmp, &replacement).unwrap();
        std::fs::rename(&tmp, &f.path).unwrap();
        assert!(!f.recover());
        assert_eq!(f.bytes(), replacement);
        assert!(!journal::is_active(&f.journal), "emptied");
        // A cleared journal is nothing to recover.
        f.run(&["cut"], 5, StopAt::AfterRecord);
        journal::clear(&f.path, &f.journal).unwrap();
        assert!(!f.recover());
        assert_eq!(f.bytes(), replacement);
        assert_eq!(std::fs::metadata(&f.journal).unwrap().len(), 0);
        // The same inode, changed before the journal's first tail: refused.
        f.run(&["cut"], 5, StopAt::AfterRecord);
        let mut bytes = f.bytes();
        let at = bytes.len() - 40;
        bytes[at] = b' ';
        std::fs::OpenOptions::new().write(true).open(&f.path).unwrap().write_all_at(&bytes, 0).unwrap();
        let err = journal::recover(&f.path, &f.journal).unwrap_err();
        assert!(err.to_string().contains("move that journal away"), "{err}");
    }

    #[test]
    fn files_not_in_the_layout_are_rewritten_whole() {
        let f = session(0);
        assert!(matches!(f.run(&["first"], 1, StopAt::Never), Outcome::Rewrite), "no entries yet");
        let f = session(2);
        let pretty = serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&f.file.to_bytes()).unwrap()).unwrap();
        std::fs::write(&f.path, pretty).unwrap();
        assert!(matches!(f.run(&["x"], 1, StopAt::Never), Outcome::Rewrite), "pretty-printed");
        let f = session(2);
        let state = || journal::recover(&f.path, &f.journal).unwrap().0;
        let grows = Append::new().set("key", "work").entry(&notice("x")).unwrap();
        let out = append_stopping(&f.path, &f.journal, &mut state(), &grows, None, NOW, StopAt::Never).unwrap();
        assert!(matches!(out, Outcome::Rewrite), "a new header field");
        let titled = Append::new().entry(&Entry::User { at: NOW.into(), text: "hi".into(), steer: false }).unwrap();
        let out = append_stopping(&f.path, &f.journal, &mut state(), &titled, None, NOW, StopAt::Never).unwrap();
        assert!(matches!(out, Outcome::Rewrite), "a first title");
        assert_eq!(f.bytes(), f.file.to_bytes(), "untouched");
    }

    #[test]
    fn a_stale_mark_is_foreign() {
        let f = session(2);
        let Outcome::Done(mark) = f.run(&["mine"], 1, StopAt::Never) else { panic!() };
        f.run(&["theirs"], 2, StopAt::Never);
        let (mut state, _) = journal::recover(&f.path, &f.journal).unwrap();
        let out = append_stopping(
            &f.path,
            &f.journal,
            &mut state,
            &change(&["mine again"], 3),
            Some(&mark),
            NOW,
            StopAt::Never,
        );
        assert!(matches!(out.unwrap(), Outcome::Foreign));
    }
}
