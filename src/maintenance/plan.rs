//! The plan of a cleanup: the rules of [`super`] in their order, each a
//! step of its own that lists the rows it decides.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::{Action, LEFTOVER_AGE, Policy, Protection, Reason, Row, checkpoints, is_older, modified, newest, size_of};
use crate::SessionId;
use crate::checkpoint::lifecycle::Shadow;
use crate::store::listing::{self, Summary};
use crate::store::{OpenLock, Store};

/// Decide what cleanup removes now.
pub fn plan(store: &Store, policy: &Policy, now: SystemTime) -> Result<Vec<Row>> {
    let sessions = Sessions::gather(store)?;
    let mut rows = leftovers(store, &sessions.existing, now);
    let orphans: Vec<(SessionId, PathBuf)> =
        artifact_dirs(store).into_iter().filter(|(id, _)| !sessions.existing.contains(id.as_str())).collect();
    rows.extend(old_orphan_artifacts(&orphans, policy.prune_after, now));
    rows.extend(checkpoints::orphans(&sessions.shadows, &sessions.existing, now));
    let mut decided: HashSet<String> = HashSet::new();
    rows.extend(by_session_rules(&sessions, policy, now, &mut decided));
    if let (Some(max), Some(high)) = (policy.max_disk_bytes, policy.high_water_bytes) {
        over_budget(&sessions, &orphans, Budget { max, high }, &mut decided, &mut rows);
    }
    rows.extend(old_outputs(&crate::limits::output_dir(), policy.output_retention, now));
    Ok(rows)
}

/// What the session rules look at, gathered once.
struct Sessions<'a> {
    store: &'a Store,
    /// The store's sessions (not the legacy folder's), oldest first.
    oldest_first: Vec<Summary>,
    /// Their ids.
    existing: HashSet<String>,
    /// The keys' current sessions.
    current: HashSet<String>,
    /// The shadow repositories of checkpoints.
    shadows: Vec<Shadow>,
}

impl<'a> Sessions<'a> {
    fn gather(store: &'a Store) -> Result<Sessions<'a>> {
        let listing = listing::list(store)?;
        let mut oldest_first: Vec<Summary> = listing.sessions.into_iter().filter(|s| !s.legacy).collect();
        let existing: HashSet<String> = oldest_first.iter().map(|s| s.id.clone()).collect();
        let current: HashSet<String> = store.keys()?.into_values().map(|r| r.session).collect();
        oldest_first.sort_by_key(last_active_ms);
        let shadows = checkpoints::all(&store.paths.data);
        Ok(Sessions { store, oldest_first, existing, current, shadows })
    }

    /// The row of a session a rule lists: kept when something protects it.
    fn row(&self, s: &Summary, reason: Reason) -> Row {
        session_row(self.store, s, reason, &self.current, &self.shadows)
    }
}

/// A row that removes `path`.
fn removal(reason: Reason, session: Option<String>, bytes: u64, path: PathBuf) -> Row {
    Row { action: Action::Remove, reason, kept_by: None, session, bytes, path }
}

/// Leftovers in the sessions folder and the artifact folders: first the
/// journals to settle ([`unsettled_journal`]), then, by path, temporary
/// files and lock files of sessions that are gone, older than
/// [`LEFTOVER_AGE`].
fn leftovers(store: &Store, existing: &HashSet<String>, now: SystemTime) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut leftover_paths: Vec<PathBuf> = Vec::new();
    let mut scan = vec![store.paths.sessions.clone()];
    scan.extend(artifact_dirs(store).into_iter().map(|(_, p)| p));
    for dir in scan {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if let Some(session) = unsettled_journal(&name, &path, existing) {
                rows.push(removal(Reason::Interrupted, Some(session), size_of(&path), path));
            } else if is_leftover(store, &name, &path, existing) && is_older(modified(&path), now, Some(LEFTOVER_AGE)) {
                leftover_paths.push(path);
            }
        }
    }
    leftover_paths.sort();
    rows.extend(leftover_paths.into_iter().map(|path| removal(Reason::Leftover, None, size_of(&path), path)));
    rows
}

/// The session of a journal holding appends not yet checkpointed, of a
/// session no chat has open (a crash, or a writer that made only a few
/// appends): under the session's lock every committed append is made
/// durable in the session, and the journal goes (whatever its age: under
/// the lock this is what any writer does first).
fn unsettled_journal(name: &str, path: &Path, existing: &HashSet<String>) -> Option<String> {
    let stem = name.strip_suffix(".journal")?;
    let unsettled = existing.contains(stem)
        && crate::store::journal::is_active(path)
        && OpenLock::holder(&path.with_extension("open")).ok().flatten().is_none();
    unsettled.then(|| stem.to_string())
}

/// A temporary file of an interrupted write (not a pending artifact whose
/// entry landed), or a lock file or journal of a session that is gone and
/// that nothing holds.
fn is_leftover(store: &Store, name: &str, path: &Path, existing: &HashSet<String>) -> bool {
    use crate::compact::artifact;
    let named_pending = artifact::pending_target(name).is_some_and(|target| {
        artifact::session_of(&path.with_file_name(target))
            .is_some_and(|id| artifact::landed_names(store, &id).contains(target))
    });
    let temp = name.starts_with('.') && name.ends_with(".tmp") && !named_pending;
    let stale_lock = [".lock", ".open", ".journal", ".compact", ".scan"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .is_some_and(|stem| SessionId::is_id(stem) && !existing.contains(stem))
        && OpenLock::holder(path).ok().flatten().is_none();
    temp || stale_lock
}

/// Artifact folders whose session is gone, not changed for `pruneAfter`.
fn old_orphan_artifacts(orphans: &[(SessionId, PathBuf)], prune_after: Option<Duration>, now: SystemTime) -> Vec<Row> {
    orphans
        .iter()
        .filter(|(_, path)| is_older(newest(path), now, prune_after))
        .map(|(id, path)| removal(Reason::OrphanArtifact, Some(id.to_string()), size_of(path), path.clone()))
        .collect()
}

/// The rules on sessions, oldest first: stale, cron retention, over max
/// entries. Each session listed goes into `decided`.
fn by_session_rules(sessions: &Sessions, policy: &Policy, now: SystemTime, decided: &mut HashSet<String>) -> Vec<Row> {
    // In i128 milliseconds: no duration a config can hold makes this wrap
    // (it once did through `as i64`, and every session looked stale).
    let now_ms = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i128);
    let count = sessions.oldest_first.len();
    let mut rows = Vec::new();
    for (oldest_rank, s) in sessions.oldest_first.iter().enumerate() {
        let newest_first_rank = count - 1 - oldest_rank;
        if let Some(reason) = session_rule(s, newest_first_rank, policy, now_ms) {
            decided.insert(s.id.clone());
            rows.push(sessions.row(s, reason));
        }
    }
    rows
}

/// When a session was last active, for retention: `updatedAt`, or when it
/// entered the store if later. An imported session carries its source's
/// dates, so its age counts from its import at the earliest (SPEC 10), or
/// cleanup would remove what was just imported.
fn last_active_ms(s: &Summary) -> i64 {
    let updated = crate::time::parse_ms(&s.updated_at).unwrap_or(0);
    let entered = s.imported_at.as_deref().and_then(crate::time::parse_ms).unwrap_or(0);
    updated.max(entered)
}

/// The first rule that lists a session, if one does.
fn session_rule(s: &Summary, newest_first_rank: usize, policy: &Policy, now_ms: i128) -> Option<Reason> {
    let since = i128::from(last_active_ms(s));
    let older_than = |age: Option<Duration>| age.is_some_and(|age| since < now_ms - age.as_millis() as i128);
    if older_than(policy.prune_after) {
        Some(Reason::Stale)
    } else if s.key.as_deref().is_some_and(|k| k.starts_with("cron:")) && older_than(policy.cron_retention) {
        Some(Reason::CronRetention)
    } else if policy.max_entries.is_some_and(|max| newest_first_rank as u64 >= max) {
        Some(Reason::OverMaxEntries)
    } else {
        None
    }
}

/// `maxDiskBytes` and `highWaterBytes`.
#[derive(Clone, Copy)]
struct Budget {
    max: u64,
    high: u64,
}

/// While the sessions folder (with the checkpoints), less what `rows`
/// already remove, is over `budget.max`: orphan artifacts of any age, then
/// the oldest sessions not yet decided, until at or below `budget.high`.
fn over_budget(
    sessions: &Sessions,
    orphans: &[(SessionId, PathBuf)],
    budget: Budget,
    decided: &mut HashSet<String>,
    rows: &mut Vec<Row>,
) {
    let planned: u64 = rows.iter().filter(|r| r.action == Action::Remove).map(|r| r.bytes).sum();
    let store = sessions.store;
    let mut total = (size_of(&store.paths.sessions) + checkpoints::total(&sessions.shadows)).saturating_sub(planned);
    if total <= budget.max {
        return;
    }
    for (id, path) in orphans {
        if total <= budget.high {
            break;
        }
        if rows.iter().any(|r| &r.path == path) {
            continue;
        }
        let bytes = size_of(path);
        total = total.saturating_sub(bytes);
        rows.push(removal(Reason::OrphanArtifact, Some(id.to_string()), bytes, path.clone()));
    }
    for s in &sessions.oldest_first {
        if total <= budget.high {
            break;
        }
        if decided.contains(&s.id) {
            continue;
        }
        let row = sessions.row(s, Reason::OverBudget);
        if row.action == Action::Remove {
            total = total.saturating_sub(row.bytes);
            decided.insert(s.id.clone());
            rows.push(row);
        }
    }
}

/// Why a session may not be removed, if it may not.
fn protection(store: &Store, s: &Summary, current: &HashSet<String>) -> Option<Protection> {
    let open = SessionId::parse(&s.id).ok().and_then(|id| store.open_holder(&id).ok().flatten()).is_some();
    if open {
        Some(Protection::Open)
    } else if current.contains(&s.id) {
        Some(Protection::KeyCurrent)
    } else if s.pinned {
        Some(Protection::Pinned)
    } else {
        None
    }
}

fn session_row(store: &Store, s: &Summary, reason: Reason, current: &HashSet<String>, shadows: &[Shadow]) -> Row {
    let artifacts = store.paths.artifacts.join(&s.id);
    let bytes = size_of(&s.path) + size_of(&artifacts) + checkpoints::freed_by(shadows, &s.id);
    let kept_by = protection(store, s, current);
    Row {
        action: if kept_by.is_some() { Action::Keep } else { Action::Remove },
        reason,
        kept_by,
        session: Some(s.id.clone()),
        bytes,
        path: s.path.clone(),
    }
}

fn artifact_dirs(store: &Store) -> Vec<(SessionId, PathBuf)> {
    crate::compact::artifact::sessions_with_artifacts(store)
        .into_iter()
        .map(|id| {
            let path = store.paths.artifacts_of(&id);
            (id, path)
        })
        .filter(|(_, p)| p.is_dir())
        .collect()
}

/// The whole outputs of long tool results (`bash`, hooks, exec and MCP
/// tools) older than `retention`: a cache, kept so the model and the user
/// can read what was cut, not forever. `.log` files in the output folder
/// and in its sessions' folders (never through a link).
fn old_outputs(dir: &Path, retention: Option<Duration>, now: SystemTime) -> Vec<Row> {
    let Some(age) = retention else { return Vec::new() };
    let mut rows = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        // file_type does not follow a link: a linked folder is not entered.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            folders.push(entry.path());
        }
    }
    for folder in folders {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if !meta.is_file() || path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            if is_older(modified(&path), now, Some(age)) {
                let bytes = meta.len();
                rows.push(Row {
                    action: Action::Remove,
                    reason: Reason::OldOutput,
                    kept_by: None,
                    session: None,
                    bytes,
                    path,
                });
            }
        }
    }
    rows
}
