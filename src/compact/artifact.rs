//! Compaction artifacts (SPEC 6, "Artifacts"): one Markdown file per
//! compaction in `<sessions>/artifacts/<session id>/`, named after its
//! creation time (`2026-09-06T14-02-11-000Z.md`, then `-2`, `-3` within one
//! millisecond), with front matter and the replaced messages in full.
//!
//! Front matter values are written bare when they read back as themselves,
//! else as JSON strings (`label: "fix: \"quoted\" things"`), so a label with
//! a colon, a quote or a newline survives exactly.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::plan::Block;
use crate::error::StoreError;
use crate::paths::{check_inside, ensure_private_dir, is_plain_file};
use crate::store::{Store, lock};
use crate::{SessionId, StoreError as E};

/// What an artifact's front matter says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInfo {
    /// The artifact's file.
    pub file: PathBuf,
    /// The session it came from.
    pub session: String,
    /// When it was written.
    pub created_at: String,
    /// The brief's first line.
    pub label: String,
    /// How many messages it holds.
    pub messages: u64,
    /// The note set by `annotate` (empty until then).
    pub note: String,
    /// The entries it replaced (`1-244`).
    pub entries: String,
}

/// A front matter value, quoted when needed.
fn value(text: &str) -> String {
    let plain = !text.is_empty()
        && !text.starts_with(['"', '\'', ' ', '#', '[', '{', '-', '!', '&', '*', '|', '>', '%', '@', '`'])
        // Reading trims Unicode whitespace (U+2028, NBSP …): quote such ends.
        && text.trim() == text
        && !text.contains(": ")
        && !text.contains(" #")
        && !text.contains(['\n', '\r', '\t'])
        && !text.ends_with(':');
    if plain { text.to_string() } else { serde_json::to_string(text).unwrap_or_default() }
}

/// Read a front matter value back.
fn unvalue(text: &str) -> String {
    let text = text.trim();
    if text.starts_with('"') {
        serde_json::from_str(text).unwrap_or_else(|_| text.to_string())
    } else {
        text.to_string()
    }
}

/// The text of an artifact.
pub fn render(info: &ArtifactInfo, blocks: &[Block]) -> String {
    let mut out = String::with_capacity(blocks.iter().map(|b| b.text.len() + 24).sum::<usize>() + 256);
    out.push_str("---\n");
    out.push_str(&format!("label: {}\n", value(&info.label)));
    out.push_str(&format!("createdAt: {}\n", info.created_at));
    out.push_str(&format!("messages: {}\n", info.messages));
    if info.note.is_empty() {
        out.push_str("note:\n");
    } else {
        out.push_str(&format!("note: {}\n", value(&info.note)));
    }
    out.push_str(&format!("session: {}\n", info.session));
    out.push_str(&format!("entries: {}\n", info.entries));
    out.push_str("---\n");
    for block in blocks {
        out.push_str(&format!("[{}]\n", block.tag));
        out.push_str(&block.text);
        if !block.text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Parse the front matter of an artifact's text.
pub fn parse_front_matter(file: &Path, text: &str) -> Option<ArtifactInfo> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    let mut info = ArtifactInfo {
        file: file.to_path_buf(),
        session: String::new(),
        created_at: String::new(),
        label: String::new(),
        messages: 0,
        note: String::new(),
        entries: String::new(),
    };
    for line in rest[..end].lines() {
        let (key, val) = line.split_once(':').unwrap_or((line, ""));
        let val = unvalue(val);
        match key.trim() {
            "label" => info.label = val,
            "createdAt" => info.created_at = val,
            "messages" => info.messages = val.parse().unwrap_or(0),
            "note" => info.note = val,
            "session" => info.session = val,
            "entries" => info.entries = val,
            _ => {}
        }
    }
    Some(info)
}

/// The file name for an artifact created at `created_at`, `n`th in its
/// millisecond (1 for the first).
pub fn file_name(created_at: &str, n: u32) -> String {
    let stem = created_at.replace([':', '.'], "-");
    if n <= 1 { format!("{stem}.md") } else { format!("{stem}-{n}.md") }
}

/// The artifacts folder of session `id`, refused when it is a symbolic
/// link or leads out of the data folder: every artifact path goes through
/// here, so a planted link never makes glrs read, write or delete elsewhere.
pub fn checked_dir(store: &Store, id: &SessionId) -> Result<PathBuf, StoreError> {
    let dir = store.paths.artifacts_of(id);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => Err(E::io(
            &dir,
            "use",
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "not a plain folder (a symbolic link?): refused"),
        )),
        Ok(_) => check_inside(&store.paths.data, &dir).map(|()| dir.clone()).map_err(|e| E::io(&dir, "use", e)),
        Err(_) => Ok(dir),
    }
}

/// The name an artifact has while its `compacted` entry lands:
/// `.NAME.tmp`, renamed to NAME once the entry is on disk. A crash before
/// the entry leaves only a leftover (no entry names it; cleanup removes it);
/// a crash after leaves the entry and this file, which the next listing
/// renames into place. Either both land or neither does.
pub fn pending_name(name: &str) -> String {
    format!(".{name}.tmp")
}

/// The artifact a pending file becomes (`.NAME.md.tmp` → `NAME.md`).
pub fn pending_target(name: &str) -> Option<&str> {
    name.strip_prefix('.')?.strip_suffix(".tmp").filter(|n| n.ends_with(".md"))
}

/// The artifact file names the session's `compacted` entries name.
pub fn landed_names(store: &Store, id: &SessionId) -> std::collections::HashSet<String> {
    let Some(at) = store.locate(id) else { return Default::default() };
    let Ok(loaded) = store.read(&at) else { return Default::default() };
    loaded
        .file
        .events
        .iter()
        .filter(|raw| raw.get().contains("\"compacted\""))
        .filter_map(|raw| match crate::store::Parsed::from_raw(raw) {
            crate::store::Parsed::Known(crate::store::Entry::Compacted { artifact, .. }) => Some(artifact),
            _ => None,
        })
        .collect()
}

/// Write a new artifact for session `id` under its pending name; returns
/// the pending path and the name it takes once its entry has landed.
pub fn write_pending(
    store: &Store,
    id: &SessionId,
    info: &mut ArtifactInfo,
    blocks: &[Block],
) -> Result<(PathBuf, PathBuf), StoreError> {
    write_named(store, id, info, blocks, true)
}

/// Write a new artifact for session `id`; returns its path. Never replaces
/// an existing file: a name taken in the same millisecond gets `-2`, `-3`.
pub fn write_new(
    store: &Store,
    id: &SessionId,
    info: &mut ArtifactInfo,
    blocks: &[Block],
) -> Result<PathBuf, StoreError> {
    write_named(store, id, info, blocks, false).map(|(path, _)| path)
}

/// Write an artifact under a free name (its pending form when `pending`);
/// returns the path written and the artifact's own path.
fn write_named(
    store: &Store,
    id: &SessionId,
    info: &mut ArtifactInfo,
    blocks: &[Block],
    pending: bool,
) -> Result<(PathBuf, PathBuf), StoreError> {
    let dir = checked_dir(store, id)?;
    ensure_private_dir(&dir).map_err(|e| E::io(&dir, "create folder", e))?;
    let dir = checked_dir(store, id)?;
    for n in 1..1000 {
        let name = file_name(&info.created_at, n);
        let path = dir.join(&name);
        let target = if pending { dir.join(pending_name(&name)) } else { path.clone() };
        // Neither the name nor its pending form may be taken.
        if pending && std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        info.file = path.clone();
        let text = render(info, blocks);
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&target) {
            Ok(mut f) => {
                let written = f.write_all(text.as_bytes()).and_then(|()| f.sync_all());
                if let Err(e) = written {
                    let _ = std::fs::remove_file(&target);
                    return Err(E::io(&target, "write", e));
                }
                return Ok((target, path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(E::io(&target, "create", e)),
        }
    }
    Err(E::io(&dir, "name an artifact in", std::io::Error::other("too many artifacts in one millisecond")))
}

/// The artifacts of one session, oldest first.
pub fn list(store: &Store, id: &SessionId) -> Result<Vec<ArtifactInfo>, StoreError> {
    let dir = checked_dir(store, id)?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(E::io(&dir, "read folder", e)),
    };
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if let Some(target) = entry.file_name().to_str().and_then(pending_target) {
            pending.push((target.to_string(), path));
            continue;
        }
        // A link is never followed, even to another artifact.
        if path.extension().and_then(|e| e.to_str()) != Some("md") || !is_plain_file(&path) {
            continue;
        }
        out.push(read_info(&path)?);
    }
    for path in finish_landings(store, id, &dir, pending) {
        out.push(read_info(&path)?);
    }
    out.sort_by(|a, b| (&a.created_at, &a.file).cmp(&(&b.created_at, &b.file)));
    Ok(out)
}

/// Finish landings a crash interrupted: a pending artifact whose
/// `compacted` entry is on disk takes its name now (under the session's
/// write lock, as the landing would have). One no entry names is left for
/// cleanup. Returns the artifacts finished.
fn finish_landings(store: &Store, id: &SessionId, dir: &Path, pending: Vec<(String, PathBuf)>) -> Vec<PathBuf> {
    if pending.is_empty() {
        return Vec::new();
    }
    let named = landed_names(store, id);
    let Ok(_lock) = lock::WriteLock::acquire(&store.paths.sessions.join(format!("{id}.lock"))) else {
        return Vec::new();
    };
    let mut finished = Vec::new();
    for (target, path) in pending {
        let to = dir.join(&target);
        if named.contains(&target)
            && is_plain_file(&path)
            && std::fs::symlink_metadata(&to).is_err()
            && std::fs::rename(&path, &to).is_ok()
        {
            finished.push(to);
        }
    }
    finished
}

/// The front matter of one artifact file; a file without one is listed
/// with its name and nothing else, never hidden.
pub fn read_info(path: &Path) -> Result<ArtifactInfo, StoreError> {
    let text = std::fs::read(path).map_err(|e| E::io(path, "read", e))?;
    let text = String::from_utf8_lossy(&text);
    let session =
        path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(parse_front_matter(path, &text).unwrap_or(ArtifactInfo {
        file: path.to_path_buf(),
        session,
        created_at: String::new(),
        label: String::new(),
        messages: 0,
        note: String::new(),
        entries: String::new(),
    }))
}

/// Every session id that has an artifacts folder.
pub fn sessions_with_artifacts(store: &Store) -> Vec<SessionId> {
    let mut ids: Vec<SessionId> = std::fs::read_dir(&store.paths.artifacts)
        .map(|d| d.flatten().filter_map(|e| SessionId::parse(&e.file_name().to_string_lossy()).ok()).collect())
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Turn user text into an artifact path inside the artifacts folder: a path
/// (absolute, or relative to the current folder), or `ID/NAME.md` relative
/// to the artifacts folder. Anything that resolves outside is refused.
pub fn resolve_file(store: &Store, text: &str) -> Result<PathBuf, StoreError> {
    let given = PathBuf::from(text);
    let candidate = if given.exists() { given } else { store.paths.artifacts.join(text) };
    let outside = || StoreError::Corrupt {
        path: PathBuf::from(text),
        detail: format!("not an artifact: artifacts live in {}/<session id>/*.md", store.paths.artifacts.display()),
    };
    let real = candidate.canonicalize().map_err(|e| E::io(&candidate, "find", e))?;
    let root = store.paths.artifacts.canonicalize().map_err(|_| outside())?;
    let inside = real.parent().and_then(Path::parent) == Some(root.as_path())
        && real.extension().and_then(|e| e.to_str()) == Some("md")
        && real.parent().and_then(|p| p.file_name()).is_some_and(|n| SessionId::is_id(&n.to_string_lossy()));
    if !inside || !real.is_file() || check_inside(&store.paths.data, &real).is_err() {
        return Err(outside());
    }
    Ok(real)
}

/// The session an artifact path belongs to.
pub fn session_of(path: &Path) -> Option<SessionId> {
    SessionId::parse(&path.parent()?.file_name()?.to_string_lossy()).ok()
}

/// Set an artifact's `note:`, atomically, under its session's write lock.
pub fn annotate(store: &Store, path: &Path, note: &str) -> Result<ArtifactInfo, StoreError> {
    let id = session_of(path)
        .ok_or_else(|| E::Corrupt { path: path.to_path_buf(), detail: "not in a session's artifacts folder".into() })?;
    let _lock = lock::WriteLock::acquire(&store.paths.sessions.join(format!("{id}.lock")))?;
    let text = std::fs::read_to_string(path).map_err(|e| E::io(path, "read", e))?;
    let bad = || E::Corrupt { path: path.to_path_buf(), detail: "no front matter (--- … ---) at the top".into() };
    let body_at = text.strip_prefix("---\n").and_then(|r| r.find("\n---\n")).ok_or_else(bad)? + 4;
    let mut info = parse_front_matter(path, &text).ok_or_else(bad)?;
    info.note = note.to_string();
    let mut out = String::new();
    for line in text[4..body_at].lines() {
        if line.starts_with("note:") {
            out.push_str(&if note.is_empty() { "note:".to_string() } else { format!("note: {}", value(note)) });
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let new_text = format!("---\n{out}{}", &text[body_at + 1..]);
    lock::write_atomic(path, true, |w| w.write_all(new_text.as_bytes()))?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_creation_time() {
        assert_eq!(file_name("2026-09-06T14:02:11.000Z", 1), "2026-09-06T14-02-11-000Z.md");
        assert_eq!(file_name("2026-09-06T14:02:11.000Z", 2), "2026-09-06T14-02-11-000Z-2.md");
    }

    #[test]
    fn awkward_values_read_back_exactly() {
        for label in [
            "fixed three failing auth tests",
            "fix: the \"quoted\" bug",
            "two\nlines",
            " padded ",
            "#hash",
            "",
            "a: b",
            "url http://x:8/y",
        ] {
            let info = ArtifactInfo {
                file: PathBuf::from("/a/3f9a1c2b/x.md"),
                session: "3f9a1c2b".into(),
                created_at: "2026-09-06T14:02:11.000Z".into(),
                label: label.into(),
                messages: 244,
                note: format!("note for {label}"),
                entries: "1-244".into(),
            };
            let text = render(&info, &[Block { tag: "user".into(), text: "hi".into() }]);
            let back = parse_front_matter(Path::new("/a/3f9a1c2b/x.md"), &text).unwrap();
            assert_eq!(back, info, "{text}");
        }
    }

    #[test]
    fn the_body_has_one_block_per_message() {
        let info = ArtifactInfo {
            file: PathBuf::new(),
            session: "3f9a1c2b".into(),
            created_at: "2026-09-06T14:02:11.000Z".into(),
            label: "fixed three failing auth tests".into(),
            messages: 2,
            note: String::new(),
            entries: "1-244".into(),
        };
        let blocks = [
            Block { tag: "user".into(), text: "the login redirect test is failing".into() },
            Block { tag: "tool-call read".into(), text: "{\"path\":\"src/auth/redirect.ts\"}".into() },
        ];
        assert_eq!(
            render(&info, &blocks),
            "---\nlabel: fixed three failing auth tests\ncreatedAt: 2026-09-06T14:02:11.000Z\nmessages: 2\nnote:\nsession: 3f9a1c2b\nentries: 1-244\n---\n[user]\nthe login redirect test is failing\n[tool-call read]\n{\"path\":\"src/auth/redirect.ts\"}\n"
        );
    }
}
