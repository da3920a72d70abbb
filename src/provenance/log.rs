//! `glrs-sessions log PATH` (SPEC 24): the sessions and turns that changed
//! a file or folder, newest first, with lines added and removed: `git log
//! --numstat` over the workspace's history (`super::history`), keeping the
//! sessions' steps and summing them by turn. Undone steps have no commit
//! there, so a rewound turn is absent.

use std::path::Path;

use serde::Serialize;

use super::history::{self, Owner};
use super::{ProvenanceError, gather, git_program};
use crate::store::Store;

/// One turn that changed the path.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The session.
    pub session: String,
    /// The entry of the turn's user message.
    pub entry: usize,
    /// When its last step that changed the path ended.
    pub at: String,
    /// Lines added (binary files count none).
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// The first line of the turn's user message.
    pub prompt: String,
}

/// The turns that changed `path`, newest first.
pub async fn log(store: &Store, path: &Path) -> Result<Vec<Row>, ProvenanceError> {
    let workspace = super::workspace_of(&store.paths.data, path)?;
    let program = git_program()?;
    let gathered = gather(store, &workspace)?;
    let history = history::build(
        &program,
        &workspace.shadow,
        &workspace.root,
        &gathered.steps,
        &gathered.undone,
        &gathered.removed,
    )
    .await
    .map_err(ProvenanceError::Git)?;
    let Some(tip) = &history.tip else { return Ok(Vec::new()) };
    let real = super::resolved(path);
    let rel = history::relative(&workspace.root, &real).ok_or_else(|| ProvenanceError::NoWorkspace(path.into()))?;
    let rel = if rel.as_os_str().is_empty() { ".".to_string() } else { rel.to_string_lossy().into_owned() };
    let args = ["log", "--format=@%an", "--numstat", "--no-renames", tip.as_str(), "--", rel.as_str()];
    let out = history.git.run(&args, None).await.map_err(ProvenanceError::Git)?;
    let mut rows: Vec<Row> = Vec::new();
    for (owner, added, removed) in parse_numstat(&out.stdout) {
        let Owner::Step(k) = owner else { continue };
        let Some(step) = gathered.steps.get(k) else { continue };
        // Newest first: a turn's steps come together, its newest first.
        match rows.last_mut() {
            Some(row) if row.session == step.session.as_str() && row.entry == step.turn => {
                row.added += added;
                row.removed += removed;
            }
            _ => rows.push(Row {
                session: step.session.as_str().to_string(),
                entry: step.turn,
                at: step.at.clone(),
                added,
                removed,
                prompt: step.prompt.clone(),
            }),
        }
    }
    Ok(rows)
}

/// `git log --format=@%an --numstat`: each commit's owner with the lines it
/// added and removed (summed over its files).
fn parse_numstat(out: &[u8]) -> Vec<(Owner, u64, u64)> {
    let text = String::from_utf8_lossy(out);
    let mut commits: Vec<(Owner, u64, u64)> = Vec::new();
    for line in text.lines() {
        if let Some(tag) = line.strip_prefix('@') {
            commits.push((Owner::from_tag(tag).unwrap_or(Owner::Nobody), 0, 0));
            continue;
        }
        let mut cells = line.split('\t');
        let (Some(a), Some(r)) = (cells.next(), cells.next()) else { continue };
        if let Some(last) = commits.last_mut() {
            last.1 += a.parse::<u64>().unwrap_or(0);
            last.2 += r.parse::<u64>().unwrap_or(0);
        }
    }
    commits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_sums_each_commits_files_and_counts_binary_as_none() {
        let out = "@s2\n\n3\t1\ta.txt\n-\t-\tpic.png\n2\t0\tb.txt\n@p\n\n1\t1\ta.txt\n@s0\n\n4\t0\ta.txt\n";
        let got = parse_numstat(out.as_bytes());
        assert_eq!(got, vec![(Owner::Step(2), 5, 1), (Owner::Nobody, 1, 1), (Owner::Step(0), 4, 0)]);
    }
}
