//! The workspace's history as git can read it: every session's steps in
//! time order laid out as one line of commits, so that git's own blame and
//! log answer who wrote what (SPEC 24).
//!
//! Each step becomes up to two commits: one whose tree is the workspace as
//! the step found it (what changed since the commit before is nobody's:
//! a person, another program, a session with checkpoints off), then one
//! whose tree is what the step left (the step's). Undone steps (a files
//! rewind took them back) get no commit of their own, so a line a rewind
//! put back is owned again by the step that first wrote it.
//!
//! The commits are written by one `git fast-import` into a scratch
//! repository that borrows the shadow's objects (`objects/info/alternates`):
//! the trees are the checkpoints' own, nothing is copied, and the shadow
//! itself is never written (no ref, no object). The scratch repository is
//! removed when the history is dropped.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::steps::Step;
use crate::checkpoint::git::Git;

/// The branch the scratch repository's commits are on.
const BRANCH: &str = "refs/heads/history";

/// Who a commit of the history speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Step number `k` of the steps the history was built from.
    Step(usize),
    /// Nobody: changes made between sessions' steps.
    Nobody,
    /// Changes that include those of steps whose checkpoints are gone
    /// (removed by cleanup): they can no longer be attributed.
    Unknown,
}

impl Owner {
    fn tag(self) -> String {
        match self {
            Owner::Step(k) => format!("s{k}"),
            Owner::Nobody => "p".into(),
            Owner::Unknown => "u".into(),
        }
    }

    /// The owner a commit's author tag names.
    pub fn from_tag(tag: &str) -> Option<Owner> {
        match tag {
            "p" => Some(Owner::Nobody),
            "u" => Some(Owner::Unknown),
            _ => tag.strip_prefix('s').and_then(|k| k.parse().ok()).map(Owner::Step),
        }
    }
}

/// A history built in a scratch repository.
pub struct History {
    /// The scratch repository (removed on drop).
    _scratch: tempfile::TempDir,
    /// git on the scratch repository, the workspace as its work tree.
    pub git: Git,
    /// Its newest commit; `None` when no step could be laid out.
    pub tip: Option<String>,
    /// Steps whose checkpoints are gone.
    pub missing: usize,
    /// A removed session's checkpoints reach past the newest step: lines
    /// changed since it can no longer be attributed either.
    pub unknown_after_tip: bool,
}

/// The tree of each of `commits` in `git`'s repository, `None` for one
/// that is gone (one `git cat-file --batch-check`).
pub async fn trees(git: &Git, commits: &[&str]) -> Result<HashMap<String, Option<String>>, String> {
    let mut input = String::new();
    for c in commits {
        let _ = writeln!(input, "{c}^{{tree}}");
    }
    let out = git.run(&["cat-file", "--batch-check=%(objectname) %(objecttype)"], Some(input.as_bytes())).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = HashMap::new();
    for (commit, line) in commits.iter().zip(text.lines()) {
        let tree = match line.split_once(' ') {
            Some((hash, "tree")) if crate::checkpoint::is_hash(hash) => Some(hash.to_string()),
            _ => None,
        };
        found.insert((*commit).to_string(), tree);
    }
    Ok(found)
}

/// A scratch repository under `shadow` (in its `glrs-tmp`) that reads the
/// shadow's objects, with `workspace` as the work tree of the commands run.
async fn scratch(program: &Path, shadow: &Path, workspace: &Path) -> Result<(tempfile::TempDir, Git), String> {
    let tmp = shadow.join("glrs-tmp");
    crate::paths::ensure_private_dir(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("history-")
        .tempdir_in(&tmp)
        .map_err(|e| format!("cannot create a folder in {}: {e}", tmp.display()))?;
    let repo = dir.path().join("repo");
    let git = Git {
        program: program.to_path_buf(),
        dir: repo.clone(),
        work_tree: workspace.to_path_buf(),
        index: dir.path().join("index"),
    };
    git.init().await?;
    let objects = shadow.join("objects");
    std::fs::write(repo.join("objects/info/alternates"), format!("{}\n", objects.display()))
        .map_err(|e| format!("cannot write {}: {e}", repo.display()))?;
    Ok((dir, git))
}

/// Lay `steps` (in time order) out as one line of commits; `undone` steps
/// get no commit of their own.
pub async fn build(
    program: &Path,
    shadow: &Path,
    workspace: &Path,
    steps: &[Step],
    undone: &HashSet<(String, String)>,
    removed: &[(i64, i64)],
) -> Result<History, String> {
    let (dir, git) = scratch(program, shadow, workspace).await?;
    let mut commits: Vec<&str> = steps.iter().flat_map(|s| [s.before.as_str(), s.after.as_str()]).collect();
    commits.sort_unstable();
    commits.dedup();
    let trees = trees(&git, &commits).await?;
    let (script, missing, made) = script(steps, undone, &trees, removed);
    let tip = if made {
        git.run(&["fast-import", "--quiet", "--done"], Some(script.as_bytes())).await?;
        Some(git.run(&["rev-parse", "--verify", BRANCH], None).await?.text())
    } else {
        None
    };
    let last = steps.last().map_or(i64::MIN, |s| millis(&s.at));
    let unknown_after_tip = removed.iter().any(|(_, to)| *to > last);
    Ok(History { _scratch: dir, git, tip, missing, unknown_after_tip })
}

/// The fast-import stream for `steps`, how many steps' checkpoints are
/// gone, and whether any commit is made.
fn script(
    steps: &[Step],
    undone: &HashSet<(String, String)>,
    trees: &HashMap<String, Option<String>>,
    removed: &[(i64, i64)],
) -> (String, usize, bool) {
    let mut out = String::new();
    let (mut tip, mut missing, mut gap, mut made): (Option<&str>, usize, bool, bool) = (None, 0, false, false);
    let mut since = i64::MIN;
    for (k, step) in steps.iter().enumerate() {
        let tree_of = |c: &str| trees.get(c).cloned().flatten();
        let (Some(before), Some(after)) = (tree_of(&step.before), tree_of(&step.after)) else {
            missing += 1;
            gap = true;
            continue;
        };
        let secs = millis(&step.at) / 1000;
        let until = millis(&step.before_at);
        let overlaps = removed.iter().any(|(from, to)| *from <= until && *to >= since);
        since = millis(&step.at);
        if tip != Some(before.as_str()) {
            let owner = if gap || overlaps { Owner::Unknown } else { Owner::Nobody };
            commit(&mut out, owner, secs, &before);
            made = true;
        }
        gap = false;
        tip = trees.get(&step.before).and_then(|t| t.as_deref());
        if undone.contains(&(step.before.clone(), step.after.clone())) || after == before {
            continue;
        }
        commit(&mut out, Owner::Step(k), secs, &after);
        made = true;
        tip = trees.get(&step.after).and_then(|t| t.as_deref());
    }
    out.push_str("done\n");
    (out, missing, made)
}

/// One commit of `tree`, authored by `owner`'s tag.
fn commit(out: &mut String, owner: Owner, secs: i64, tree: &str) {
    let tag = owner.tag();
    let _ = write!(
        out,
        "commit {BRANCH}\nauthor {tag} <glrs> {secs} +0000\ncommitter glrs <glrs> {secs} +0000\ndata 0\n\
         deleteall\nM 040000 {tree} \"\"\n\n"
    );
}

/// Milliseconds since the epoch of a recorded time (0 when unreadable:
/// the commits' order is the steps' order whatever their times).
fn millis(at: &str) -> i64 {
    at.parse::<jiff::Timestamp>().map_or(0, |t| t.as_millisecond())
}

/// The path of `file` inside `workspace`, as git names it.
pub fn relative(workspace: &Path, file: &Path) -> Option<PathBuf> {
    file.strip_prefix(workspace).ok().map(Path::to_path_buf)
}
