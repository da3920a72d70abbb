//! The session store (SPEC sections 1 and 2): one folder of session files,
//! prompt history, artifacts, and the lock files that let several programs
//! share them. Every program changes a session only through
//! [`Store::append`] (in place, under a write-ahead journal: see
//! [`journal`]) or [`Store::update`] (re-read the file as it is now and
//! replace it atomically), both under the session's write lock.

mod append;
pub mod cleanup;
pub mod damage;
pub mod entry;
pub mod format;
#[cfg(test)]
pub(crate) mod fuzz;
pub mod index;
pub mod inplace;
pub mod journal;
pub mod json_file;
pub(crate) mod layout;
pub mod lines;
pub(crate) use lines::{read_bytes, read_settled};
pub mod listing;
pub mod lock;
pub mod prompts;
pub mod recent;
pub mod recovery;
mod sources;
pub mod survey;
mod tail;

use std::path::{Path, PathBuf};

use crate::error::StoreError;
use crate::id::{IdPrefix, SessionId};
use crate::paths::{Paths, ensure_private_dir};
pub use append::Append;
pub use entry::{Entry, EntryText, Parsed, StopReason, ToolCall, TurnMessage};
pub use format::SessionFile;
pub use inplace::Mark;
pub use lock::{OpenLock, Stamp, WriteLock};

/// How long `glrs-compact` waits for another compaction of the session
/// (one model call, its retries included) before it gives up.
const COMPACTION_WAIT: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Where a session's file is: the store, or the read-only legacy folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The session's id.
    pub id: SessionId,
    /// Its file.
    pub path: PathBuf,
    /// Whether the file is in the legacy (read-only) folder.
    pub legacy: bool,
}

/// A session read from disk.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it was read from.
    pub at: Located,
    /// The file as read.
    pub file: SessionFile,
    /// The mark of the bytes read: a writer that passes it to
    /// [`Store::append_since`] learns whether anyone added entries since.
    pub mark: Mark,
}

/// A session as this process just wrote it.
#[derive(Debug, Clone)]
pub struct Written {
    /// The file as written.
    pub file: SessionFile,
    /// The stamp of the file written: if the file's stamp differs later,
    /// another program changed it.
    pub stamp: Stamp,
    /// What the writer knows of the file now, for an in-place append next time.
    pub mark: Mark,
    /// The write is done, but something after it failed (the folder sync):
    /// worth telling the user, never a reason to write again.
    pub warning: Option<String>,
}

/// What an append did.
#[derive(Debug, Clone)]
pub struct Appended {
    /// What the writer knows of the file now.
    pub mark: Mark,
    /// The stamp of the file written.
    pub stamp: Stamp,
    /// The file's `updatedAt` as written.
    pub updated_at: String,
    /// When the file was rewritten whole rather than appended in place: how
    /// many entries it holds now.
    pub rewritten: Option<usize>,
    /// The write is done, but something after it failed (the folder sync).
    pub warning: Option<String>,
}

/// The store rooted at one data folder.
#[derive(Debug, Clone)]
pub struct Store {
    /// Where everything lives.
    pub paths: Paths,
}

impl Store {
    /// The store at `paths`.
    pub fn new(paths: Paths) -> Store {
        Store { paths }
    }

    /// The store named by the environment (`XDG_DATA_HOME`, `HOME`).
    pub fn from_env() -> anyhow::Result<Store> {
        Ok(Store::new(Paths::from_env()?))
    }

    /// `<sessions>/<id>.json`, where every write goes.
    pub fn session_path(&self, id: &SessionId) -> PathBuf {
        self.paths.sessions.join(format!("{id}.json"))
    }

    fn legacy_path(&self, id: &SessionId) -> PathBuf {
        self.paths.legacy_sessions.join(format!("{id}.json"))
    }

    fn lock_path(&self, id: &SessionId) -> PathBuf {
        self.paths.sessions.join(format!("{id}.lock"))
    }

    fn open_path(&self, id: &SessionId) -> PathBuf {
        self.paths.sessions.join(format!("{id}.open"))
    }

    /// `<id>.journal`: the write-ahead journal of in-place appends.
    pub fn journal_path(&self, id: &SessionId) -> PathBuf {
        self.paths.sessions.join(format!("{id}.journal"))
    }

    /// Where the session's file is now: the store first, else legacy.
    pub fn locate(&self, id: &SessionId) -> Option<Located> {
        let path = self.session_path(id);
        if path.is_file() {
            return Some(Located { id: id.clone(), path, legacy: false });
        }
        let path = self.legacy_path(id);
        path.is_file().then(|| Located { id: id.clone(), path, legacy: true })
    }

    /// Every session id on disk, with its place. A legacy session whose id
    /// is also in the store is shadowed by the store's copy.
    pub fn all(&self) -> Result<Vec<Located>, StoreError> {
        let mut found = ids_in(&self.paths.sessions)?
            .into_iter()
            .map(|(id, path)| Located { id, path, legacy: false })
            .collect::<Vec<_>>();
        let known: std::collections::HashSet<SessionId> = found.iter().map(|l| l.id.clone()).collect();
        for (id, path) in ids_in(&self.paths.legacy_sessions)? {
            if !known.contains(&id) {
                found.push(Located { id, path, legacy: true });
            }
        }
        Ok(found)
    }

    /// Turn user text (a full id or a unique prefix of 4+ characters) into
    /// a session that exists. The text is checked before any path is built.
    /// Text that is no id may be an imported session's source id (a Claude
    /// Code uuid, a Codex rollout id): looked up in the sessions'
    /// `importedFrom` records (see [`sources`]), never used as a path.
    pub fn resolve(&self, text: &str) -> Result<Located, StoreError> {
        let prefix = match IdPrefix::parse(text) {
            Ok(prefix) => prefix,
            Err(_) if sources::could_be(text) => {
                let reason =
                    "it is no session id (8 hex characters), and no session was imported from a source with this id";
                return sources::find(self.all()?, text)
                    .ok_or_else(|| StoreError::InvalidId { input: text.to_string(), reason });
            }
            Err(invalid) => return Err(invalid),
        };
        if let Some(id) = prefix.as_full() {
            return self.locate(&id).ok_or(StoreError::NotFound { id: id.to_string() });
        }
        let mut matches: Vec<Located> = self.all()?.into_iter().filter(|l| prefix.matches(&l.id)).collect();
        match matches.len() {
            0 => Err(StoreError::NotFound { id: prefix.as_str().to_string() }),
            1 => Ok(matches.remove(0)),
            _ => {
                let mut candidates: Vec<String> = matches.into_iter().map(|l| l.id.to_string()).collect();
                candidates.sort();
                Err(StoreError::Ambiguous { prefix: prefix.as_str().to_string(), candidates })
            }
        }
    }

    /// Read a session file whole (see [`read_settled`]).
    pub fn read(&self, at: &Located) -> Result<Loaded, StoreError> {
        let (file, mark) = read_settled(at, |bytes| format::parse(&bytes, &at.path, Some(at.id.as_str())))?;
        Ok(Loaded { at: at.clone(), file, mark })
    }

    /// Read a session's header and entries as text, parsing none of the
    /// entries (see [`lines`]): what a reader that uses a few entries wants.
    pub fn read_lines(&self, at: &Located) -> Result<lines::Lines, StoreError> {
        lines::read(at)
    }

    /// Read a session from a chosen entry on, with counts from a cheap scan
    /// (see [`recent`]): what a resumed chat needs, whatever the size.
    pub fn read_recent(
        &self,
        at: &Located,
        types: &[&str],
        start: impl Fn(&[recent::Hit]) -> usize,
    ) -> Result<recent::Recent, StoreError> {
        recent::read(at, types, start)
    }

    /// Read a session's entries from the one `first` chooses (given the
    /// count) on, found from the end backwards, with the header and the
    /// count (see [`recent::read_from`]): `show --tail N` reads N entries.
    pub fn read_from(&self, at: &Located, first: impl Fn(usize) -> usize) -> Result<recent::Recent, StoreError> {
        recent::read_from(at, first)
    }

    /// A session's header and count, its `compacted`, `cleared` and
    /// `custom` entries and its `usage` totals (see [`recent::tally`]).
    pub fn tally(&self, at: &Located) -> Result<(recent::Recent, recent::UsageSum), StoreError> {
        recent::tally(at)
    }

    /// Read and parse the file as it is now (under the write lock), to
    /// rewrite it. A file with damaged lines is read salvaged, and the
    /// original kept beside it first (see [`damage`]): the rewrite keeps
    /// every line, the `.bak` every byte.
    fn read_now(&self, at: &Located) -> Result<Loaded, StoreError> {
        let (bytes, ino) = read_bytes(at)?;
        let mark = Mark::of_bytes(ino, &bytes);
        let parse = |bytes: &[u8]| format::parse(bytes, &at.path, Some(at.id.as_str()));
        let file = match parse(&bytes) {
            Err(e @ StoreError::Corrupt { .. }) => {
                let Some(salvaged) = damage::salvage(&bytes) else { return Err(e) };
                let file = parse(&salvaged.bytes).map_err(|_| e)?;
                if !at.legacy {
                    damage::keep_backup(&at.path, &bytes)?;
                }
                file
            }
            other => other?,
        };
        Ok(Loaded { at: at.clone(), file, mark })
    }

    /// `glrs-sessions repair`: rewrite a session whose file has damaged
    /// lines with each kept as a `custom` entry in its place, the original
    /// kept beside it as `<id>.json.bak`. `None` when nothing is damaged
    /// (nothing is written); else the damaged lines' numbers and the backup.
    pub fn repair(&self, at: &Located) -> Result<Option<(Vec<usize>, PathBuf)>, StoreError> {
        if at.legacy {
            return Err(StoreError::Legacy { id: at.id.to_string(), what: "repair" });
        }
        let id = &at.id;
        let _lock = WriteLock::acquire(&self.lock_path(id))?;
        journal::recover(&self.session_path(id), &self.journal_path(id))?;
        let (bytes, _) = read_bytes(at)?;
        let Some(salvaged) = damage::salvage(&bytes) else { return Ok(None) };
        // Only a file that then reads whole is written.
        format::parse::<serde::de::IgnoredAny>(&salvaged.bytes, &at.path, Some(id.as_str()))?;
        let backup = damage::keep_backup(&at.path, &bytes)?;
        journal::clear(&at.path, &self.journal_path(id))?;
        lock::write_atomic(&at.path, true, |w| w.write_all(&salvaged.bytes))?;
        Ok(Some((salvaged.lines, backup)))
    }

    /// Apply every append the journal of `id` committed, make the session
    /// durable and remove the journal (cleanup). True when a committed
    /// append had to be written again (a crash interrupted it).
    pub fn settle(&self, id: &SessionId) -> Result<bool, StoreError> {
        let journal = self.journal_path(id);
        let undone = self.checkpoint(id)?;
        match std::fs::remove_file(&journal) {
            Ok(()) => Ok(undone),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(undone),
            Err(e) => Err(StoreError::io(journal, "remove", e)),
        }
    }

    /// Make every append the journal of `id` committed durable in the
    /// session and empty the journal (see [`journal::checkpoint_now`]).
    pub fn checkpoint(&self, id: &SessionId) -> Result<bool, StoreError> {
        journal::checkpoint_now(&self.session_path(id), &self.journal_path(id), &self.lock_path(id))
    }

    /// Create a new, empty session in `cwd` under a fresh id and write it.
    pub fn create(&self, cwd: &str) -> Result<SessionId, StoreError> {
        loop {
            let id = self.fresh_id()?;
            if self.create_as(&id, cwd)? {
                return Ok(id);
            }
        }
    }

    /// A random id that no session has now. Nothing is reserved: the caller
    /// creates it with [`Store::create_as`] (or holds its open lock first).
    pub fn fresh_id(&self) -> Result<SessionId, StoreError> {
        loop {
            let id = SessionId::random().map_err(|e| StoreError::io("/dev/urandom", "read", e))?;
            if self.locate(&id).is_none() {
                return Ok(id);
            }
        }
    }

    /// Write a new, empty session under `id`; false when one exists already.
    pub fn create_as(&self, id: &SessionId, cwd: &str) -> Result<bool, StoreError> {
        let file = SessionFile::new(id.as_str(), cwd, &crate::time::now());
        self.create_file(id, &file)
    }

    /// Write `file` as the new session `id`; false when one exists already.
    pub fn create_file(&self, id: &SessionId, file: &SessionFile) -> Result<bool, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        // Under the id's write lock, so two creators of the same id cannot
        // both see it free.
        let _lock = WriteLock::acquire(&self.lock_path(id))?;
        if self.locate(id).is_some() {
            return Ok(false);
        }
        // A journal left by an earlier session of this id must never be
        // applied to the new one.
        journal::clear(&self.session_path(id), &self.journal_path(id))?;
        // Nor a kept scan of it (see [`survey`]) be taken for the new one's.
        let _ = std::fs::remove_file(survey::kept_path(&self.session_path(id)));
        // A failed folder sync is not reported here: the new session's
        // first append follows at once and is the write the user hears about.
        lock::write_atomic(&self.session_path(id), true, |w| file.write_to(w))?;
        Ok(true)
    }

    /// Create session `id` in `cwd` holding `change`, in one write: a
    /// chat's first save, one sync rather than one for the empty session
    /// and one for its entries (issue 32). `Ok(Err(change))` gives the
    /// change back when a session `id` exists already: append it then.
    pub fn create_with(
        &self,
        id: &SessionId,
        cwd: &str,
        change: Append,
    ) -> Result<Result<Appended, Append>, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        let _lock = WriteLock::acquire(&self.lock_path(id))?;
        if self.locate(id).is_some() {
            return Ok(Err(change));
        }
        let path = self.session_path(id);
        // As in create_file: nothing left by an earlier session of this id
        // is taken for the new one's.
        journal::clear(&path, &self.journal_path(id))?;
        let _ = std::fs::remove_file(survey::kept_path(&path));
        let mut file = SessionFile::new(id.as_str(), cwd, &crate::time::now());
        change.apply_header(&mut file);
        let landed = lock::write_atomic(&path, true, |w| file.write_with(w, &change.entries))?;
        // Landed: not knowing the file now is no failure (see append_since).
        let mark = Mark::of_file(&path).unwrap_or_else(|_| Mark::unknown());
        Ok(Ok(Appended {
            mark,
            stamp: landed.stamp,
            updated_at: file.get_str("updatedAt").unwrap_or_default().to_string(),
            rewritten: Some(change.len()),
            warning: landed.warning,
        }))
    }

    /// Append entries and set header fields under the write lock: in place
    /// when the file allows (see [`inplace`]), else by a full rewrite. Sets
    /// `updatedAt`, and `title` from the first user message when the
    /// session has none.
    pub fn append(&self, id: &SessionId, change: Append) -> Result<Appended, StoreError> {
        self.append_since(id, change, None, &[], |_| 0, |_, _| {})
    }

    /// [`Store::append`] for a writer that tracks the file (the chat):
    /// `since` is the mark of the file as the caller last wrote or read it.
    /// When the file is no longer that (another program added entries or
    /// rewrote it), it is read under the lock from a chosen entry on (see
    /// [`recent`]: `types` and `start` as there), `merge` may change the
    /// append (its header fields) knowing what is there, and the entries go
    /// after whatever is there: in place when the file allows, else by a
    /// full rewrite ([`Appended::rewritten`] then holds the file as written).
    pub fn append_since(
        &self,
        id: &SessionId,
        mut change: Append,
        since: Option<&Mark>,
        types: &[&str],
        start: impl Fn(&[recent::Hit]) -> usize,
        merge: impl FnOnce(&recent::Recent, &mut Append),
    ) -> Result<Appended, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        let _lock = WriteLock::acquire(&self.lock_path(id))?;
        let path = self.session_path(id);
        let journal = self.journal_path(id);
        let (mut state, _) = journal::recover(&path, &journal)?;
        let now = crate::time::now();
        let mut outcome = inplace::append(&path, &journal, &mut state, &change, since, &now)?;
        if let inplace::Outcome::Foreign = outcome {
            // Read from the caller's chosen entry on (not whole), then
            // append after what is there.
            let at = self.locate(id).ok_or(StoreError::NotFound { id: id.to_string() })?;
            let recent = recent::read_with(&at, types, start, true)?;
            merge(&recent, &mut change);
            // Foreign is found before the journal is touched: the state
            // recovered above still holds (the lock is held throughout).
            outcome = inplace::append(&path, &journal, &mut state, &change, Some(&recent.lines.mark), &now)?;
        }
        // Committed from here on: a failure to look at the file after is
        // not the append's (an error would have the caller write the
        // entries again), so an unknown stamp or mark stands in for it.
        let committed = match outcome {
            inplace::Outcome::Done(mark) => Some((mark, None)),
            inplace::Outcome::Committed { mark, warning } => Some((mark, Some(warning))),
            inplace::Outcome::Rewrite | inplace::Outcome::Foreign => None,
        };
        if let Some((mark, warning)) = committed {
            let stamp = Stamp::of(&path).unwrap_or_else(|_| Stamp::unknown());
            return Ok(Appended { mark, stamp, updated_at: now, rewritten: None, warning });
        }
        // The full rewrite: the change's entries are serialized straight
        // into the new file after the file's own (a 100 MB answer is not
        // held again as JSON text).
        let at = self.locate(id).ok_or(StoreError::NotFound { id: id.to_string() })?;
        let mut file = self.read_now(&at)?.file;
        change.apply_header(&mut file);
        journal::clear(&path, &journal)?;
        let landed = lock::write_atomic(&path, true, |w| file.write_with(w, &change.entries))?;
        // Landed: as above, not knowing the file now is no failure.
        let mark = Mark::of_file(&path).unwrap_or_else(|_| Mark::unknown());
        Ok(Appended {
            mark,
            stamp: landed.stamp,
            updated_at: file.get_str("updatedAt").unwrap_or_default().to_string(),
            rewritten: Some(file.events.len() + change.len()),
            warning: landed.warning,
        })
    }

    /// The read-modify-write protocol: take the write lock, read the file as
    /// it is now, let `change` edit it, replace the file atomically. A legacy
    /// session is written to the store under the same id; the legacy file is
    /// never touched. On error the previous file is intact.
    pub fn update(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut SessionFile) -> Result<(), StoreError>,
    ) -> Result<Written, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        let _lock = WriteLock::acquire(&self.lock_path(id))?;
        journal::recover(&self.session_path(id), &self.journal_path(id))?;
        self.rewrite_locked(id, change)
    }

    /// Read, change and replace the file whole (under the write lock, after
    /// recovery). The journal is cleared first, so it can never be applied
    /// to the new file.
    fn rewrite_locked(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut SessionFile) -> Result<(), StoreError>,
    ) -> Result<Written, StoreError> {
        let path = self.session_path(id);
        let at = self.locate(id).ok_or(StoreError::NotFound { id: id.to_string() })?;
        let mut file = self.read_now(&at)?.file;
        change(&mut file)?;
        journal::clear(&path, &self.journal_path(id))?;
        let landed = lock::write_atomic(&path, true, |w| file.write_to(w))?;
        // Landed: not knowing the file now is no failure (see append_since).
        let mark = Mark::of_file(&path).unwrap_or_else(|_| Mark::unknown());
        Ok(Written { file, stamp: landed.stamp, mark, warning: landed.warning })
    }

    /// Take the session's open lock (held by a chat while it is open).
    pub fn open_lock(&self, id: &SessionId) -> Result<OpenLock, StoreError> {
        self.open_lock_as(id, lock::Holder::Chat)
    }

    /// `<id>.compact`: held by `glrs-compact` for a whole compaction, so two
    /// never summarise the same range (waits for one under way, as long as
    /// a compaction's model call may take, not for ever).
    pub fn compaction_lock(&self, id: &SessionId) -> Result<WriteLock, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        WriteLock::acquire_within(&self.compact_path(id), COMPACTION_WAIT)
    }

    /// [`Store::compaction_lock`] without waiting: `None` while another
    /// compaction of the session runs.
    pub fn try_compaction_lock(&self, id: &SessionId) -> Result<Option<WriteLock>, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        WriteLock::try_acquire(&self.compact_path(id))
    }

    /// `keys.start.lock`: held while `--key K` decides between continuing
    /// the key's session and starting one, and records it, so chats started
    /// at once for one key get one session.
    pub fn key_start_lock(&self) -> Result<WriteLock, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        WriteLock::acquire(&self.paths.sessions.join("keys.start.lock"))
    }

    fn compact_path(&self, id: &SessionId) -> PathBuf {
        self.paths.sessions.join(format!("{id}.compact"))
    }

    /// [`Store::open_lock`], saying who holds it (a refusal names them).
    pub fn open_lock_as(&self, id: &SessionId, holder: lock::Holder) -> Result<OpenLock, StoreError> {
        ensure_private_dir(&self.paths.sessions)
            .map_err(|e| StoreError::io(&self.paths.sessions, "create folder", e))?;
        // A session never saved (or not kept) leaves no lock file behind.
        let keep_if = vec![self.session_path(id), self.legacy_path(id)];
        Ok(OpenLock::try_acquire_as(&self.open_path(id), id.as_str(), holder)?.removed_on_release_unless(keep_if))
    }

    /// Who has the session open: `None` when nobody, else the pid if known.
    pub fn open_holder(&self, id: &SessionId) -> Result<Option<Option<u32>>, StoreError> {
        OpenLock::holder(&self.open_path(id))
    }

    /// [`Store::open_holder`], with who it is: a chat, or `glrs-compact`
    /// running the memory flush before a compaction.
    pub fn open_holder_of(&self, id: &SessionId) -> Result<Option<(Option<u32>, lock::Holder)>, StoreError> {
        OpenLock::holder_of(&self.open_path(id))
    }

    /// Remove a session with its artifacts. Refused (`Busy`) while another
    /// program has it open, and for a legacy session.
    pub fn remove(&self, at: &Located) -> Result<(), StoreError> {
        if at.legacy {
            return Err(StoreError::Legacy { id: at.id.to_string(), what: "remove" });
        }
        let id = &at.id;
        let open = self.open_lock(id)?;
        let write = WriteLock::acquire(&self.lock_path(id))?;
        // The session file goes first: if we stop halfway, what is left is
        // an orphan artifacts folder that cleanup removes, never a session
        // that lost its artifacts.
        std::fs::remove_file(&at.path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound { id: id.to_string() },
            _ => StoreError::io(&at.path, "remove", e),
        })?;
        let artifacts = self.paths.artifacts_of(id);
        match std::fs::remove_dir_all(&artifacts) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(artifacts, "remove", e)),
        }
        // Held, the open and write lock files can go (acquirers check they
        // locked the file the name still names); the compaction lock only
        // if nobody holds it.
        for lock_file in [self.open_path(id), self.journal_path(id), survey::kept_path(&at.path), self.lock_path(id)] {
            let _ = std::fs::remove_file(lock_file);
        }
        let _ = lock::remove_unheld(&self.compact_path(id));
        // The originals `repair` kept: the conversation, as private as the session.
        damage::remove_backups(&at.path);
        // The write lock first: dropping the open lock checkpoints a
        // journal left behind, under the write lock.
        drop((write, open));
        Ok(())
    }

    /// Count the compaction artifacts of a session.
    /// Links are not artifacts, and a linked folder has none.
    pub fn artifact_count(&self, id: &SessionId) -> usize {
        let dir = self.paths.artifacts_of(id);
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return 0;
        }
        std::fs::read_dir(dir)
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".md")))
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .count()
            })
            .unwrap_or(0)
    }
}

/// The `(id, path)` of every session file in `dir`: `<8 hex>.json`. Lock
/// files, temporary files, `prompts.json` and `keys.json` never match.
/// A missing folder is an empty store.
pub(crate) fn ids_in(dir: &Path) -> Result<Vec<(SessionId, PathBuf)>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(dir, "read folder", e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, "read folder", e))?;
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if SessionId::is_id(stem)
            && let Ok(id) = SessionId::parse(stem)
        {
            out.push((id, entry.path()));
        }
    }
    Ok(out)
}
