//! Atomic file replacement and the two OS file locks (SPEC section 2,
//! "Writing").
//!
//! - The *write* lock (`<id>.lock`) is held only for one read-modify-write.
//! - The *open* lock (`<id>.open`, holding the holder's pid) is held by a
//!   chat for as long as it has the session open.
//!
//! Both are advisory `flock` locks through `std::fs::File::lock`: the kernel
//! drops them when the holder dies, so a crash never leaves a stale lock.
//!
//! A lock file may be removed, but only by a process holding its lock: the
//! open lock of a session that was never saved (or not kept), on release;
//! the lock files of a session being removed; cleanup's leftovers. It is
//! the holder's last act: once the name is gone, the next acquirer makes a
//! new file. So every acquirer checks, once it has the lock,
//! that the path still names the file it locked, and starts over when not:
//! two acquirers can never each hold a different file of one name.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::StoreError;

/// A replacement that took effect.
#[derive(Debug, Clone)]
pub struct Landed {
    /// The stamp of the new file.
    pub stamp: Stamp,
    /// Set when the folder could not be synced after the rename: the new
    /// file is in place (readers see it, the write must not be repeated),
    /// but a power cut could still bring back the old one.
    pub warning: Option<String>,
}

/// Replace `path` atomically with what `fill` writes: a temporary file in
/// the same folder (0600), fdatasync, rename over `path`, fsync the folder.
/// Readers see the old file or the new one, never a part. On any error
/// before the rename the old file is left as it was and the temporary file
/// is removed. Once the rename succeeded the write is done: a failing
/// folder sync is only a [`Landed::warning`], so a caller never writes the
/// same entries twice.
///
/// The file's data is synced with `fdatasync` (the data and its size) and
/// the folder with `fsync`: the rename is made durable by the folder's sync.
/// Keeping the two distinct also lets a test inject a failure into the
/// folder sync alone (`strace -e inject=fsync`).
///
/// `durable: false` skips both syncs, for caches whose loss costs nothing.
pub fn write_atomic(
    path: &Path,
    durable: bool,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Landed, StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let fail = |e| StoreError::io(path, "write", e);
    let tmp = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir).map_err(fail)?;
    {
        let mut out = BufWriter::with_capacity(1 << 16, tmp.as_file());
        fill(&mut out).map_err(fail)?;
        out.flush().map_err(fail)?;
    }
    if durable {
        tmp.as_file().sync_data().map_err(fail)?;
    }
    // The stamp of the file we wrote, taken before the rename makes it
    // visible: a later change by anyone else cannot be mistaken for ours.
    let stamp = tmp.as_file().metadata().map(|m| Stamp::from_metadata(&m)).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    let warning = if durable { sync_folder(dir).err().map(|e| e.report().to_string()) } else { None };
    Ok(Landed { stamp, warning })
}

/// fsync a folder, so the names created or renamed in it survive a power cut.
pub fn sync_folder(dir: &Path) -> Result<(), StoreError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| StoreError::io(dir, "sync folder", e))
}

/// What identifies one version of a file: every write renames a new inode
/// into place, and size and modification time guard against inode reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    /// The inode.
    pub ino: u64,
    /// The size in bytes.
    pub size: u64,
    /// The modification time, seconds.
    pub mtime: i64,
    /// The modification time's nanoseconds.
    pub mtime_ns: i64,
}

impl Stamp {
    /// The stamp of a file's metadata.
    pub fn from_metadata(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp { ino: m.ino(), size: m.size(), mtime: m.mtime(), mtime_ns: m.mtime_nsec() }
    }

    /// A stamp no file has: for a file written but not looked at since
    /// (the look failed), so its holder sees it as changed and reads it.
    pub fn unknown() -> Stamp {
        Stamp { ino: 0, size: u64::MAX, mtime: 0, mtime_ns: 0 }
    }

    /// The stamp of the file at `path` now.
    pub fn of(path: &Path) -> std::io::Result<Stamp> {
        std::fs::metadata(path).map(|m| Stamp::from_metadata(&m))
    }
}

/// Lock files are opened with `O_NOFOLLOW`: a link planted in their place
/// would otherwise make glrs truncate and write a file elsewhere.
fn open_lock_file(path: &Path, write: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .create(write)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// How many times an acquirer starts over because the lock file it locked
/// was removed meanwhile. Each removal needs a holder releasing the lock,
/// so running out means something keeps replacing the file.
const ATTEMPTS: usize = 100;

/// True when `path` still names the file `file` has open (same device and
/// inode); false when it is gone or names another file now.
fn still_names(path: &Path, file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let mine = file.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(now) => Ok(now.dev() == mine.dev() && now.ino() == mine.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The outcome of [`lock_exclusive`].
enum Locked {
    /// We hold the lock of the file `path` names.
    Mine(File),
    /// Somebody else holds the lock of the file `path` names.
    Held(File),
}

/// Open the lock file in `path` (created if missing) and lock it
/// exclusively, waiting for it when `wait`. Whoever removes a lock file
/// holds its lock while doing so: once we have the lock (or are refused
/// it), a path that no longer names the file we opened means that file was
/// removed meanwhile, and we start over with the new one.
fn lock_exclusive(path: &Path, wait: Option<Duration>) -> Result<Locked, StoreError> {
    lock_exclusive_from(path, wait, || open_lock_file(path, true))
}

/// How long a writer waits for a write lock. The lock is held for one
/// read-modify-write (milliseconds); a process holding it for longer (a
/// helper that opened `<id>.lock` and locked it, issue 31 item 14) gets a
/// clear error rather than a chat hung for ever.
pub const LOCK_WAIT: Duration = Duration::from_secs(15);

/// Wait at most `limit` for `file`'s exclusive lock. `flock` has no
/// timeout of its own (and a blocked one cannot be cancelled from another
/// thread), so the lock is tried with pauses growing to a tenth of a
/// second: at most ten tries a second once the wait is long.
fn lock_within(file: &File, path: &Path, limit: Duration) -> Result<(), StoreError> {
    use std::fs::TryLockError;
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(StoreError::io(path, "lock", e)),
        }
        if start.elapsed() >= limit {
            return Err(StoreError::LockHeld {
                path: path.to_path_buf(),
                what: locked_thing(path),
                secs: limit.as_secs(),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// What a lock file locks, for its error: `session 3f9a1c2b` for
/// `3f9a1c2b.lock`, else the file's name.
fn locked_thing(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let is_id = stem.len() == 8 && stem.bytes().all(|b| b.is_ascii_hexdigit());
    if is_id { format!("session {stem}") } else { stem }
}

/// [`lock_exclusive`] with the opening given (a test hands it a file that
/// was removed after it was opened).
fn lock_exclusive_from(
    path: &Path,
    wait: Option<Duration>,
    mut open: impl FnMut() -> std::io::Result<File>,
) -> Result<Locked, StoreError> {
    for _ in 0..ATTEMPTS {
        let file = open().map_err(|e| StoreError::io(path, "open lock file", e))?;
        let mine = match wait {
            Some(limit) => {
                lock_within(&file, path, limit)?;
                true
            }
            None => try_exclusive(&file).map_err(|e| StoreError::io(path, "lock", e))?,
        };
        if still_names(path, &file).map_err(|e| StoreError::io(path, "lock", e))? {
            return Ok(if mine { Locked::Mine(file) } else { Locked::Held(file) });
        }
    }
    let replaced = std::io::Error::other(format!("the lock file was replaced {ATTEMPTS} times while taking it"));
    Err(StoreError::io(path, "lock", replaced))
}

/// How long [`try_exclusive`] keeps trying while it meets only shared
/// locks: a prober holds one for an instant, unless it is preempted then
/// (on a loaded machine, for a scheduler's time slice or a few).
const PROBE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Take `file`'s exclusive lock if nobody holds it, without waiting for a
/// holder. [`OpenLock::holder_of`] asks who holds a lock by taking a shared
/// one for an instant, and an exclusive try-lock that meets it fails though
/// nobody holds the lock: so a failed try is checked with a shared
/// try-lock, which only an exclusive holder refuses, and tried again when
/// that succeeds (the shared lock is dropped first). This keeps the probe a
/// plain lock test: a pid read without locking cannot tell a live holder
/// from one that crashed (whose lock the kernel dropped), and a second lock
/// file per session would be one more file to create and clean up.
fn try_exclusive(file: &File) -> std::io::Result<bool> {
    use std::fs::TryLockError;
    let start = std::time::Instant::now();
    for tries in 0u32.. {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(e),
        }
        match file.try_lock_shared() {
            // No exclusive holder: only probers were there.
            Ok(()) => file.unlock()?,
            Err(TryLockError::WouldBlock) => return Ok(false),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        if start.elapsed() > PROBE_PATIENCE {
            break;
        }
        // A prober still there after a few tries was preempted holding its
        // lock: waiting a little costs less than spinning.
        if tries < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    Ok(false)
}

/// Remove the lock file in `path` if nobody holds its lock, holding it
/// while removing (see [`lock_exclusive`]). False when somebody holds it or
/// it is gone already.
pub(crate) fn remove_unheld(path: &Path) -> Result<bool, StoreError> {
    let file = match open_lock_file(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(StoreError::io(path, "open lock file", e)),
    };
    if !try_exclusive(&file).map_err(|e| StoreError::io(path, "lock", e))? {
        return Ok(false);
    }
    if !still_names(path, &file).map_err(|e| StoreError::io(path, "lock", e))? {
        return Ok(false);
    }
    std::fs::remove_file(path).map_err(|e| StoreError::io(path, "remove", e))?;
    Ok(true)
}

/// True when none of `paths` exists (a failure to look counts as existing).
fn none_exists(paths: &[PathBuf]) -> bool {
    paths.iter().all(|p| matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound))
}

/// On release, remove `path` while still holding `file`'s lock, when it is
/// still the file we locked and none of `keep_if` exists. Best effort: a
/// lock file left behind is harmless (cleanup removes it later).
fn remove_on_release(path: &Path, file: &File, keep_if: &[PathBuf]) {
    if !keep_if.is_empty() && none_exists(keep_if) && still_names(path, file).unwrap_or(false) {
        let _ = std::fs::remove_file(path);
    }
}

/// The short write lock of one file; released when dropped.
#[derive(Debug)]
pub struct WriteLock {
    file: File,
}

impl Drop for WriteLock {
    /// Released explicitly, as [`OpenLock`] is: a child forked meanwhile (a
    /// tool, before its exec) shares the open file, and closing ours alone
    /// would leave the lock held until its copy closes too, refusing a
    /// [`WriteLock::try_acquire`] (a second compaction) meanwhile.
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl WriteLock {
    /// Take the lock in `path` if nobody holds it; `None` when somebody does.
    pub fn try_acquire(path: &Path) -> Result<Option<WriteLock>, StoreError> {
        match lock_exclusive(path, None)? {
            Locked::Mine(file) => Ok(Some(WriteLock { file })),
            Locked::Held(_) => Ok(None),
        }
    }

    /// Wait for and take the lock in `path` (created if missing), at most
    /// [`LOCK_WAIT`]: then the error is `LockHeld`.
    pub fn acquire(path: &Path) -> Result<WriteLock, StoreError> {
        WriteLock::acquire_within(path, LOCK_WAIT)
    }

    /// [`WriteLock::acquire`], waiting at most `limit`.
    pub fn acquire_within(path: &Path, limit: Duration) -> Result<WriteLock, StoreError> {
        match lock_exclusive(path, Some(limit))? {
            Locked::Mine(file) => Ok(WriteLock { file }),
            Locked::Held(_) => Err(StoreError::io(path, "lock", std::io::Error::other("lock refused while waiting"))),
        }
    }
}

/// Who holds a session open (defined beside [`crate::error::StoreError`],
/// whose `Busy` names it, so the error module needs nothing of the store).
pub use crate::error::Holder;

/// What the open lock file says after the pid when `glrs-compact` holds it.
const COMPACTION_WORD: &str = "glrs-compact";

/// A session held open by this process; released when dropped. When the
/// session was never saved (none of the files given to
/// [`OpenLock::removed_on_release_unless`] exists at release), the lock
/// file is removed too, so starting and quitting leaves nothing.
#[derive(Debug)]
pub struct OpenLock {
    file: File,
    /// The lock file.
    pub path: PathBuf,
    keep_if: Vec<PathBuf>,
}

impl Drop for OpenLock {
    /// Leaving the session: what its journal holds is made durable in the
    /// session and the journal emptied (best effort: a later writer or
    /// `cleanup` does it otherwise), while the open lock is still held.
    /// Then, for a session never saved, the lock file goes, still held.
    /// Last, the lock is released explicitly: a child forked meanwhile (a
    /// tool, before its exec) shares the open file, and closing ours alone
    /// would leave the lock held, refusing the next chat, until its copy
    /// closes too.
    fn drop(&mut self) {
        let journal = self.path.with_extension("journal");
        if super::journal::is_active(&journal) {
            let (session, lock) = (self.path.with_extension("json"), self.path.with_extension("lock"));
            let _ = super::journal::checkpoint_now(&session, &journal, &lock);
        }
        remove_on_release(&self.path, &self.file, &self.keep_if);
        let _ = self.file.unlock();
    }
}

impl OpenLock {
    /// Take the open lock without waiting. When another process has it, the
    /// error is `Busy` with that process's pid.
    pub fn try_acquire(path: &Path, id: &str) -> Result<OpenLock, StoreError> {
        OpenLock::try_acquire_as(path, id, Holder::Chat)
    }

    /// [`OpenLock::try_acquire`], saying who holds it.
    pub fn try_acquire_as(path: &Path, id: &str, holder: Holder) -> Result<OpenLock, StoreError> {
        match lock_exclusive(path, None)? {
            Locked::Mine(mut file) => {
                let mut text = std::process::id().to_string();
                if holder == Holder::Compaction {
                    text = format!("{text} {}", COMPACTION_WORD);
                }
                file.set_len(0)
                    .and_then(|()| file.seek(SeekFrom::Start(0)))
                    .and_then(|_| file.write_all(text.as_bytes()))
                    .map_err(|e| StoreError::io(path, "write", e))?;
                Ok(OpenLock { file, path: path.to_path_buf(), keep_if: Vec::new() })
            }
            Locked::Held(mut file) => {
                let (pid, by) = read_holder(&mut file);
                Err(StoreError::Busy { id: id.to_string(), pid, by })
            }
        }
    }

    /// Remove the lock file on release when none of `keep_if` exists then
    /// (the session's file: it was never saved, or not kept).
    pub fn removed_on_release_unless(mut self, keep_if: Vec<PathBuf>) -> OpenLock {
        self.keep_if = keep_if;
        self
    }

    /// Who holds the open lock in `path`: `None` when nobody does, else the
    /// holder's pid when it wrote one.
    pub fn holder(path: &Path) -> Result<Option<Option<u32>>, StoreError> {
        Ok(OpenLock::holder_of(path)?.map(|(pid, _)| pid))
    }

    /// [`OpenLock::holder`], with what kind of program it is. Asking takes
    /// a shared lock for an instant; a starter that meets it is not refused
    /// (see [`try_exclusive`]).
    pub fn holder_of(path: &Path) -> Result<Option<(Option<u32>, Holder)>, StoreError> {
        let mut file = match open_lock_file(path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(path, "open lock file", e)),
        };
        match file.try_lock_shared() {
            Ok(()) => {
                let _ = file.unlock();
                Ok(None)
            }
            Err(std::fs::TryLockError::WouldBlock) => Ok(Some(read_holder(&mut file))),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io(path, "lock", e)),
        }
    }
}

/// The holder's pid and kind. The winner of a race for the lock writes its
/// pid just after taking it, so an empty file is read again for a moment
/// (up to half a second) rather than refusing without the pid.
fn read_holder(file: &mut File) -> (Option<u32>, Holder) {
    for _ in 0..50 {
        if let Some(found) = read_once(file) {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    (None, Holder::Chat)
}

fn read_once(file: &mut File) -> Option<(Option<u32>, Holder)> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    let mut words = text.split_whitespace();
    let pid = words.next()?.parse().ok()?;
    let by = if words.next() == Some(COMPACTION_WORD) { Holder::Compaction } else { Holder::Chat };
    Some((Some(pid), by))
}

#[cfg(test)]
mod tests;
