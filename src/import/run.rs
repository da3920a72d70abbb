//! Importing one source file into the store (SPEC 18, "Again and again"):
//! the source's path and id identify it, and the length and SHA-256 of the
//! bytes imported (in `importedFrom`) tell a source unchanged since (nothing
//! to do, nothing parsed), grown (its new entries appended to the same
//! session) or rewritten (a new session, said so). Sessions are written
//! only through the store: whole new files by `create_file`, growth by
//! `append`. Every entry is redacted first.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Parent, Read, Skipped, Tool, Unit};
use crate::SessionId;
use crate::error::StoreError;
use crate::redact::Redactor;
use crate::store::{Append, Entry, SessionFile, Store};

/// What happened to one imported session.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// A new session.
    New,
    /// The source grew: this many entries were appended.
    Grown(usize),
    /// The source was rewritten since session `was` was imported from it: a
    /// new session.
    Rewritten {
        /// The session imported from it before.
        was: String,
    },
}

/// One session made or grown.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Its id (`-` in a dry run for a new one).
    pub id: String,
    /// The source file, with `#key` for a branch or sidechain in it.
    pub source: String,
    /// How many entries the session holds.
    pub entries: usize,
    /// Its title.
    pub title: String,
    /// New, grown or rewritten.
    pub status: Status,
    /// The session it continues, if any.
    pub parent: Option<String>,
}

/// What importing one file did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The sessions made or grown (none: the source was unchanged).
    pub sessions: Vec<Imported>,
    /// Lines skipped, with why.
    pub skipped: Vec<Skipped>,
    /// The source was imported before and has not changed.
    pub unchanged: bool,
    /// A child whose parent's session is not in the store (yet): the
    /// parent source's id. With [`Job::orphans_too`] it was imported anyway.
    pub orphan: Option<String>,
}

/// Why a file was not imported at all.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is another tool's transcript.
    #[error(
        "{} is a {} transcript, not {}'s: import it with --from {}",
        .path.display(),
        .looks_like.name(),
        .asked.name(),
        .looks_like.name()
    )]
    WrongTool {
        /// The file.
        path: PathBuf,
        /// The tool it looks like.
        looks_like: Tool,
        /// The tool asked for.
        asked: Tool,
    },
    /// The file is no transcript of the tool at all.
    #[error("{} is not a {} transcript: nothing in it could be imported", .path.display(), .asked.name())]
    NotATranscript {
        /// The file.
        path: PathBuf,
        /// The tool asked for.
        asked: Tool,
    },
    /// It could not be read, or the store refused the session (its text
    /// says the error with its causes).
    #[error("{0:#}")]
    Failed(anyhow::Error),
}

/// A session imported before, as its `importedFrom` says.
#[derive(Debug, Clone)]
struct Known {
    id: SessionId,
    tool: String,
    path: String,
    source_id: String,
    key: Option<String>,
    bytes: usize,
    sha256: String,
    entries: usize,
}

/// The sessions of the store imported before, found once per run.
#[derive(Debug, Clone, Default)]
pub struct Existing {
    known: Vec<Known>,
}

impl Existing {
    /// Every session of `store` with an `importedFrom` header.
    pub fn load(store: &Store) -> Result<Existing, StoreError> {
        let mut known = Vec::new();
        for at in store.all()?.into_iter().filter(|at| !at.legacy) {
            // A session that cannot be read was not imported by us (or
            // `ls` names it): it is no reason to stop an import.
            let Ok(lines) = store.read_lines(&at) else { continue };
            if let Some(from) = lines.get("importedFrom") {
                known.extend(Known::from_header(at.id.clone(), from));
            }
        }
        Ok(Existing { known })
    }

    fn of_path(&self, tool: Tool, path: &str) -> Vec<&Known> {
        self.known.iter().filter(|k| k.tool == tool.name() && k.path == path).collect()
    }

    fn unit(&self, tool: Tool, path: &str, source_id: &str, key: &Option<String>) -> Option<&Known> {
        self.of_path(tool, path).into_iter().rev().find(|k| k.source_id == source_id && &k.key == key)
    }

    fn source(&self, tool: Tool, source_id: &str) -> Option<&Known> {
        self.known.iter().rev().find(|k| k.tool == tool.name() && k.source_id == source_id && k.key.is_none())
    }
}

impl Known {
    fn from_header(id: SessionId, from: &Value) -> Option<Known> {
        let text = |name: &str| from.get(name).and_then(Value::as_str).map(str::to_string);
        let number = |name: &str| from.get(name).and_then(Value::as_u64).map(|n| n as usize);
        Some(Known {
            id,
            tool: text("tool")?,
            path: text("path")?,
            source_id: text("id")?,
            key: text("key"),
            bytes: number("bytes")?,
            sha256: text("sha256")?,
            entries: number("entries")?,
        })
    }
}

/// The SHA-256 of `bytes`, in hex.
fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Where `tool` keeps its sessions.
pub fn default_root(tool: Tool) -> anyhow::Result<PathBuf> {
    let home = || dirs::home_dir().context("no home folder to find the sessions in: give a PATH");
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    Ok(match tool {
        Tool::Claude => {
            var("CLAUDE_CONFIG_DIR").map_or_else(|| home().map(|h| h.join(".claude")), Ok)?.join("projects")
        }
        Tool::Codex => var("CODEX_HOME").map_or_else(|| home().map(|h| h.join(".codex")), Ok)?.join("sessions"),
        Tool::Pi => {
            var("PI_CODING_AGENT_DIR").map_or_else(|| home().map(|h| h.join(".pi").join("agent")), Ok)?.join("sessions")
        }
    })
}

/// The transcripts under `path`: the file itself, or every `*.jsonl` in
/// the folder and below, in name order (a link is not followed).
pub fn sources_under(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The tool a source looks like, from the first of its first lines that
/// tells (a line type a tool adds later may tell nothing).
fn looks_like(bytes: &[u8]) -> Option<Tool> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(Value::is_object)
        .take(50)
        .find_map(|line| Tool::sniff(&line))
}

/// How one run imports: where to, the redaction, a dry run.
pub struct Job<'a> {
    /// The store.
    pub store: &'a Store,
    /// Applied to every entry and title.
    pub redactor: &'a Redactor,
    /// Say what would be done, write nothing.
    pub dry_run: bool,
    /// Import a child whose parent is not in the store, without `parent`
    /// (the last pass: otherwise it waits for its parent).
    pub orphans_too: bool,
}

/// Import one source file of `tool`.
pub fn import_file(job: &Job, existing: &mut Existing, tool: Tool, path: &Path) -> Result<Outcome, FileError> {
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display())).map_err(FileError::Failed)?;
    let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).to_string_lossy().into_owned();
    match looks_like(&bytes) {
        Some(other) if other != tool => {
            return Err(FileError::WrongTool { path: path.to_path_buf(), looks_like: other, asked: tool });
        }
        None if !bytes.iter().all(u8::is_ascii_whitespace) => {
            return Err(FileError::NotATranscript { path: path.to_path_buf(), asked: tool });
        }
        _ => {}
    }
    let before = existing.of_path(tool, &shown).into_iter().cloned().collect::<Vec<Known>>();
    let whole = sha256(&bytes);
    if before.iter().any(|k| k.key.is_none() && k.bytes == bytes.len() && k.sha256 == whole) {
        return Ok(Outcome { unchanged: true, ..Outcome::default() });
    }
    // Grown: what was imported is a prefix of the file as it is now.
    let grown = before.iter().any(|k| k.bytes < bytes.len() && sha256(&bytes[..k.bytes]) == k.sha256);
    let read = super::read(tool, path, &bytes);
    if read.units.iter().all(|u| u.entries.is_empty()) && !bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(FileError::NotATranscript { path: path.to_path_buf(), asked: tool });
    }
    let from = Source { tool, path: &shown, bytes: bytes.len(), sha256: &whole, version: read.version.clone() };
    write_units(job, existing, &from, read, grown).map_err(FileError::Failed)
}

/// The source as `importedFrom` records it.
struct Source<'a> {
    tool: Tool,
    path: &'a str,
    bytes: usize,
    sha256: &'a str,
    version: Option<String>,
}

impl Source<'_> {
    fn header(&self, unit: &Unit, entries: usize) -> Value {
        let mut from = json!({
            "tool": self.tool.name(),
            "path": self.path,
            "id": unit.source_id,
            "version": self.version,
        });
        if let Some(key) = &unit.key {
            from["key"] = Value::from(key.as_str());
        }
        from["bytes"] = Value::from(self.bytes);
        from["sha256"] = Value::from(self.sha256);
        from["entries"] = Value::from(entries);
        from
    }

    fn shown(&self, unit: &Unit) -> String {
        match &unit.key {
            Some(key) => format!("{}#{key}", self.path),
            None => self.path.to_string(),
        }
    }
}

/// Write every unit of a read source: new, grown or rewritten.
fn write_units(job: &Job, existing: &mut Existing, from: &Source, read: Read, grown: bool) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome { skipped: read.skipped, ..Outcome::default() };
    // The glrs session each unit became, by key, for branches' parents.
    let mut made: Vec<(Option<String>, String)> = Vec::new();
    for unit in read.units {
        let parent = match resolve_parent(job, existing, from.tool, &unit, &made)? {
            Ok(parent) => parent,
            Err(missing) => {
                outcome.orphan = Some(missing);
                if !job.orphans_too {
                    return Ok(outcome);
                }
                None
            }
        };
        let raws = redacted(job.redactor, &unit.entries)?;
        let known = existing.unit(from.tool, from.path, &unit.source_id, &unit.key).cloned();
        let imported = match known {
            Some(k) if grown => match grow(job, &k, from, &unit, &raws)? {
                Some(imported) => imported,
                None => create(job, existing, from, &unit, raws, parent, Status::Rewritten { was: k.id.to_string() })?,
            },
            Some(k) => create(job, existing, from, &unit, raws, parent, Status::Rewritten { was: k.id.to_string() })?,
            None => create(job, existing, from, &unit, raws, parent, Status::New)?,
        };
        made.push((unit.key.clone(), imported.id.clone()));
        outcome.sessions.push(imported);
    }
    Ok(outcome)
}

/// The `parent` header of a unit: `Ok(None)` for none, `Err(id)` when its
/// parent source is not imported (yet).
fn resolve_parent(
    job: &Job,
    existing: &Existing,
    tool: Tool,
    unit: &Unit,
    made: &[(Option<String>, String)],
) -> anyhow::Result<Result<Option<Value>, String>> {
    match &unit.parent {
        None => Ok(Ok(None)),
        Some(Parent::Fork { key, entry } | Parent::Unit { key, entry }) => {
            let id = made.iter().find(|(k, _)| k == key).map(|(_, id)| id.clone());
            Ok(Ok(id.map(|id| json!({"id": id, "entry": entry}))))
        }
        Some(Parent::Source { id, call, .. }) => {
            if let Some(call) = call
                && let Some((session, entry)) = spawned_at(job.store, existing, tool, id, call)?
            {
                return Ok(Ok(Some(json!({"id": session.as_str(), "entry": entry}))));
            }
            let Some(known) = existing.source(tool, id) else { return Ok(Err(id.clone())) };
            let entry = entries_until(job.store, &known.id, &unit.created_at)?;
            Ok(Ok(Some(json!({"id": known.id.as_str(), "entry": entry}))))
        }
    }
}

/// The session imported from source `source` (its own, or a branch of
/// it) that holds the tool call `call`, and the entry after that call's
/// results: where the child it started forks.
fn spawned_at(
    store: &Store,
    existing: &Existing,
    tool: Tool,
    source: &str,
    call: &str,
) -> anyhow::Result<Option<(SessionId, usize)>> {
    let of_source = existing.known.iter().filter(|k| k.tool == tool.name() && k.source_id == source);
    for known in of_source {
        let Some(at) = store.locate(&known.id) else { continue };
        let lines = store.read_lines(&at)?;
        let is_the_call = |text: &str| {
            crate::store::entry::quick_type(text) == Some("tool")
                && serde_json::from_str::<Value>(text).is_ok_and(|v| v.get("id").and_then(Value::as_str) == Some(call))
        };
        // A fork's first entries are its parent's: the call is where it was made.
        let shared = match lines.get("subagent") {
            Some(Value::Bool(true)) => 0,
            _ => lines.get("parent").and_then(|p| p.get("entry")?.as_u64()).unwrap_or(0) as usize,
        };
        let found = (shared..lines.len()).find(|&i| is_the_call(lines.entry(i)));
        if let Some(index) = found {
            return Ok(Some((known.id.clone(), after_results(&lines, index + 1))));
        }
    }
    Ok(None)
}

/// `count` moved past any `tool` entries right after it: a fork never
/// lands between a call and its results.
fn after_results(lines: &crate::store::lines::Lines, mut count: usize) -> usize {
    while count < lines.len() && crate::store::entry::quick_type(lines.entry(count)) == Some("tool") {
        count += 1;
    }
    count
}

/// How many of session `id`'s entries were recorded by `time`: where a
/// child that began then branched off.
fn entries_until(store: &Store, id: &SessionId, time: &str) -> anyhow::Result<usize> {
    let Some(at) = store.locate(id) else { return Ok(0) };
    let lines = store.read_lines(&at)?;
    let limit = crate::time::parse_ms(time).unwrap_or(i64::MAX);
    let count = lines
        .entries()
        .iter()
        .take_while(|text| {
            let at = serde_json::from_str::<Value>(text).ok().and_then(|v| v.get("at")?.as_str().map(str::to_string));
            at.and_then(|at| crate::time::parse_ms(&at)).is_none_or(|ms| ms <= limit)
        })
        .count();
    // Never between a call and its results: a fork there would split them.
    Ok(after_results(&lines, count.max(1).min(lines.len())))
}

/// Each entry redacted, as the raw text the file stores.
fn redacted(redactor: &Redactor, entries: &[Entry]) -> anyhow::Result<Vec<Box<RawValue>>> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let clean = entry.redacted(redactor)?;
        out.push(clean.as_ref().unwrap_or(entry).to_raw()?);
    }
    Ok(out)
}

/// Write a unit as a new session.
fn create(
    job: &Job,
    existing: &mut Existing,
    from: &Source,
    unit: &Unit,
    raws: Vec<Box<RawValue>>,
    parent: Option<Value>,
    status: Status,
) -> anyhow::Result<Imported> {
    let title = unit.title.as_deref().map(|t| job.redactor.text(t).into_owned());
    let entries = raws.len();
    let mut file = SessionFile::new("", &unit.cwd, &unit.created_at);
    file.set("updatedAt", Value::from(unit.updated_at.as_str()));
    if let Some(title) = &title {
        file.set("title", Value::from(title.as_str()));
    }
    if let Some(model) = &unit.model {
        file.set("model", Value::from(model.as_str()));
    }
    if let Some(parent) = &parent {
        file.set("parent", parent.clone());
        // A subagent's session is a child with a context of its own (SPEC
        // 20); a fork holds its parent's entries (SPEC 8).
        if matches!(unit.parent, Some(Parent::Unit { .. } | Parent::Source { subagent: true, .. })) {
            file.set("subagent", Value::Bool(true));
        }
    }
    file.set("importedFrom", from.header(unit, entries));
    // The source's dates are kept; when it entered the store is this (cleanup's age counts from it).
    file.set("importedAt", Value::from(crate::time::now()));
    let tokens = crate::context::estimate(&crate::context::replay(&raws));
    file.set("contextTokens", Value::from(tokens));
    file.events = raws;
    let parent_id = parent.as_ref().and_then(|p| p.get("id")?.as_str().map(str::to_string));
    let mut imported = Imported {
        id: "-".into(),
        source: from.shown(unit),
        entries,
        title: title.unwrap_or_default(),
        status,
        parent: parent_id,
    };
    if job.dry_run {
        return Ok(imported);
    }
    let id = loop {
        let id = job.store.fresh_id()?;
        file.set("id", Value::from(id.as_str()));
        if job.store.create_file(&id, &file)? {
            break id;
        }
    };
    imported.id = id.to_string();
    existing.known.push(Known {
        id,
        tool: from.tool.name().into(),
        path: from.path.into(),
        source_id: unit.source_id.clone(),
        key: unit.key.clone(),
        bytes: from.bytes,
        sha256: from.sha256.into(),
        entries,
    });
    Ok(imported)
}

/// Append what a grown source added to the session `k`, when the entries
/// imported before are still the first ones the source makes; `None` when
/// they are not (the source changed in place).
fn grow(job: &Job, k: &Known, from: &Source, unit: &Unit, raws: &[Box<RawValue>]) -> anyhow::Result<Option<Imported>> {
    let Some(at) = job.store.locate(&k.id) else { return Ok(None) };
    let lines = job.store.read_lines(&at)?;
    let same =
        raws.len() >= k.entries && lines.len() >= k.entries && (0..k.entries).all(|i| lines.entry(i) == raws[i].get());
    if !same {
        return Ok(None);
    }
    // Entries numbered in the source's session land after whatever the
    // session holds now (a chat may have added some).
    let shift = lines.len() - k.entries;
    let mut change = Append::new();
    for raw in &raws[k.entries..] {
        change = change.raw_entry(shifted(raw, k.entries, shift)?);
    }
    let added = change.len();
    change = change.set("importedFrom", from.header(unit, raws.len()));
    if let Some(model) = &unit.model {
        change = change.set("model", model.as_str());
    }
    let total = lines.len() + added;
    let title = lines.get_str("title").unwrap_or("").to_string();
    if !job.dry_run {
        let written = job.store.append(&k.id, change)?;
        if let Some(warning) = written.warning {
            anyhow::bail!("{}: appended, but {warning}", k.id);
        }
    }
    Ok(Some(Imported {
        id: k.id.to_string(),
        source: from.shown(unit),
        entries: total,
        title,
        status: Status::Grown(added),
        parent: None,
    }))
}

/// A `compacted` entry's `firstKept` moved by `shift` when it points past
/// the `kept` entries imported before.
fn shifted(raw: &RawValue, kept: usize, shift: usize) -> anyhow::Result<Box<RawValue>> {
    if shift == 0 || crate::store::entry::quick_type(raw.get()) != Some("compacted") {
        return Ok(raw.to_owned());
    }
    let mut value: Value = serde_json::from_str(raw.get())?;
    if let Some(n) = value.get("firstKept").and_then(Value::as_u64)
        && n as usize > kept
    {
        value["firstKept"] = Value::from(n as usize + shift);
    }
    Ok(serde_json::value::to_raw_value(&value)?)
}
