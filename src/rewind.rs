//! Rewind (SPEC 19): back to before a user message, in the conversation
//! (a fork up to just before it: the original stays whole), in the files
//! (the workspace as the checkpoint after that message recorded it), or
//! both. What the programs share: finding a session's checkpoints and the
//! one a rewind goes back to, and the files part on a session not open
//! elsewhere. The REPL does the same on its own open session.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::checkpoint::{Change, Recorded, Settings, Tracker, is_hash};
use crate::store::{Append, Entry, Located, Parsed, Store};

/// One `checkpoint` entry of a session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// Its entry number.
    pub entry: usize,
    /// When it was taken.
    pub at: String,
    /// The commit in the shadow repository.
    pub commit: String,
    /// Paths changed since the previous checkpoint (the first ones).
    pub files: Vec<String>,
    /// How many more changed.
    pub more_files: u64,
    /// Files left out for their size.
    pub too_large: Vec<String>,
    /// The workspace recorded.
    pub workspace: PathBuf,
}

/// One user message (what `/rewind` offers).
#[derive(Debug, Clone)]
pub struct Message {
    /// Its entry number.
    pub entry: usize,
    /// What the user said.
    pub text: String,
}

impl Message {
    /// Its first line.
    pub fn first_line(&self) -> &str {
        self.text.lines().next().unwrap_or("")
    }
}

/// The checkpoints and user messages of a session, in file order. A
/// checkpoint whose commit is not a hash (a hand-edited file) is left out.
pub fn scan<E: crate::store::EntryText>(events: &[E]) -> (Vec<Point>, Vec<Message>) {
    let (mut points, mut messages) = (Vec::new(), Vec::new());
    for (i, raw) in events.iter().enumerate() {
        match Parsed::from_text(raw.text()) {
            Parsed::Known(Entry::Checkpoint { at, commit, files, more_files, workspace, too_large, .. })
                if is_hash(&commit) =>
            {
                points.push(Point {
                    entry: i + 1,
                    at,
                    commit,
                    files,
                    more_files,
                    too_large,
                    workspace: workspace.into(),
                })
            }
            Parsed::Known(Entry::User { text, steer: false, internal: None, .. }) => {
                messages.push(Message { entry: i + 1, text })
            }
            _ => {}
        }
    }
    (points, messages)
}

/// The checkpoint a rewind to entry `n` goes back to: the first at or
/// after it (taken before the first change that followed it). `None`: no
/// tool changed files after entry `n` (or checkpoints were off).
pub fn target(points: &[Point], n: usize) -> Option<&Point> {
    points.iter().find(|p| p.entry >= n)
}

/// What a files rewind did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesRewound {
    /// The checkpoint gone back to.
    pub checkpoint: String,
    /// What changed (or, in a dry run, would).
    pub files: Vec<Change>,
    /// The entry recording the present as it was before: rewinding the
    /// files to it undoes this rewind. `None` in a dry run.
    pub undo_entry: Option<usize>,
}

/// The files part of a rewind of a session not open elsewhere: refused
/// (busy, exit 4) while a chat has it open; the checkpoint of the present
/// is appended to the session. `dry_run` changes nothing.
pub async fn rewind_files(
    store: &Store,
    at: &Located,
    settings: Settings,
    target: &Point,
    dry_run: bool,
) -> Result<FilesRewound> {
    let mut tracker = Tracker::at(&store.paths.data, &target.workspace, &at.id, settings);
    if let Some(why) = tracker.unavailable() {
        bail!("cannot rewind the files of {}: {why}", at.id);
    }
    if dry_run {
        let files = tracker.preview(&target.commit).await.map_err(anyhow::Error::msg)?;
        return Ok(FilesRewound { checkpoint: target.commit.clone(), files, undo_entry: None });
    }
    let _open = store.open_lock(&at.id)?;
    let (present, files) = tracker.rewind_to(&target.commit).await.map_err(anyhow::Error::msg)?;
    let undo_entry = record_present(store, at, &present, target)?;
    Ok(FilesRewound { checkpoint: target.commit.clone(), files, undo_entry: Some(undo_entry) })
}

/// Append the checkpoint of the present (and a notice saying what was
/// done) to the session; the checkpoint's entry number.
fn record_present(store: &Store, at: &Located, present: &Recorded, target: &Point) -> Result<usize> {
    let notice = Entry::Notice {
        at: crate::time::now(),
        text: format!("files rewound to entry {} (checkpoint {})", target.entry, short(&target.commit)),
    };
    store.append(&at.id, Append::new().entry(&present.rewind_entry(&target.commit))?.entry(&notice)?)?;
    let total = store.read(at)?.file.events.len();
    total.checked_sub(1).context("the session lost its entries while rewinding")
}

/// Before session `at` is removed, note in the shadow of its workspace
/// the time its checkpoints span (`checkpoint::lifecycle::remember_removed`),
/// so blame can say which lines it can no longer attribute. Best effort.
pub fn note_removal(store: &Store, at: &Located) {
    let Ok(loaded) = store.read(at) else { return };
    let (points, _) = scan(&loaded.file.events);
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        crate::checkpoint::lifecycle::remember_removed(
            &store.paths.data,
            &first.workspace,
            &at.id,
            &first.at,
            &last.at,
        );
    }
}

/// A commit's first 12 characters.
pub fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
