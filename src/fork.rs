//! Fork (SPEC section 8): copy a session, whole or entries 1..N, to a new
//! id. The original is only read (it may be open in a chat, or legacy); the
//! copy records `parent: {id, entry}`, and takes along the artifacts whose
//! replaced entries all lie within 1..N.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::compact::artifact;
use crate::context;
use crate::store::{Entry, Located, Parsed, SessionFile, Store};
use crate::{SessionId, time};

/// A fork on disk.
#[derive(Debug, Clone)]
pub struct Forked {
    /// The new session's id.
    pub id: SessionId,
    /// The new session's file.
    pub path: PathBuf,
    /// How many entries it got.
    pub entries: usize,
    /// How many artifacts were copied.
    pub artifacts: usize,
}

/// Header fields that belong to the original only.
const NOT_COPIED: &[&str] = &["parent", "key", "pinned"];

/// Check that keeping entries 1..n separates no tool call from its result.
/// The error suggests the nearest cuts on either side that separate none
/// (a step with several calls can span more than one result).
fn check_tool_pairs(file: &SessionFile, id: &SessionId, n: usize) -> Result<()> {
    let pairs = tool_pairs(file);
    let Some(&(at, result, ref call)) = pairs.iter().find(|(at, r, _)| *at <= n && n < *r) else { return Ok(()) };
    let (below, above) = nearest_cuts(&pairs, n);
    let choices = match below {
        Some(below) => format!("fork at {below} or at {above}"),
        None => format!("fork at {above}"),
    };
    bail!("entry {n} would separate tool call {call} (entry {at}) from its result (entry {result}) in {id}: {choices}")
}

/// Each tool call's entry and its result's entry (both from 1), with the call's id.
fn tool_pairs(file: &SessionFile) -> Vec<(usize, usize, String)> {
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut pairs = Vec::new();
    for (i, raw) in file.events.iter().enumerate() {
        match Parsed::from_raw(raw) {
            Parsed::Known(Entry::Assistant { tool_calls, .. }) => {
                for c in tool_calls {
                    calls.insert(c.id, i + 1);
                }
            }
            Parsed::Known(Entry::Tool { id: call, .. }) => {
                if let Some(&at) = calls.get(&call) {
                    pairs.push((at, i + 1, call));
                }
            }
            _ => {}
        }
    }
    pairs
}

/// The nearest cuts below and at or above `n` that separate no pair (`None`
/// below when every cut before `n` does, or would keep nothing).
fn nearest_cuts(pairs: &[(usize, usize, String)], n: usize) -> (Option<usize>, usize) {
    let spanning = |cut: usize| pairs.iter().filter(move |(at, r, _)| *at <= cut && cut < *r);
    let mut below = n;
    while let Some(at) = spanning(below).map(|(at, ..)| *at).min() {
        below = at - 1;
    }
    let mut above = n;
    while let Some(result) = spanning(above).map(|(_, r, _)| *r).max() {
        above = result;
    }
    ((below > 0).then_some(below), above)
}

/// The replaced range `a-b` of an artifact's front matter.
fn artifact_range(entries: &str) -> Option<(usize, usize)> {
    let (a, b) = entries.split_once('-')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Fork `at` keeping entries 1..`upto` (all when `None`), optionally
/// owned by `key`.
pub fn fork(store: &Store, at: &Located, upto: Option<usize>, key: Option<&str>) -> Result<Forked> {
    let file = store.read(at)?.file;
    let total = file.events.len();
    let n = upto.unwrap_or(total);
    if upto.is_some() && (n == 0 || n > total) {
        let has = crate::output::count(total as u64, "entry", "entries");
        bail!("entry {n} is out of range: session {} has {has} (1-{total})", at.id);
    }
    copy_upto(store, at, file, n, key)
}

/// Fork `at` keeping the entries before entry `n` (a rewind to entry `n`:
/// to the first message, that is none of them).
pub fn fork_before(store: &Store, at: &Located, n: usize) -> Result<Forked> {
    let file = store.read(at)?.file;
    let total = file.events.len();
    if n == 0 || n > total {
        let has = crate::output::count(total as u64, "entry", "entries");
        bail!("entry {n} is out of range: session {} has {has} (1-{total})", at.id);
    }
    copy_upto(store, at, file, n - 1, None)
}

fn copy_upto(store: &Store, at: &Located, file: SessionFile, n: usize, key: Option<&str>) -> Result<Forked> {
    let total = file.events.len();
    check_tool_pairs(&file, &at.id, n)?;
    let tokens = if n == total {
        file.get_u64("contextTokens").unwrap_or(0)
    } else {
        context::estimate(&context::replay(&file.events[..n]))
    };
    let mut copy = file.derive(n, NOT_COPIED, &time::now(), tokens);
    copy.set("parent", json!({"id": at.id.as_str(), "entry": n}));
    if let Some(key) = key {
        copy.set("key", Value::from(key));
    }

    let id = loop {
        let id = store.fresh_id()?;
        copy.set("id", Value::from(id.as_str()));
        if store.create_file(&id, &copy)? {
            break id;
        }
    };
    // A half-made fork is removed, through the store like any session.
    let copied = copy_artifacts(store, &at.id, &id, n)
        .and_then(|copied| adopt_checkpoints(store, &file, &at.id, &id, n).map(|()| copied))
        .inspect_err(|_| {
            if let Some(made) = store.locate(&id) {
                let _ = store.remove(&made);
            }
        })?;
    Ok(Forked { path: store.session_path(&id), id, entries: n, artifacts: copied })
}

/// The copy's checkpoints (SPEC 19): its own ref on the newest checkpoint
/// within 1..n, so they outlive the original's.
fn adopt_checkpoints(store: &Store, file: &SessionFile, from: &SessionId, to: &SessionId, n: usize) -> Result<()> {
    let newest = file.events[..n].iter().rev().find_map(|raw| match Parsed::from_raw(raw) {
        Parsed::Known(Entry::Checkpoint { commit, workspace, .. }) => Some((commit, workspace)),
        _ => None,
    });
    let Some((commit, workspace)) = newest else { return Ok(()) };
    crate::checkpoint::lifecycle::adopt(&store.paths.data, std::path::Path::new(&workspace), from, to, &commit)
        .with_context(|| format!("cannot give {to} the checkpoints of {from}"))
}

/// Copy the artifacts whose replaced entries all lie within 1..n.
fn copy_artifacts(store: &Store, from: &SessionId, to: &SessionId, n: usize) -> Result<usize> {
    let mut copied = 0;
    for info in artifact::list(store, from)? {
        let Some((_, last)) = artifact_range(&info.entries) else { continue };
        if last > n {
            continue;
        }
        let dir = store.paths.artifacts_of(to);
        crate::paths::ensure_private_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let name = info.file.file_name().context("an artifact without a name")?;
        std::fs::copy(&info.file, dir.join(name)).with_context(|| format!("cannot copy {}", info.file.display()))?;
        copied += 1;
    }
    Ok(copied)
}
