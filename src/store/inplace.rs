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
//! A failure after step 2 (a full disk) is taken back when it can be: the
//! old bytes, then the record. A record that cannot be taken back stays
//! committed, and the next recovery completes the append: so it is
//! reported done, with a warning ([`Outcome::Committed`]), never as a
//! failure the caller would answer by writing the entries again.
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

    /// A mark no file holds: the writer does not know the file's bytes
    /// (its last append is committed in the journal, not yet in the file),
    /// so its next append reads what is there first.
    pub fn unknown() -> Mark {
        Mark { ino: 0, len: u64::MAX, tail: Vec::new() }
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
    /// Committed, with a warning: the journal holds the append, so it
    /// stands (the next [`journal::recover`] completes it, and the caller
    /// must not write its entries again), but something after the commit
    /// failed and could not be taken back. The mark is the file's, or
    /// [`Mark::unknown`] when the new bytes are not in it yet.
    Committed {
        /// What the writer knows of the file now.
        mark: Mark,
        /// What failed, to tell the user.
        warning: String,
    },
    /// The file is not in the layout, or the change needs the header to
    /// grow: the caller rewrites the file whole.
    Rewrite,
    /// The file is not what the caller's mark says: another program added
    /// entries. The caller reads it to merge.
    Foreign,
}

/// A point at which a test stops an in-place write, as a kill would, or
/// makes a step fail, as a full or failing disk would.
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
    /// The journal's sync fails, and so does taking the record back.
    SyncAndUndoFail,
    /// The in-place write fails halfway; taking the append back works.
    WriteFails,
    /// The in-place write fails, and so does putting the old bytes back.
    WriteAndRestoreFail,
    /// The in-place write fails, the old bytes go back, but the record
    /// cannot be taken out of the journal.
    WriteAndUndoFail,
}

#[cfg(test)]
thread_local! {
    /// The fault [`append`] injects on this thread: how a test of a caller
    /// (the [`super::Store`]) reaches [`append_stopping`].
    pub(crate) static INJECT: std::cell::Cell<StopAt> = const { std::cell::Cell::new(StopAt::Never) };
}

/// A failure a test injects.
fn injected() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOSPC)
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
    #[cfg(test)]
    let stop = INJECT.with(std::cell::Cell::get);
    #[cfg(not(test))]
    let stop = StopAt::Never;
    append_stopping(session, journal_path, state, change, since, now, stop)
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
    // Taking the record back: the journal cut where it began. Once the cut
    // is made no later reader sees the record; its sync is best effort (a
    // power cut that undid it would also end the caller that could write
    // the entries again: replayed, they are there once). When the cut
    // fails the record stays, and the next recovery applies it: the append
    // is committed, whatever failed after the record was whole.
    let undo = |jfile: &File, fault: bool| -> io::Result<()> {
        if fault {
            return Err(injected());
        }
        jfile.set_len(state.end)?;
        let _ = jfile.sync_data();
        Ok(())
    };
    if let Err(e) = record.write(&jfile, state.end, state.sum, None, tail) {
        // Not whole (its checksum goes in last): never committed. What
        // reached the disk goes, or recovery trims it.
        let _ = undo(&jfile, false);
        return Err(jfail(e));
    }
    let mut warning = None;
    let synced = if stop == StopAt::SyncAndUndoFail { Err(injected()) } else { jfile.sync_data() };
    if let Err(e) = synced {
        match undo(&jfile, stop == StopAt::SyncAndUndoFail) {
            Ok(()) => return Err(jfail(e)),
            Err(_) => {
                let journal = journal_path.display();
                warning = Some(format!("its journal {journal} could not be synced ({e}): a power cut could lose it"));
            }
        }
    }
    if !existed && let Err(e) = super::lock::sync_folder(journal_path.parent().unwrap_or(Path::new("."))) {
        // Its name must survive a power cut as well as its bytes. Without
        // that, the session (still untouched) is rewritten whole instead,
        // where a failed folder sync is only a warning.
        if undo(&jfile, false).is_ok() {
            return Ok(Outcome::Rewrite);
        }
        warning = Some(format!("{}: a power cut could lose this append", e.report()));
    }
    if stop == StopAt::AfterRecord {
        return Ok(Outcome::Rewrite);
    }

    // 3. The new bytes in place, not synced.
    if stop == StopAt::TailHalfWritten {
        tail::write_at(&file, record.tail_at, Some(tail_len / 2), tail).map_err(fail)?;
        return Ok(Outcome::Rewrite);
    }
    let fails = matches!(stop, StopAt::WriteFails | StopAt::WriteAndRestoreFail | StopAt::WriteAndUndoFail);
    let written = file
        .write_all_at(record.head, record.head_at)
        .and_then(|()| tail::write_at(&file, record.tail_at, fails.then_some(tail_len / 2), tail))
        .and_then(|()| if fails { Err(injected()) } else { Ok(()) })
        .and_then(|()| if new_len < len { file.set_len(new_len) } else { Ok(()) });
    if let Err(e) = written {
        // The write failed (a full disk): the append is taken back, the old
        // bytes first, then the record, so the journal never commits what
        // the caller is told failed.
        let restored = if stop == StopAt::WriteAndRestoreFail {
            Err(injected())
        } else {
            file.write_all_at(&layout.head[first..last], first as u64)
                .and_then(|()| file.write_all_at(&layout.tail, layout.tail_at))
                .and_then(|()| file.set_len(len))
        };
        let Err(stuck) = restored.and_then(|()| undo(&jfile, stop == StopAt::WriteAndUndoFail)) else {
            return Err(fail(e));
        };
        // The record stays: the append is committed, and recovery (by the
        // next writer, or a reader that finds the file incomplete) writes
        // it. The caller is told so, and that its mark is unknown.
        let warning = format!(
            "its new entries could not be written into {} ({e}), nor taken back ({stuck}); its journal {} \
             holds them, and they are written in when the session is next read or written",
            session.display(),
            journal_path.display()
        );
        return Ok(Outcome::Committed { mark: Mark::unknown(), warning });
    }
    // Committed and written: from here on nothing is an error.
    Ok(match (Mark::of_open(&file, ino, new_len), warning) {
        (Ok(mark), None) => Outcome::Done(mark),
        (Ok(mark), Some(warning)) => Outcome::Committed { mark, warning },
        (Err(e), warning) => Outcome::Committed {
            mark: Mark::unknown(),
            warning: warning.unwrap_or_else(|| format!("{} could not be read back ({e})", session.display())),
        },
    })
}

#[cfg(test)]
mod tests;
