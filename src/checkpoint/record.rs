//! Taking a checkpoint: the workspace recorded into the session's index in
//! the shadow (`super::snapshot`: an unchanged workspace costs about a `git
//! status`), and a commit on the session's ref when the tree changed. Files
//! over `checkpoints.maxFileBytes` are left out and named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::git::Git;
use super::restore::{Change, changes};
use super::snapshot::{Snapshot, seed, snapshot};
use super::watch::Watch;
use super::{Settings, Unavailable, find_git, index_path, ref_name, shadow_of, workspace_of};
use crate::SessionId;
use crate::store::Entry;
use crate::store::entry::CHECKPOINT_FILES_LISTED;

/// A checkpoint that took longer than this is worth a word (once).
const SLOW: Duration = Duration::from_secs(1);

/// A checkpoint taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The commit.
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

impl Recorded {
    /// The `checkpoint` entry recording it.
    pub fn entry(&self) -> Entry {
        self.entry_with(None)
    }

    /// The entry of a files rewind's checkpoint of the present, which went
    /// back to `target`: the steps from `target` to here are undone.
    pub fn rewind_entry(&self, target: &str) -> Entry {
        self.entry_with(Some(target.to_string()))
    }

    fn entry_with(&self, rewound_to: Option<String>) -> Entry {
        Entry::Checkpoint {
            at: crate::time::now(),
            commit: self.commit.clone(),
            files: self.files.clone(),
            more_files: self.more_files,
            workspace: self.workspace.to_string_lossy().into_owned(),
            too_large: self.too_large.clone(),
            rewound_to,
        }
    }
}

/// The newest checkpoint of the session: its commit and tree.
#[derive(Debug, Clone)]
struct Last {
    commit: String,
    tree: String,
}

/// Where checkpoints of one session are taken, and what it has said.
#[derive(Debug)]
pub struct Tracker {
    state: Result<Git, Unavailable>,
    settings: Settings,
    session: SessionId,
    /// The newest checkpoint, once looked up (`None` inside: there is none).
    last: Option<Option<Last>>,
    /// The tree the session's index was last written to by this tracker
    /// (`None`: not known, so the next snapshot writes it again).
    index_tree: Option<String>,
    /// The workspace as captured after the last snapshot into the
    /// session's index: an unchanged one runs no git (see `super::watch`).
    watch: Option<Watch>,
    /// A user message came since the last checkpoint: the next one is
    /// recorded even when nothing changed (rewinding to that message needs it).
    due: bool,
    /// A step's checkpoint was taken since the last user message: the turn
    /// ends with one more (what its last step left), so that what the
    /// session changed is told apart from what anyone did between turns.
    stepped: bool,
    said_unavailable: bool,
    said_slow: bool,
    /// A checkpoint slower than this is said (once): [`SLOW`], but for tests.
    pub(super) slow_after: Duration,
    /// Files already named as too large.
    named: std::collections::BTreeSet<String>,
}

impl Tracker {
    /// The tracker of session `id`, started in `cwd`, its shadow under `data`.
    pub fn new(data: &Path, cwd: &Path, id: &SessionId, settings: Settings) -> Tracker {
        Tracker::at(data, &workspace_of(cwd), id, settings)
    }

    /// The tracker of session `id` recording `workspace` (as an entry names it).
    pub fn at(data: &Path, workspace: &Path, id: &SessionId, settings: Settings) -> Tracker {
        let state = if !settings.enabled {
            Err(Unavailable::Off)
        } else {
            match find_git() {
                None => Err(Unavailable::NoGit),
                Some(program) => {
                    let work_tree = workspace.to_path_buf();
                    let dir = shadow_of(data, &work_tree);
                    let index = index_path(&dir, id);
                    Ok(Git { program, dir, work_tree, index })
                }
            }
        };
        Tracker {
            state,
            settings,
            session: id.clone(),
            last: None,
            index_tree: None,
            watch: None,
            due: true,
            stepped: false,
            said_unavailable: false,
            said_slow: false,
            slow_after: SLOW,
            named: Default::default(),
        }
    }

    /// Run `program` as git from now on (a test shows when none runs).
    #[cfg(test)]
    pub(super) fn set_git_program(&mut self, program: PathBuf) {
        if let Ok(git) = &mut self.state {
            git.program = program;
        }
    }

    /// Why no checkpoints are taken, if they are not.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        self.state.as_ref().err()
    }

    /// The workspace recorded, when checkpoints are on.
    pub fn workspace(&self) -> Option<&Path> {
        self.state.as_ref().ok().map(|g| g.work_tree.as_path())
    }

    /// The git of this session (its shadow, workspace and index).
    pub(super) fn git(&self) -> Result<&Git, Unavailable> {
        self.state.as_ref().map_err(Clone::clone)
    }

    /// A user message was recorded.
    pub fn user_message(&mut self) {
        self.due = true;
        self.stepped = false;
    }

    /// Take the checkpoint that ends a turn (SPEC 24): what the turn's last
    /// step left, when a step's checkpoint was taken in it and the
    /// workspace changed since; `None` otherwise.
    pub async fn record_turn_end(&mut self) -> Result<(Option<Recorded>, Vec<String>), String> {
        if !self.stepped {
            return Ok((None, Vec::new()));
        }
        let recorded = self.record(false).await;
        self.stepped = false;
        recorded
    }

    /// What to tell the user once about checkpoints being unavailable
    /// (no git): `None` after the first time, and when they are off by choice.
    pub fn first_notice(&mut self) -> Option<String> {
        match &self.state {
            Err(Unavailable::NoGit) if !self.said_unavailable => {
                self.said_unavailable = true;
                Some(Unavailable::NoGit.to_string())
            }
            _ => None,
        }
    }

    async fn load_last(&mut self, git: &Git) -> Result<Option<Last>, String> {
        if let Some(last) = &self.last {
            return Ok(last.clone());
        }
        let file = git.dir.join(ref_name(&self.session));
        let last = match std::fs::read_to_string(&file) {
            Ok(commit) => {
                let commit = commit.trim().to_string();
                let tree = git.run(&["rev-parse", "--verify", &format!("{commit}^{{tree}}")], None).await?.text();
                Some(Last { commit, tree })
            }
            Err(_) => None,
        };
        self.last = Some(last.clone());
        Ok(last)
    }

    /// Take a checkpoint: `None` when the workspace is as the last one
    /// recorded it and no user message came since (`force` records it all
    /// the same). The second value is what to tell the user: files left out
    /// for their size (each once), a slow checkpoint (once).
    pub async fn record(&mut self, force: bool) -> Result<(Option<Recorded>, Vec<String>), String> {
        let git = self.git().map_err(|e| e.to_string())?.clone();
        let seeded = !git.index.exists() && seed(&git.dir, &git.index);
        let snap = match snapshot(&git, &self.settings, self.index_tree.as_deref(), &mut self.watch).await {
            Err(_) if seeded => {
                let _ = std::fs::remove_file(&git.index);
                snapshot(&git, &self.settings, None, &mut self.watch).await?
            }
            done => done?,
        };
        self.index_tree = Some(snap.tree.clone());
        self.stepped |= !force;
        let mut slow = Vec::new();
        let why = format!("larger than checkpoints.maxFileBytes, {} bytes", self.settings.max_file_bytes);
        slow.extend(self.name_once(&snap.too_large, &why));
        slow.extend(self.name_once(&snap.no_commit, "git repositories without a commit, which git cannot record"));
        if snap.took > self.slow_after && !self.said_slow {
            self.said_slow = true;
            slow.push(slow_notice(&git.work_tree, &snap));
        }
        let last = self.load_last(&git).await?;
        let unchanged = last.as_ref().is_some_and(|l| l.tree == snap.tree);
        if unchanged && !self.due && !force {
            return Ok((None, slow));
        }
        let (commit, files, more_files) = match last {
            Some(l) if l.tree == snap.tree => (l.commit, Vec::new(), 0),
            previous => self.commit(&git, &snap.tree, previous.as_ref()).await?,
        };
        self.last = Some(Some(Last { commit: commit.clone(), tree: snap.tree }));
        self.due = false;
        let recorded = Recorded { commit, files, more_files, too_large: snap.too_large, workspace: git.work_tree };
        Ok((Some(recorded), slow))
    }

    /// A notice naming the `paths` not named before, left out for `why`.
    fn name_once(&mut self, paths: &[String], why: &str) -> Option<String> {
        let new: Vec<&str> = paths.iter().filter(|p| !self.named.contains(*p)).map(String::as_str).collect();
        if new.is_empty() {
            return None;
        }
        let text = format!("checkpoint: left out ({why}), so a rewind will not restore: {}", new.join(", "));
        self.named.extend(paths.iter().cloned());
        Some(text)
    }

    /// What going back to checkpoint `target` would change, changing
    /// nothing (the session's index is left as it is: a copy is used).
    pub async fn preview(&mut self, target: &str) -> Result<Vec<Change>, String> {
        let mut all = self.preview_all(&[target.to_string()]).await?;
        Ok(all.pop().unwrap_or_default())
    }

    /// [`Tracker::preview`] for each of `targets`, the present recorded once.
    pub async fn preview_all(&mut self, targets: &[String]) -> Result<Vec<Vec<Change>>, String> {
        let git = self.git().map_err(|e| e.to_string())?;
        let scratch = git.dir.join("glrs-tmp");
        crate::paths::ensure_private_dir(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let copy = tempfile::NamedTempFile::new_in(&scratch)
            .map_err(|e| format!("cannot create a file in {}: {e}", scratch.display()))?;
        if git.index.is_file() {
            std::fs::copy(&git.index, copy.path()).map_err(|e| format!("cannot copy {}: {e}", git.index.display()))?;
        } else {
            // git reads an empty file as a broken index: none at all is an empty one.
            let _ = std::fs::remove_file(copy.path());
        }
        let temporary = git.with_index(copy.path().to_path_buf());
        // Its own index: the session's capture is not its.
        let snap = snapshot(&temporary, &self.settings, self.index_tree.as_deref(), &mut None).await?;
        let mut all = Vec::new();
        for target in targets {
            all.push(changes(&temporary, &snap.tree, target).await?);
        }
        Ok(all)
    }

    /// Take a checkpoint of the present and make the workspace what
    /// checkpoint `target` recorded. Returns the checkpoint of the present
    /// (record it: going back to it undoes the rewind) and what changed.
    pub async fn rewind_to(&mut self, target: &str) -> Result<(Recorded, Vec<Change>), String> {
        let (present, _) = self.record(true).await?;
        let present = present.ok_or("no checkpoint of the present was taken")?;
        let git = self.git().map_err(|e| e.to_string())?.clone();
        let changed = changes(&git, &present.commit, target).await?;
        if !changed.is_empty() {
            // The index follows the workspace to the target's tree.
            self.index_tree = None;
            self.watch = None;
            super::restore::apply(&git, &present.commit, target).await?;
        }
        Ok((present, changed))
    }

    /// Commit `tree` on the session's ref; the paths changed since `parent`.
    async fn commit(&self, git: &Git, tree: &str, parent: Option<&Last>) -> Result<(String, Vec<String>, u64), String> {
        let message = format!("glrs checkpoint of session {}", self.session);
        let mut args = vec!["commit-tree", tree, "-m", &message];
        if let Some(p) = parent {
            args.extend(["-p", &p.commit]);
        }
        let made = async {
            let commit = git.run(&args, None).await?.text();
            git.run(&["update-ref", &ref_name(&self.session), &commit], None).await?;
            Ok::<_, String>(commit)
        };
        let Some(p) = parent else { return Ok((made.await?, Vec::new(), 0)) };
        // Which paths changed does not wait for the commit.
        let diff = ["diff-tree", "-r", "-z", "--no-renames", "--name-only", &p.tree, tree];
        let listed = git.run(&diff, None);
        let (commit, changed) = tokio::try_join!(made, listed)?;
        let mut files = changed.records();
        let more = files.len().saturating_sub(CHECKPOINT_FILES_LISTED) as u64;
        files.truncate(CHECKPOINT_FILES_LISTED);
        Ok((commit, files, more))
    }
}

/// What to say when a checkpoint was slow: the numbers and the way out.
fn slow_notice(workspace: &Path, snap: &Snapshot) -> String {
    format!(
        "checkpoint: recording {} took {:.1} s ({} files): it runs before each step that changes files. \
         Leave large or generated folders out with checkpoints.exclude in the config (gitignore patterns, \
         e.g. [\"target/\", \"node_modules/\", \"*.iso\"]), or turn checkpoints off with checkpoints.enabled: false",
        workspace.display(),
        snap.took.as_secs_f64(),
        snap.files
    )
}
