//! Cleanup and retention (SPEC section 10). `plan` decides, `enforce`
//! removes exactly what `plan` listed. Every row says why. Never removed:
//! a session open in a chat, a key's current session, a pinned session, or
//! anything outside the data folder.
//!
//! Rules, in order: leftovers (temporary files of interrupted writes and
//! lock files and journals of sessions that no longer exist, both older
//! than an hour so a write in progress is never disturbed; the active
//! journal holding appends not yet checkpointed, settled under the lock; orphan artifacts older than
//! `pruneAfter`); sessions not updated for `pruneAfter` (stale); sessions of
//! `cron:` keys older than `cronRetention`; sessions beyond the newest
//! `maxEntries`; then, while the sessions folder is over `maxDiskBytes`:
//! orphan artifacts of any age, then the oldest sessions, until at or below
//! `highWaterBytes`.

pub mod auto;
mod checkpoints;
mod plan;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::SessionId;
use crate::checkpoint::lifecycle::Forgotten;
use crate::config::{Amount, Config, MaintenanceMode, parse_count_rule, parse_duration_rule, parse_size_bytes};
use crate::store::Store;

pub use plan::plan;

/// Leftovers younger than this are left alone: a write may be under way.
const LEFTOVER_AGE: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
/// What cleanup does with a row.
pub enum Action {
    /// Remove it.
    Remove,
    /// Keep it: something protects it.
    Keep,
}

/// The rule that put a row in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Not updated for `pruneAfter`.
    Stale,
    /// A `cron:` key's session older than `cronRetention`.
    CronRetention,
    /// Beyond the newest `maxEntries`.
    OverMaxEntries,
    /// Removed to bring the folder under `highWaterBytes`.
    OverBudget,
    /// An artifacts folder whose session is gone.
    OrphanArtifact,
    /// A temporary file of an interrupted write, or a lock file or journal
    /// of a session that is gone.
    Leftover,
    /// A journal holding appends not yet checkpointed, of a session no
    /// chat has open (a crash, or a writer that stopped after a few
    /// appends): they are made durable in the session and it goes.
    Interrupted,
    /// A tool's whole output (`$XDG_CACHE_HOME/glrs/output/`) older than
    /// `outputRetention`.
    OldOutput,
    /// A shadow repository of checkpoints no existing session has
    /// checkpoints in (SPEC 19).
    OrphanCheckpoints,
}

impl Reason {
    /// The words cleanup prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Stale => "stale",
            Reason::CronRetention => "cron retention",
            Reason::OverMaxEntries => "over max entries",
            Reason::OverBudget => "over budget",
            Reason::OrphanArtifact => "orphan artifact",
            Reason::Leftover => "leftover",
            Reason::Interrupted => "unsettled journal",
            Reason::OldOutput => "old output",
            Reason::OrphanCheckpoints => "orphan checkpoints",
        }
    }
}

/// What keeps a session a rule would remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Open in a chat.
    Open,
    /// A key's current session.
    KeyCurrent,
    /// Pinned.
    Pinned,
}

impl Protection {
    /// The words cleanup prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Protection::Open => "open",
            Protection::KeyCurrent => "key-current",
            Protection::Pinned => "pinned",
        }
    }
}

/// One thing cleanup acts on (or keeps, and why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Remove, or keep.
    pub action: Action,
    /// The rule that listed it.
    pub reason: Reason,
    /// For a kept row, what protects it.
    pub kept_by: Option<Protection>,
    /// The session it belongs to (a session, or an orphan's former owner).
    pub session: Option<String>,
    /// Bytes it frees.
    pub bytes: u64,
    /// The file or folder.
    pub path: PathBuf,
}

impl Row {
    /// `stale`, `cron retention`, `over max entries`, `over budget`,
    /// `orphan artifact`, `leftover`; for a kept row, what protects it and
    /// the rule it escaped (`keep: pinned (stale)`).
    pub fn reason_text(&self) -> String {
        match self.kept_by {
            Some(p) => format!("keep: {} ({})", p.as_str(), self.reason.as_str()),
            None => self.reason.as_str().to_string(),
        }
    }
}

/// The JSON of `cleanup --json`: the reason as the words printed.
impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut row = serializer.serialize_struct("Row", 5)?;
        row.serialize_field("action", &self.action)?;
        row.serialize_field("reason", &self.reason_text())?;
        row.serialize_field("session", &self.session)?;
        row.serialize_field("bytes", &self.bytes)?;
        row.serialize_field("path", &self.path)?;
        row.end()
    }
}

/// The settings of `session.maintenance`. `None` is a rule turned off
/// with `false`.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Whether cleanup removes (`enforce`) or only reports (`warn`).
    pub enforce: bool,
    /// `pruneAfter`: sessions not updated for this long are stale.
    pub prune_after: Option<Duration>,
    /// `maxEntries`: how many sessions to keep.
    pub max_entries: Option<u64>,
    /// `maxDiskBytes`: the sessions folder's budget.
    pub max_disk_bytes: Option<u64>,
    /// `highWaterBytes`: what an over-budget cleanup brings it down to.
    pub high_water_bytes: Option<u64>,
    /// `cronRetention`: how long sessions of `cron:` keys are kept.
    pub cron_retention: Option<Duration>,
    /// How often `glrs-chat` runs the plan by itself; `None`: never.
    pub check_every: Option<Duration>,
    /// `outputRetention`: how long tools' whole outputs are kept.
    pub output_retention: Option<Duration>,
}

impl Policy {
    /// The policy of `session.maintenance`, checked.
    pub fn from_config(config: &Config) -> Result<Policy> {
        let m = &config.session.maintenance;
        let secs = |v: &Option<Amount>, default: u64, key: &str| -> Result<Option<Duration>> {
            Ok(match v {
                Some(v) => parse_duration_rule(v).with_context(|| format!("session.maintenance.{key}"))?,
                None => Some(default),
            }
            .map(Duration::from_secs))
        };
        let bytes = |v: &Option<Amount>, key: &str| -> Result<Option<u64>> {
            v.as_ref().map(|v| parse_size_bytes(v).with_context(|| format!("session.maintenance.{key}"))).transpose()
        };
        let max_disk_bytes = bytes(&m.max_disk_bytes, "maxDiskBytes")?;
        let max_entries = match &m.max_entries {
            Some(v) => parse_count_rule(v).context("session.maintenance.maxEntries")?,
            None => Some(500),
        };
        Ok(Policy {
            enforce: m.mode == Some(MaintenanceMode::Enforce),
            prune_after: secs(&m.prune_after, 30 * 86_400, "pruneAfter")?,
            max_entries,
            // 80% without overflow, whatever the budget.
            high_water_bytes: bytes(&m.high_water_bytes, "highWaterBytes")?
                .or(max_disk_bytes.map(|b| (u128::from(b) * 8 / 10) as u64)),
            max_disk_bytes,
            cron_retention: secs(&m.cron_retention, 86_400, "cronRetention")?,
            check_every: secs(&m.check_every, 86_400, "checkEvery")?,
            output_retention: secs(&m.output_retention, 7 * 86_400, "outputRetention")?,
        })
    }
}

fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path).map(|d| d.flatten().map(|e| size_of(&e.path())).sum()).unwrap_or(0)
}

fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The newest modification time in a folder (or of a file).
fn newest(path: &Path) -> SystemTime {
    let own = modified(path);
    std::fs::read_dir(path)
        .map(|d| d.flatten().map(|e| modified(&e.path())).max().unwrap_or(own).max(own))
        .unwrap_or(own)
}

/// True when `time` is more than `age` before `now`; a rule turned off
/// (`None`) never makes anything old.
fn is_older(time: SystemTime, now: SystemTime, age: Option<Duration>) -> bool {
    age.is_some_and(|age| now.duration_since(time).is_ok_and(|d| d > age))
}

/// Removes an old output file: only a `.log` file directly inside the
/// output folder or a session's folder in it (not a link), never what a
/// row names elsewhere.
fn remove_old_output(path: &Path) -> std::io::Result<()> {
    let dir = crate::limits::output_dir();
    let real_dir = dir.canonicalize().ok();
    let parent = path.parent();
    let in_session_folder = parent.is_some_and(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        && parent.and_then(Path::parent).and_then(|p| p.canonicalize().ok()) == real_dir;
    let inside = parent.and_then(|p| p.canonicalize().ok()) == real_dir || in_session_folder;
    let meta = std::fs::symlink_metadata(path)?;
    if !inside || !meta.is_file() || path.extension().is_none_or(|e| e != "log") {
        return Err(std::io::Error::other(format!("not an output file of {}; left alone", dir.display())));
    }
    std::fs::remove_file(path)
}

/// Remove what `plan` said. A session opened since is skipped (the open
/// lock is taken for the removal). Returns the rows that could not be done.
pub fn enforce(store: &Store, rows: &[Row]) -> Vec<(Row, String)> {
    enforce_forgetting(store, rows).0
}

/// [`enforce`], with the shadow repositories the removed sessions shared
/// with others (to be swept: `checkpoint::lifecycle::sweep`).
pub fn enforce_forgetting(store: &Store, rows: &[Row]) -> (Vec<(Row, String)>, Vec<Forgotten>) {
    let mut forgotten = Vec::new();
    let mut failed = Vec::new();
    let root = store.paths.data.canonicalize().unwrap_or_else(|_| store.paths.data.clone());
    for row in rows.iter().filter(|r| r.action == Action::Remove) {
        if row.reason == Reason::OldOutput {
            if let Err(e) = remove_old_output(&row.path) {
                failed.push((row.clone(), e.to_string()));
            }
            continue;
        }
        let inside = row.path.canonicalize().map(|p| p.starts_with(&root)).unwrap_or(false);
        if !inside {
            failed.push((row.clone(), "not inside the data folder; left alone".into()));
            continue;
        }
        // Every removal goes through the store, which checks the thing is
        // what the row says it is.
        let result = match (row.reason, &row.session) {
            (Reason::Stale | Reason::CronRetention | Reason::OverMaxEntries | Reason::OverBudget, Some(id)) => {
                // Its checkpoints go with it (SPEC 19).
                store
                    .resolve(id)
                    .and_then(|at| {
                        crate::rewind::note_removal(store, &at);
                        store.remove(&at).map(|()| at)
                    })
                    .map(|at| {
                        forgotten.extend(crate::checkpoint::lifecycle::forget(&store.paths.data, &at.id));
                    })
            }
            (Reason::OrphanCheckpoints, _) => {
                if let Err(e) = checkpoints::remove_orphan(&store.paths.data, &row.path) {
                    failed.push((row.clone(), e));
                }
                continue;
            }
            (Reason::OrphanArtifact, Some(id)) => {
                SessionId::parse(id).and_then(|id| store.remove_orphan_artifacts(&id))
            }
            (Reason::Leftover, _) => store.remove_leftover(&row.path),
            (Reason::Interrupted, Some(id)) => SessionId::parse(id).and_then(|id| store.settle(&id)).map(drop),
            // Removed above: it is not in the data folder.
            (Reason::OldOutput, _) => continue,
            (_, None) => {
                failed.push((row.clone(), "a session rule without its session; left alone".into()));
                continue;
            }
        }
        .map_err(|e| e.report().to_string());
        if let Err(e) = result {
            failed.push((row.clone(), e));
        }
    }
    (failed, forgotten)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::inplace::{self, StopAt};
    use crate::store::journal;
    use crate::store::{Append, Entry};

    #[test]
    fn the_journal_of_an_interrupted_append_is_settled_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let paths = crate::Paths::from_vars(Some(data.clone()), None, None, Some(dir.path().to_path_buf())).unwrap();
        let store = Store::new(paths);
        let id = store.create("/w").unwrap();
        let note = |t: &str| Entry::Notice { at: crate::time::now(), text: t.into() };
        store.append(&id, Append::new().entry(&note("one")).unwrap()).unwrap();
        let change = Append::new().entry(&note("two")).unwrap();
        let (path, journal) = (store.session_path(&id), store.journal_path(&id));
        let (mut state, _) = journal::recover(&path, &journal).unwrap();
        inplace::append_stopping(&path, &journal, &mut state, &change, None, &crate::time::now(), StopAt::AfterRecord)
            .unwrap();
        assert!(journal::is_active(&journal));
        let policy = Policy::from_config(&Config::default()).unwrap();
        let rows = plan(&store, &policy, SystemTime::now()).unwrap();
        let row = rows.iter().find(|r| r.path == journal).expect("the journal is listed");
        assert_eq!(
            (row.action, row.reason, row.session.as_deref()),
            (Action::Remove, Reason::Interrupted, Some(id.as_str()))
        );
        assert!(enforce(&store, &rows).is_empty());
        assert!(!journal.exists());
        let file = store.read(&store.locate(&id).unwrap()).unwrap().file;
        assert_eq!(file.events.len(), 2, "the committed write is kept");
        // A journal whose session is gone is an old leftover like a lock file.
        std::fs::write(store.paths.sessions.join("0badc0de.journal"), b"").unwrap();
        let later = SystemTime::now() + LEFTOVER_AGE * 2;
        let rows = plan(&store, &policy, later).unwrap();
        assert!(rows.iter().any(|r| r.path.ends_with("0badc0de.journal") && r.reason == Reason::Leftover), "{rows:?}");
    }
}
