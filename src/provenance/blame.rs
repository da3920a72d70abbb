//! `glrs-sessions blame FILE` (SPEC 24): for each line of the file as it
//! is now, the step that last wrote it, found by `git blame --porcelain
//! --contents FILE` over the workspace's history (`super::history`):
//! lines changed since the newest checkpoint are nobody's.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use super::history::{self, History, Owner};
use super::steps::Step;
use super::{ProvenanceError, gather, git_program};
use crate::store::Store;

/// One line of the file, with its owner.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    /// Its number, from 1.
    pub line: usize,
    /// The session whose step last wrote it; `None` for nobody's.
    pub session: Option<String>,
    /// The entry of that step's user message.
    pub entry: Option<usize>,
    /// When the step ended.
    pub at: Option<String>,
    /// The first line of the step's user message.
    pub prompt: Option<String>,
    /// True when the line was written where checkpoints are gone (cleanup
    /// removed them): it can no longer be attributed.
    pub unknown: bool,
    /// The line's text.
    pub text: String,
}

/// The lines of `file` (all, or `range`'s, inclusive, from 1) with their
/// owners, and how many steps' checkpoints were gone.
pub async fn blame(
    store: &Store,
    file: &Path,
    range: Option<(usize, usize)>,
) -> Result<(Vec<Line>, usize), ProvenanceError> {
    let contents = std::fs::read(file).map_err(|source| ProvenanceError::Unreadable { path: file.into(), source })?;
    if memchr::memchr(0, &contents).is_some() {
        return Err(ProvenanceError::Binary(file.into()));
    }
    let workspace = super::workspace_of(&store.paths.data, file)?;
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
    let real = super::resolved(file);
    let rel = history::relative(&workspace.root, &real).ok_or_else(|| ProvenanceError::NoWorkspace(file.into()))?;
    let owners = owners_of(&history, &rel, &real, range).await?;
    // Lines no checkpoint holds: nobody's, unless a removed session's
    // checkpoints reach past the newest one.
    let outside = if history.unknown_after_tip { Owner::Unknown } else { Owner::Nobody };
    let text = String::from_utf8_lossy(&contents);
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, t)| (i + 1, t))
        .filter(|(n, _)| range.is_none_or(|(a, b)| (a..=b).contains(n)))
        .map(|(n, t)| line(n, t, owners.get(&n).copied().unwrap_or(outside), &gathered.steps))
        .collect();
    Ok((lines, history.missing))
}

fn line(number: usize, text: &str, owner: Owner, steps: &[Step]) -> Line {
    let step = match owner {
        Owner::Step(k) => steps.get(k),
        Owner::Nobody | Owner::Unknown => None,
    };
    Line {
        line: number,
        session: step.map(|s| s.session.as_str().to_string()),
        entry: step.map(|s| s.turn),
        at: step.map(|s| s.at.clone()),
        prompt: step.map(|s| s.prompt.clone()),
        unknown: owner == Owner::Unknown,
        text: text.to_string(),
    }
}

/// The owner of each line (by number) as git blame says.
async fn owners_of(
    history: &History,
    rel: &Path,
    real: &Path,
    range: Option<(usize, usize)>,
) -> Result<HashMap<usize, Owner>, ProvenanceError> {
    let Some(tip) = &history.tip else { return Ok(HashMap::new()) };
    let rel_text = rel.to_string_lossy();
    let in_tip = history.git.run(&["cat-file", "-e", &format!("{tip}:{rel_text}")], None).await.is_ok();
    if !in_tip {
        // No checkpoint ever held the file: nobody of ours wrote it.
        return Ok(HashMap::new());
    }
    let real_text = real.to_string_lossy();
    let span = range.map(|(a, b)| format!("{a},{b}"));
    let mut args = vec!["blame", "--porcelain", "--contents", real_text.as_ref()];
    if let Some(span) = &span {
        args.extend(["-L", span]);
    }
    args.extend([tip.as_str(), "--", rel_text.as_ref()]);
    let out = history.git.run(&args, None).await.map_err(ProvenanceError::Git)?;
    Ok(parse_porcelain(&out.stdout))
}

/// `git blame --porcelain`'s owner of each final line number: a header
/// line `HASH ORIG FINAL [COUNT]`, the commit's fields the first time it
/// appears (`author TAG`), then the line itself after a tab.
fn parse_porcelain(out: &[u8]) -> HashMap<usize, Owner> {
    let mut tags: HashMap<&[u8], Owner> = HashMap::new();
    let mut owners = HashMap::new();
    let mut current: Option<(&[u8], usize)> = None;
    for line in out.split(|b| *b == b'\n') {
        if line.first() == Some(&b'\t') {
            // The zero hash: changed since the newest commit (the caller
            // knows whose such lines are).
            if let Some((hash, n)) = current.take().filter(|(h, _)| h.iter().any(|b| *b != b'0')) {
                owners.insert(n, tags.get(hash).copied().unwrap_or(Owner::Nobody));
            }
            continue;
        }
        let mut words = line.split(|b| *b == b' ');
        let first = words.next().unwrap_or_default();
        if first.len() == 40 && first.iter().all(u8::is_ascii_hexdigit) {
            let final_line = words.nth(1).and_then(|w| std::str::from_utf8(w).ok()?.parse().ok());
            current = final_line.map(|n| (first, n));
        } else if first == b"author"
            && let Some((hash, _)) = current
        {
            let tag = line.get(7..).and_then(|t| std::str::from_utf8(t).ok()).unwrap_or("");
            tags.insert(hash, Owner::from_tag(tag).unwrap_or(Owner::Nobody));
        }
    }
    owners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_take_their_commits_tag_the_first_time_it_appears() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let zero = "0".repeat(40);
        let out = format!(
            "{a} 1 1 2\nauthor s3\nauthor-mail <glrs>\nsummary x\nfilename f\n\tone\n{a} 2 2\n\ttwo\n\
             {b} 1 3 1\nauthor p\nfilename f\n\tthree\n{zero} 4 4 1\nauthor Not Committed Yet\nfilename f\n\tfour\n"
        );
        let owners = parse_porcelain(out.as_bytes());
        assert_eq!(owners.get(&1), Some(&Owner::Step(3)));
        assert_eq!(owners.get(&2), Some(&Owner::Step(3)));
        assert_eq!(owners.get(&3), Some(&Owner::Nobody));
        assert_eq!(owners.get(&4), None, "not committed: the caller's to say");
    }
}
