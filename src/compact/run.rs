//! One compaction, from snapshot to landing (SPEC 6):
//!
//! 1. read the session and plan the cut on that snapshot;
//! 2. ask the compact model for the brief (nothing is written meanwhile:
//!    a failed, empty or interrupted summary leaves everything as it was);
//! 3. land it under the write lock: re-read the file; entries appended since
//!    the snapshot are kept (they come after the cut); a file replaced or
//!    shortened since aborts with nothing written; else write the artifact,
//!    then append the `compacted` entry.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::artifact::{self, ArtifactInfo};
use super::plan::{self, Plan};
use super::{Settings, brief, references};
use crate::config::Config;
use crate::context;
use crate::error::StoreError;
use crate::provider::select::ModelRef;
use crate::provider::{Cancel, Provider, catalogue};
use crate::store::{Entry, Located, SessionFile, Store};
use crate::time;

/// How to compact.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Steers the brief ("Additional focus: …").
    pub instruction: Option<String>,
    /// The model that writes the brief, instead of `compactModel`.
    pub model: Option<ModelRef>,
}

/// A compaction that landed.
#[derive(Debug, Clone, PartialEq)]
pub struct Landed {
    /// The context estimate before.
    pub tokens_before: u64,
    /// The context estimate after.
    pub tokens_after: u64,
    /// The artifact written.
    pub artifact: PathBuf,
    /// The brief's label.
    pub label: String,
    /// The first entry kept verbatim.
    pub first_kept: u64,
    /// The model that wrote the brief.
    pub model: String,
    /// The brief landed, but the folder could not be synced after.
    pub warning: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
/// How a compaction ended.
pub enum Outcome {
    /// No user message gives anything to summarise.
    Nothing,
    /// A brief landed.
    Compacted(Landed),
    /// Another compaction of the session landed while this one waited for
    /// it: there is nothing left to do.
    CompactedMeanwhile,
}

/// The model that writes the brief: `--model`, else `compactModel`, else
/// the session's own model, else the configured one. `compactModel` must
/// have a window of at least `compactWindow`.
pub fn compact_model(config: &Config, file: &SessionFile, chosen: Option<&ModelRef>) -> Result<ModelRef> {
    if let Some(m) = chosen {
        return Ok(m.clone());
    }
    if let Some(name) = &config.compact_model {
        let m = ModelRef::parse(name)?;
        let window = catalogue::context_window(config, &m.provider, &m.model);
        let needed = Settings::from_config(config).compact_window;
        if window < needed {
            bail!(
                "compactModel {name} has a window of {window} tokens, smaller than compactWindow ({needed}): \
                 choose a model with a larger window, or lower compactWindow"
            );
        }
        return Ok(m);
    }
    match file.get_str("model").or(config.model.as_deref()) {
        Some(name) => ModelRef::parse(name),
        None => bail!("the session names no model and none is configured: give one with --model provider/model-id"),
    }
}

/// The tokens before: the larger of what the session says (the last
/// request's usage) and an estimate of what its file holds (entries may
/// have been appended since, without a model call). The same figure bounds
/// the brief (`fit`): `tokensAfter` never exceeds `tokensBefore`.
fn tokens_before(file: &SessionFile) -> u64 {
    let estimate = context::estimate(&context::replay(&file.events));
    file.get_u64("contextTokens").unwrap_or(0).max(estimate)
}

/// Compact one session.
pub async fn compact(
    store: &Store,
    config: &Config,
    at: &Located,
    options: &Options,
    cancel: &Cancel,
) -> Result<Outcome> {
    let file = store.read(at)?.file;
    compact_read(store, config, at, file, options, cancel).await
}

/// [`compact`] on a file the caller has just read (the snapshot the cut is
/// planned on; the landing re-checks it under the lock).
pub async fn compact_read(
    store: &Store,
    config: &Config,
    at: &Located,
    file: SessionFile,
    options: &Options,
    cancel: &Cancel,
) -> Result<Outcome> {
    let keep = super::Trigger::for_session(config, file.get_str("model")).keep_recent;
    let Some(mut plan) = plan::plan(&file.events, keep) else {
        return Ok(Outcome::Nothing);
    };
    // The chat redacts what it writes; this catches what reached the file
    // another way (an older glrs, `glrs-sessions append`, a legacy session)
    // before it is copied into an artifact or a brief.
    let redactor = config.redactor()?;
    for block in &mut plan.blocks {
        if let std::borrow::Cow::Owned(clean) = redactor.text(&block.text) {
            block.text = clean;
        }
    }
    let model = compact_model(config, &file, options.model.as_ref())?;
    let provider = Provider::from_config(config, &model.provider)?;
    let window = catalogue::context_window(config, &model.provider, &model.model);
    let instruction = options.instruction.as_deref().filter(|i| !i.trim().is_empty());
    let text = brief::write(
        &provider,
        &model.model,
        window,
        &plan.blocks,
        plan.previous_brief.as_deref(),
        instruction,
        cancel,
    )
    .await?;
    let mut brief = text;
    brief.summary = redactor.text(&brief.summary).into_owned();
    brief.references.redact(&redactor);
    let before = tokens_before(&file);
    let text = fit(&brief, &plan, &file, before)?;
    let landed = land(store, at, &plan, &text, &model, instruction, before)?;
    Ok(Outcome::Compacted(landed))
}

/// The brief with as many references as keep the context from growing: a
/// compaction never makes the context bigger than it was (issue 25). The
/// references are halved until the brief fits; when even the summary alone
/// does not, nothing is compacted, and the error says why.
fn fit(brief: &brief::Brief, plan: &Plan, file: &SessionFile, tokens_before: u64) -> Result<String> {
    let before = tokens_before;
    let kept = context::estimate(&context::replay(&file.events[plan.cut..]));
    let after = |text: &str| crate::message::estimate_text(&context::wrap_brief(text)) + kept;
    let mut chars = references::REFERENCE_CHARS;
    loop {
        let text = brief.render(chars);
        if after(&text) <= before {
            return Ok(text);
        }
        if chars == 0 {
            bail!(
                "the brief ({} estimated tokens with what is kept) would make the context bigger than it is ({before} \
                 tokens): nothing was compacted; there is too little to compact yet",
                after(&text)
            );
        }
        chars /= 2;
    }
}

/// Land a brief on the session, under its write lock.
pub fn land(
    store: &Store,
    at: &Located,
    plan: &Plan,
    brief: &str,
    model: &ModelRef,
    instruction: Option<&str>,
    tokens_before: u64,
) -> Result<Landed> {
    let label = brief.lines().next().unwrap_or("").to_string();
    let mut written: Option<(PathBuf, PathBuf)> = None;
    let mut tokens_after = 0;
    let path = store.session_path(&at.id);
    let result = store.update(&at.id, |file| {
        check_snapshot(file, plan, &path)?;
        let now = time::now();
        let mut info = ArtifactInfo {
            file: PathBuf::new(),
            session: at.id.to_string(),
            created_at: now.clone(),
            label: label.clone(),
            messages: plan.message_count() as u64,
            note: String::new(),
            entries: format!("{}-{}", plan.start + 1, plan.cut),
        };
        // Pending until the entry is on disk: a crash leaves both or neither.
        let (pending, artifact_path) = artifact::write_pending(store, &at.id, &mut info, &plan.blocks)?;
        // The references' note of what was left out names this artifact.
        let artifact_name = artifact_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let brief = brief.replace(references::ARTIFACT_MARK, &format!("`{artifact_name}`"));
        written = Some((pending, artifact_path));
        // The context after: the wrapped brief, then everything kept (with
        // whatever was appended since the snapshot).
        tokens_after = crate::message::estimate_text(&context::wrap_brief(&brief))
            + context::estimate(&context::replay(&file.events[plan.cut..]));
        let entry = Entry::Compacted {
            at: now.clone(),
            brief,
            first_kept: plan.cut as u64 + 1,
            tokens_before,
            tokens_after,
            model: model.full(),
            artifact: artifact_name,
            instruction: instruction.map(str::to_string),
        };
        let raw = entry.to_raw().map_err(|e| StoreError::Corrupt { path: path.clone(), detail: e.to_string() })?;
        file.events.push(raw);
        file.set("contextTokens", Value::from(tokens_after));
        file.set("updatedAt", Value::from(now));
        Ok(())
    });
    let landed = match result {
        Ok(landed) => landed,
        Err(e) => {
            // The session did not take the brief: its artifact goes too.
            if let Some((pending, _)) = written {
                let _ = std::fs::remove_file(pending);
            }
            return Err(e).with_context(|| format!("compaction of {} not landed", at.id));
        }
    };
    let (pending, artifact) = written.unwrap_or_default();
    let warning = name_artifact(&pending, &artifact).or(landed.warning);
    Ok(Landed {
        warning,
        tokens_before,
        tokens_after,
        artifact,
        label,
        first_kept: plan.cut as u64 + 1,
        model: model.full(),
    })
}

/// Whether the file under the lock is still the snapshot the cut was
/// planned on, with only entries appended since, none of them another
/// compaction (which would have summarised the same range).
fn check_snapshot(file: &SessionFile, plan: &Plan, path: &std::path::Path) -> Result<(), StoreError> {
    let unchanged = file.events.len() >= plan.snapshot_len
        && plan::hash_prefix(&file.events, plan.snapshot_len) == plan.snapshot_hash;
    if !unchanged {
        return Err(StoreError::Conflict {
            path: path.to_path_buf(),
            detail: "the session was replaced or shortened while the brief was being written; nothing was compacted"
                .into(),
        });
    }
    let newer = file.events[plan.snapshot_len..].iter().any(|raw| {
        raw.get().contains("\"compacted\"")
            && matches!(crate::store::Parsed::from_raw(raw), crate::store::Parsed::Known(Entry::Compacted { .. }))
    });
    if newer {
        return Err(StoreError::Conflict {
            path: path.to_path_buf(),
            detail: "another compaction landed first; nothing was compacted".into(),
        });
    }
    Ok(())
}

/// The entry is on disk: the pending artifact takes its name, and its
/// folder is synced. Should this fail (or the process die first), the next
/// listing finishes it; the warning says so.
fn name_artifact(pending: &std::path::Path, artifact: &std::path::Path) -> Option<String> {
    if let Err(e) = std::fs::rename(pending, artifact) {
        return Some(format!("artifact {} left as {}: {e}", artifact.display(), pending.display()));
    }
    if let Some(dir) = artifact.parent() {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    None
}
