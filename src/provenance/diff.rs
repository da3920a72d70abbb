//! `glrs-sessions diff ID [N]` (SPEC 24): what the session's own steps
//! changed, as git's unified diff (`git apply` takes it), whole or for the
//! turn of user message N. Steps that follow one another with nothing
//! changed between them make one span, diffed at once; where someone else
//! changed the workspace between two of the session's steps, a new span
//! starts, so their change is never shown as the session's.

use std::path::PathBuf;

use serde::Serialize;

use super::history::trees;
use super::steps::Step;
use super::{ProvenanceError, git_program, read_session};
use crate::checkpoint::git::Git;
use crate::store::{Located, Store};

/// A run of the session's steps with nothing else between them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// The checkpoint before its first step.
    pub from: String,
    /// The checkpoint after its last step.
    pub to: String,
    /// The entries of the user messages of its turns.
    pub turns: Vec<usize>,
    /// Per file: path, lines added, lines removed (binary: none).
    pub files: Vec<FileStat>,
    /// The unified diff (with binary patches).
    pub patch: String,
}

/// One file's lines added and removed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStat {
    /// Its path in the workspace.
    pub path: String,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// What the session changed: its workspace and spans.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiff {
    /// The session.
    pub session: String,
    /// The workspace its checkpoints recorded (none: it has none).
    pub workspace: Option<PathBuf>,
    /// Its spans, oldest first.
    pub spans: Vec<Span>,
}

/// The diff of session `at`, or of its turn at entry `turn`.
pub async fn diff(store: &Store, at: &Located, turn: Option<usize>) -> Result<SessionDiff, ProvenanceError> {
    let read = read_session(store, at)?;
    let steps: Vec<&Step> = read.steps.iter().filter(|s| turn.is_none_or(|t| s.turn == t)).collect();
    let mut out = SessionDiff { session: at.id.as_str().to_string(), workspace: None, spans: Vec::new() };
    let Some(workspace) = workspace_of(store, at)? else { return Ok(out) };
    out.workspace = Some(workspace.clone());
    if steps.is_empty() {
        return Ok(out);
    }
    let git = Git {
        program: git_program()?,
        dir: crate::checkpoint::shadow_of(&store.paths.data, &workspace),
        work_tree: workspace,
        index: PathBuf::from("/dev/null"),
    };
    for (from, to, turns) in spans(&git, &steps).await? {
        out.spans.push(span(&git, from, to, turns).await?);
    }
    Ok(out)
}

/// The workspace a session's checkpoints recorded.
fn workspace_of(store: &Store, at: &Located) -> Result<Option<PathBuf>, ProvenanceError> {
    let file = store.read(at)?.file;
    let (points, _) = crate::rewind::scan(&file.events);
    Ok(points.into_iter().next().map(|p| p.workspace))
}

/// The runs of `steps` whose boundaries hold the same tree.
async fn spans(git: &Git, steps: &[&Step]) -> Result<Vec<(String, String, Vec<usize>)>, ProvenanceError> {
    let commits: Vec<&str> = steps.iter().flat_map(|s| [s.before.as_str(), s.after.as_str()]).collect();
    let trees = trees(git, &commits).await.map_err(ProvenanceError::Git)?;
    let tree = |c: &str| trees.get(c).cloned().flatten();
    let mut out: Vec<(String, String, Vec<usize>)> = Vec::new();
    for step in steps {
        if tree(&step.before).is_none() || tree(&step.after).is_none() {
            return Err(ProvenanceError::Git(format!(
                "the checkpoints of entry {} of {} are gone (removed by cleanup?)",
                step.turn, step.session
            )));
        }
        match out.last_mut() {
            Some((_, to, turns)) if tree(to) == tree(&step.before) => {
                *to = step.after.clone();
                if turns.last() != Some(&step.turn) {
                    turns.push(step.turn);
                }
            }
            _ => out.push((step.before.clone(), step.after.clone(), vec![step.turn])),
        }
    }
    Ok(out)
}

async fn span(git: &Git, from: String, to: String, turns: Vec<usize>) -> Result<Span, ProvenanceError> {
    let patch_args = ["diff", "--binary", "--no-renames", "--no-color", &from, &to];
    let stat_args = ["diff", "--numstat", "-z", "--no-renames", &from, &to];
    let (patch, stat) = (git.run_bare(&patch_args), git.run_bare(&stat_args));
    let (patch, stat) = tokio::try_join!(patch, stat).map_err(ProvenanceError::Git)?;
    Ok(Span {
        files: numstat(&stat.stdout),
        patch: String::from_utf8_lossy(&patch.stdout).into_owned(),
        from,
        to,
        turns,
    })
}

/// `git diff --numstat -z`: `ADDED\tREMOVED\tPATH\0` per file.
fn numstat(out: &[u8]) -> Vec<FileStat> {
    out.split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .filter_map(|record| {
            let text = String::from_utf8_lossy(record);
            let mut cells = text.splitn(3, '\t');
            let (a, r, path) = (cells.next()?, cells.next()?, cells.next()?);
            Some(FileStat { path: path.to_string(), added: a.parse().unwrap_or(0), removed: r.parse().unwrap_or(0) })
        })
        .collect()
}
