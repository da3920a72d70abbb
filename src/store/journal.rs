//! The write-ahead journal of in-place appends (`<id>.journal`), in the
//! spirit of SQLite's WAL: an append's new bytes are made durable in the
//! journal (one fdatasync) before the session is touched, and the session
//! itself is synced only at a *checkpoint*, after which the journal is
//! emptied.
//!
//! The journal is a chain of records, each
//! `GLRSWAL2 | body length | checksum | body`, where the body holds the
//! session's inode, its new length, and the new bytes of the header range
//! (`updatedAt`) and of the tail, with their offsets; the first record also
//! keeps the 32 bytes before its tail (a guard). Each checksum covers the
//! previous record's checksum and the body, so a record torn by a crash, or
//! a stale one left beyond the end by an earlier chain, ends the chain.
//!
//! Why this is safe (the argument the durability tests exercise):
//!
//! - *Invariant.* Every byte of the session before the first record's tail
//!   offset is durable (it was synced at the last checkpoint or full
//!   rewrite), and the records, applied in order, turn those bytes into the
//!   file as of the last committed append. The records' ranges chain: each
//!   tail starts inside the previous record's tail (at its closing `⏎]`),
//!   so they cover everything after the first tail offset, and the last
//!   record's head range is the current `updatedAt`.
//! - *An append* writes its record at the end of the chain and fdatasyncs
//!   the journal: from then on it is committed whatever happens to the
//!   session. Only then are the new bytes written into the session, not
//!   synced.
//! - *Recovery* ([`recover`], by whoever takes the write lock next, and by
//!   a reader that found a file that does not parse) composes the records
//!   and compares them with the session; if anything differs (a process
//!   killed mid-write, or a power cut that lost some of the unsynced pages,
//!   in any order) the composed bytes are written again and the length set.
//!   Writing them is idempotent, so a crash during recovery is recovered
//!   the same way. A torn last record was never applied (the session is
//!   written only after its sync returned), so the file is the one before
//!   that append.
//! - *A checkpoint* fdatasyncs the session and then empties the journal.
//!   If the emptying is lost in a power cut, the old records are redone on
//!   a session that already holds their bytes: no change. New records
//!   written after it start a new chain at offset 0; should old records
//!   survive beyond them, their checksums do not chain and are ignored.
//! - *A full rewrite* (rename over the session) first checkpoints and
//!   empties the journal durably ([`clear`]), so records are never applied
//!   to a file they do not describe; the inode and the guard are checked
//!   too, and a journal of another inode is emptied durably before anything
//!   else is written.
//!
//! So after a crash at any moment, and once recovered, the session is the
//! file as of the last committed append, or the one before (when the crash
//! came before a record was whole): one JSON document any parser reads.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::StoreError;

const MAGIC: &[u8; 8] = b"GLRSWAL2";
/// The checksum a chain starts from.
const SEED: u64 = 0x676c_7273_5741_4c31;
/// How many bytes before the first tail the journal keeps, to recognise
/// its file.
pub(crate) const GUARD: usize = 32;
/// A journal larger than this is checkpointed before the next append: the
/// bytes a recovery or a reader's check handles stay small.
pub(crate) const CHECKPOINT_BYTES: u64 = 32 * 1024;

/// One committed append: the bytes it put in the session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub ino: u64,
    pub new_len: u64,
    pub head_at: u64,
    pub head: Vec<u8>,
    pub tail_at: u64,
    pub tail: Vec<u8>,
    /// The bytes before `tail_at` (first record of a chain only; empty in
    /// later ones).
    pub guard: Vec<u8>,
}

/// FNV-1a's step over 8-byte little-endian words (then the last bytes one
/// by one), continued from `h`: eight times fewer multiplications than
/// FNV-1a over bytes, and stable across versions and platforms, which a
/// journal read by another glrs build needs. A checksum against torn and
/// stale records, not against an adversary.
fn hash(mut h: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = word.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        h = (h ^ w).wrapping_mul(PRIME).rotate_left(29);
    }
    for b in words.remainder() {
        h = (h ^ u64::from(*b)).wrapping_mul(PRIME);
    }
    h
}

fn chain(prev: u64, body: &[u8]) -> u64 {
    hash(hash(0xcbf2_9ce4_8422_2325, &prev.to_le_bytes()), body)
}

/// [`chain`] over a body that arrives in pieces of any size: the same
/// checksum as one call over it all (whole words are hashed as they
/// complete, the last bytes at the end).
pub(crate) struct Chain {
    h: u64,
    pending: [u8; 8],
    n: usize,
}

impl Chain {
    /// The checksum of a record following one whose checksum is `prev`.
    pub(crate) fn after(prev: u64) -> Chain {
        Chain { h: hash(0xcbf2_9ce4_8422_2325, &prev.to_le_bytes()), pending: [0; 8], n: 0 }
    }

    /// More of the body.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        if self.n > 0 {
            let take = (8 - self.n).min(bytes.len());
            self.pending[self.n..self.n + take].copy_from_slice(&bytes[..take]);
            self.n += take;
            bytes = &bytes[take..];
            if self.n < 8 {
                return;
            }
            self.h = hash(self.h, &self.pending);
            self.n = 0;
        }
        let whole = bytes.len() / 8 * 8;
        self.h = hash(self.h, &bytes[..whole]);
        let rest = &bytes[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.n = rest.len();
    }

    /// The checksum of the body so far.
    pub(crate) fn finish(&self) -> u64 {
        hash(self.h, &self.pending[..self.n])
    }
}

impl Record {
    /// The record as written after a record whose checksum is `prev`;
    /// returns the bytes and this record's checksum. (Appends write it with
    /// [`Streamed`]; this whole-buffer form is the tests' reference.)
    #[cfg(test)]
    pub fn encode(&self, prev: u64) -> (Vec<u8>, u64) {
        let mut body = Vec::with_capacity(self.head.len() + self.tail.len() + self.guard.len() + 64);
        for n in [self.ino, self.new_len, self.head_at, self.tail_at] {
            body.extend_from_slice(&n.to_le_bytes());
        }
        for part in [&self.head, &self.guard] {
            body.extend_from_slice(&(part.len() as u64).to_le_bytes());
            body.extend_from_slice(part);
        }
        body.extend_from_slice(&self.tail);
        let sum = chain(prev, &body);
        let mut out = Vec::with_capacity(body.len() + 24);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&sum.to_le_bytes());
        out.extend_from_slice(&body);
        (out, sum)
    }

    /// The record at the start of `bytes`, if whole and chained to `prev`:
    /// the record, its length in bytes and its checksum.
    fn decode(bytes: &[u8], prev: u64) -> Option<(Record, usize, u64)> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let len = usize::try_from(u64::from_le_bytes(rest.get(..8)?.try_into().ok()?)).ok()?;
        let sum = u64::from_le_bytes(rest.get(8..16)?.try_into().ok()?);
        let body = rest.get(16..16usize.checked_add(len)?)?;
        if chain(prev, body) != sum {
            return None;
        }
        let mut at = 0usize;
        let mut num = || -> Option<u64> {
            let n = u64::from_le_bytes(body.get(at..at.checked_add(8)?)?.try_into().ok()?);
            at += 8;
            Some(n)
        };
        let (ino, new_len, head_at, tail_at) = (num()?, num()?, num()?, num()?);
        let mut part = || -> Option<Vec<u8>> {
            let n = usize::try_from(u64::from_le_bytes(body.get(at..at.checked_add(8)?)?.try_into().ok()?)).ok()?;
            let bytes = body.get(at + 8..(at + 8).checked_add(n)?)?.to_vec();
            at += 8 + n;
            Some(bytes)
        };
        let (head, guard) = (part()?, part()?);
        let tail = body.get(at..)?.to_vec();
        Some((Record { ino, new_len, head_at, head, tail_at, tail, guard }, MAGIC.len() + 16 + len, sum))
    }
}

/// A record whose tail is never held: written with [`Record::encode`]'s
/// bytes, the tail streamed by the caller (an append's new entries,
/// serialized straight into the journal).
pub(crate) struct Streamed<'a> {
    pub ino: u64,
    pub head_at: u64,
    pub head: &'a [u8],
    pub tail_at: u64,
    pub tail_len: u64,
    pub guard: &'a [u8],
}

impl Streamed<'_> {
    /// The body before the tail.
    fn prefix(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.head.len() + self.guard.len() + 48);
        for n in [self.ino, self.tail_at + self.tail_len, self.head_at, self.tail_at] {
            body.extend_from_slice(&n.to_le_bytes());
        }
        for part in [self.head, self.guard] {
            body.extend_from_slice(&(part.len() as u64).to_le_bytes());
            body.extend_from_slice(part);
        }
        body
    }

    /// The record's length in bytes.
    pub fn len(&self) -> u64 {
        (MAGIC.len() + 16 + self.prefix().len()) as u64 + self.tail_len
    }

    /// Write the record at `at` in `journal`, after a record whose checksum
    /// is `prev`; `tail` writes the tail's bytes (exactly `tail_len`). The
    /// checksum goes in last, over the bytes as written. With `stop_after`,
    /// only that many bytes are written, as a kill would leave them.
    /// Returns the record's checksum. Not synced.
    pub fn write(
        &self,
        journal: &File,
        at: u64,
        prev: u64,
        stop_after: Option<u64>,
        tail: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
    ) -> io::Result<u64> {
        let prefix = self.prefix();
        let body_len = prefix.len() as u64 + self.tail_len;
        let mut out = super::tail::Hashing {
            out: io::BufWriter::with_capacity(1 << 16, super::tail::WriteAt::new(journal, at, stop_after)),
            hash: None,
        };
        io::Write::write_all(&mut out, MAGIC)?;
        io::Write::write_all(&mut out, &body_len.to_le_bytes())?;
        // The checksum's place: zero until the body is written and hashed.
        io::Write::write_all(&mut out, &0u64.to_le_bytes())?;
        out.hash = Some(Chain::after(prev));
        io::Write::write_all(&mut out, &prefix)?;
        tail(&mut out)?;
        io::Write::flush(&mut out)?;
        let sum = out.hash.map_or(0, |h| h.finish());
        if stop_after.is_none() {
            journal.write_all_at(&sum.to_le_bytes(), at + MAGIC.len() as u64 + 8)?;
        }
        Ok(sum)
    }
}

/// The records of a journal's bytes, in order, as far as they chain.
fn decode_chain(bytes: &[u8]) -> (Vec<Record>, u64, u64) {
    let (mut records, mut at, mut sum) = (Vec::new(), 0usize, SEED);
    while let Some((record, len, next)) = bytes.get(at..).and_then(|rest| Record::decode(rest, sum)) {
        records.push(record);
        at += len;
        sum = next;
    }
    (records, at as u64, sum)
}

/// What the records make of the session: the bytes from the first tail
/// offset to the new end, and every header range written, in order.
struct Composed {
    from: u64,
    bytes: Vec<u8>,
    heads: Vec<(u64, Vec<u8>)>,
}

impl Composed {
    /// The span of the header the records wrote.
    fn head_span(&self) -> (u64, usize) {
        let lo = self.heads.iter().map(|(at, _)| *at).min().unwrap_or(0);
        let hi = self.heads.iter().map(|(at, b)| at + b.len() as u64).max().unwrap_or(lo);
        (lo, (hi - lo) as usize)
    }

    /// That span as the records leave it, over `base` (the span as it is
    /// in the file): a byte no record wrote is the file's own.
    fn head_over(&self, base: &[u8]) -> Vec<u8> {
        let (lo, _) = self.head_span();
        let mut out = base.to_vec();
        for (at, bytes) in &self.heads {
            let from = (at - lo) as usize;
            out[from..from + bytes.len()].copy_from_slice(bytes);
        }
        out
    }

    fn len(&self) -> u64 {
        self.from + self.bytes.len() as u64
    }
}

fn compose(records: &[Record]) -> Option<Composed> {
    let first = records.first()?;
    let mut bytes = Vec::new();
    for r in records {
        let head_end = r.head_at.checked_add(r.head.len() as u64)?;
        if r.ino != first.ino
            || r.tail_at < first.tail_at
            || head_end > first.tail_at
            || r.new_len != r.tail_at + r.tail.len() as u64
        {
            return None;
        }
        let at = usize::try_from(r.tail_at - first.tail_at).ok()?;
        if at > bytes.len() {
            return None;
        }
        bytes.truncate(at);
        bytes.extend_from_slice(&r.tail);
    }
    let heads = records.iter().filter(|r| !r.head.is_empty()).map(|r| (r.head_at, r.head.clone())).collect();
    Some(Composed { from: first.tail_at, bytes, heads })
}

/// The journal of one session as found under the write lock: where the
/// next record goes.
#[derive(Debug)]
pub struct State {
    /// The end of the chain (the journal's length once recovered).
    pub end: u64,
    /// The last record's checksum (the seed when there is none).
    pub sum: u64,
    /// Whether the journal file exists.
    pub exists: bool,
    /// The journal, open for writing, when it exists.
    pub file: Option<File>,
}

impl State {
    fn empty(exists: bool) -> State {
        State { end: 0, sum: SEED, exists, file: None }
    }
}

/// `O_NOFOLLOW`: a session file or journal planted as a link is never
/// written through (issue 14, item 13).
pub(crate) fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// Open (creating, 0600) the journal for writing.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Make `session` hold every append its journal committed (call under the
/// session's write lock, before anything else). Returns where the next
/// record goes, and whether bytes had to be written again.
pub fn recover(session: &Path, journal_path: &Path) -> Result<(State, bool), StoreError> {
    let fail = |e| StoreError::io(journal_path, "recover from", e);
    let mut journal = match open_rw(journal_path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((State::empty(false), false)),
        Err(e) => return Err(fail(e)),
    };
    let mut bytes = Vec::new();
    journal.read_to_end(&mut bytes).map_err(fail)?;
    let (records, end, sum) = decode_chain(&bytes);
    // A torn record at the end was never applied: it goes.
    let trim = |journal: &File| if bytes.len() as u64 > end { journal.set_len(end) } else { Ok(()) };
    let Some(composed) = compose(&records) else {
        if !records.is_empty() {
            return Err(StoreError::Corrupt {
                path: journal_path.to_path_buf(),
                detail: "its records do not follow each other; move it away to use the session as it is".into(),
            });
        }
        trim(&journal).map_err(fail)?;
        return Ok((State { file: Some(journal), ..State::empty(true) }, false));
    };
    let file = match open_rw(session) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            journal.set_len(0).and_then(|()| journal.sync_data()).map_err(fail)?;
            return Ok((State::empty(true), false));
        }
        Err(e) => return Err(StoreError::io(session, "recover", e)),
    };
    let session_fail = |e| StoreError::io(session, "recover", e);
    let meta = file.metadata().map_err(session_fail)?;
    if meta.ino() != records[0].ino {
        // Another file: emptied durably before anything else is written,
        // so the records can never meet a later file of the same inode.
        journal.set_len(0).and_then(|()| journal.sync_data()).map_err(fail)?;
        return Ok((State::empty(true), false));
    }
    let guard = &records[0].guard;
    let mut found = vec![0; guard.len()];
    let guard_at = composed.from.checked_sub(guard.len() as u64);
    let matches = guard_at.is_some_and(|at| file.read_exact_at(&mut found, at).is_ok() && &found == guard);
    if !matches {
        return Err(StoreError::Corrupt {
            path: session.to_path_buf(),
            detail: format!(
                "its journal {} does not match it; move that journal away to use the file as it is",
                journal_path.display()
            ),
        });
    }
    let redone = !applied(&file, meta.len(), &composed).map_err(session_fail)?;
    if redone {
        let (lo, n) = composed.head_span();
        let mut base = vec![0; n];
        file.read_exact_at(&mut base, lo)
            .and_then(|()| file.write_all_at(&composed.head_over(&base), lo))
            .and_then(|()| file.write_all_at(&composed.bytes, composed.from))
            .and_then(|()| file.set_len(composed.len()))
            .map_err(|e| StoreError::io(session, "redo the journalled append to", e))?;
    }
    trim(&journal).map_err(fail)?;
    Ok((State { end, sum, exists: true, file: Some(journal) }, redone))
}

/// True when `file` (of length `len`) holds every composed byte.
fn applied(file: &File, len: u64, composed: &Composed) -> io::Result<bool> {
    let read_at = |from: u64, n: usize| {
        let mut bytes = vec![0; n];
        file.read_exact_at(&mut bytes, from).map(|()| bytes)
    };
    if len != composed.len() {
        return Ok(false);
    }
    let (lo, n) = composed.head_span();
    let head = read_at(lo, n)?;
    Ok(composed.head_over(&head) == head && read_at(composed.from, composed.bytes.len())? == composed.bytes)
}

/// True when the session (inode `ino`, length `len`, its bytes read by
/// `read_at(offset, count)`) holds every append its journal committed, or
/// the journal has none for it. Readers take no lock: one that gets false
/// (a power cut lost pages the journal still holds, or an append landed
/// while it read) reads again under the lock, after [`recover`].
pub fn holds_all(journal_path: &Path, ino: u64, len: u64, read_at: impl Fn(u64, usize) -> Option<Vec<u8>>) -> bool {
    let Ok(bytes) = std::fs::read(journal_path) else { return true };
    let (records, _, _) = decode_chain(&bytes);
    let Some(composed) = compose(&records) else { return records.is_empty() };
    if records[0].ino != ino {
        return true;
    }
    let (lo, n) = composed.head_span();
    len == composed.len()
        && read_at(lo, n).is_some_and(|head| composed.head_over(&head) == head)
        && read_at(composed.from, composed.bytes.len()).is_some_and(|b| b == composed.bytes)
}

/// A checkpoint: the session's bytes durable, then the journal emptied
/// (not synced: see the module's argument).
pub(crate) fn checkpoint(session: &File, journal: &File, state: &mut State) -> io::Result<()> {
    session.sync_data()?;
    journal.set_len(0)?;
    *state = State::empty(true);
    Ok(())
}

/// Before a full rewrite of `session`, or when it is created or removed:
/// checkpoint and empty the journal durably, so no record can later be
/// applied to the new file (call under the write lock, after [`recover`]).
pub fn clear(session: &Path, journal_path: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(journal_path) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(()),
    }
    if let Ok(file) = File::open(session) {
        file.sync_data().map_err(|e| StoreError::io(session, "sync", e))?;
    }
    let journal = open_rw(journal_path).map_err(|e| StoreError::io(journal_path, "clear", e))?;
    journal.set_len(0).and_then(|()| journal.sync_data()).map_err(|e| StoreError::io(journal_path, "clear", e))
}

/// Make every append the journal committed durable in the session and
/// empty the journal, under the session's write lock (`lock`): what a
/// writer does when it leaves, so a closed session has nothing to settle.
/// True when a committed append had to be written again.
pub fn checkpoint_now(session: &Path, journal_path: &Path, lock: &Path) -> Result<bool, StoreError> {
    let _lock = super::WriteLock::acquire(lock)?;
    let (_, redone) = recover(session, journal_path)?;
    clear(session, journal_path)?;
    Ok(redone)
}

/// True when `journal_path` holds committed appends not yet checkpointed.
pub fn is_active(journal_path: &Path) -> bool {
    let mut magic = [0u8; 8];
    File::open(journal_path).and_then(|f| f.read_exact_at(&mut magic, 0)).is_ok() && &magic == MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tail_at: u64, tail: &[u8]) -> Record {
        Record {
            ino: 7,
            new_len: tail_at + tail.len() as u64,
            head_at: 40,
            head: b"2026-11-30".to_vec(),
            tail_at,
            tail: tail.to_vec(),
            guard: b"}".to_vec(),
        }
    }

    #[test]
    fn records_chain_and_reject_damage() {
        let one = record(80, b",\n{\"a\":1}\n],\"contextTokens\":1}\n");
        let two = record(89, b",\n{\"b\":2}\n],\"contextTokens\":2}\n");
        let (a, sum) = one.encode(SEED);
        let (b, _) = two.encode(sum);
        let bytes = [a.clone(), b.clone()].concat();
        assert_eq!(decode_chain(&bytes), (vec![one.clone(), two.clone()], bytes.len() as u64, chain(sum, &b[24..])));
        // Torn anywhere: the chain ends before the torn record.
        for cut in [0, 8, 20, 60, a.len() + 3, bytes.len() - 1] {
            let (records, end, _) = decode_chain(&bytes[..cut]);
            assert_eq!(records.len(), usize::from(cut >= a.len()), "cut at {cut}");
            assert_eq!(end, if cut >= a.len() { a.len() as u64 } else { 0 });
        }
        let mut flipped = bytes.clone();
        flipped[a.len() + 30] ^= 1;
        assert_eq!(decode_chain(&flipped).0, vec![one.clone()]);
        // A record that does not chain from its predecessor (a stale one
        // left after a shorter new chain) is not part of the chain.
        let stale = [a.clone(), two.encode(SEED).0].concat();
        assert_eq!(decode_chain(&stale).0, vec![one.clone()]);
        // Composed: the second tail starts inside the first.
        let composed = compose(&[one, two]).unwrap();
        assert_eq!(composed.from, 80);
        assert_eq!(composed.bytes, b",\n{\"a\":1},\n{\"b\":2}\n],\"contextTokens\":2}\n");
    }

    #[test]
    fn a_streamed_record_is_the_same_bytes_as_an_encoded_one() {
        let dir = tempfile::tempdir().unwrap();
        let tail = b",\n{\"a\":1}\n],\"contextTokens\":1}\n".repeat(5000);
        let whole = record(80, &tail);
        let (expected, sum) = whole.encode(12345);
        let streamed = Streamed {
            ino: whole.ino,
            head_at: whole.head_at,
            head: &whole.head,
            tail_at: whole.tail_at,
            tail_len: tail.len() as u64,
            guard: &whole.guard,
        };
        assert_eq!(streamed.len(), expected.len() as u64);
        let file = create(&dir.path().join("j")).unwrap();
        // After 3 bytes of an earlier record, in pieces as a serializer writes.
        file.write_all_at(b"abc", 0).unwrap();
        let got =
            streamed.write(&file, 3, 12345, None, |out| tail.chunks(7).try_for_each(|c| out.write_all(c))).unwrap();
        assert_eq!(got, sum);
        let bytes = std::fs::read(dir.path().join("j")).unwrap();
        assert_eq!(&bytes[3..], &expected[..]);
        // Stopped halfway: a torn record, never part of a chain.
        let half = create(&dir.path().join("h")).unwrap();
        streamed.write(&half, 0, SEED, Some(streamed.len() / 2), |out| out.write_all(&tail)).unwrap();
        let bytes = std::fs::read(dir.path().join("h")).unwrap();
        assert_eq!(bytes.len() as u64, streamed.len() / 2);
        assert!(decode_chain(&bytes).0.is_empty());
    }

    #[test]
    fn the_checksum_in_pieces_is_the_checksum_whole() {
        let body: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 3) as u8).collect();
        for size in [1, 3, 7, 8, 9, 15, 64, 1000] {
            let mut sum = Chain::after(99);
            body.chunks(size).for_each(|c| sum.update(c));
            assert_eq!(sum.finish(), chain(99, &body), "pieces of {size}");
        }
    }
}
