//! An imported session found by its source's own id (SPEC 2, 18): the
//! Claude Code session uuid, the Codex rollout's id (or its file name), pi's
//! session id, pasted where glrs takes a session id. Looked up in the
//! sessions' `importedFrom` records, never used as a path.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::Located;

/// The most of a session file's first line read for its header.
const HEAD_LIMIT: u64 = 1 << 20;

/// Whether `text` could be a source's id: letters, digits, `-`, `_`, `.`,
/// at most 200 of them. Anything else is never looked for.
pub(super) fn could_be(text: &str) -> bool {
    (8..=200).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// The session made from the main line of the source whose id is `text`:
/// of those in `sessions` whose `importedFrom` names it (`id`, or the
/// source file's name with or without `.jsonl`), with no branch `key` and
/// no `parent` (a fork of it, a subagent's), the one updated last. `None` when no session was imported from it.
pub(super) fn find(sessions: Vec<Located>, text: &str) -> Option<Located> {
    let mut best: Option<(String, Located)> = None;
    for at in sessions.into_iter().filter(|at| !at.legacy) {
        let Some(header) = head_of(&at.path) else { continue };
        let Some(from) = header.get("importedFrom") else { continue };
        // A branch has a key, a fork (which copies the header) and a child a parent.
        let side = from.get("key").is_some_and(|k| !k.is_null()) || header.contains_key("parent");
        if side || !names(from, text) {
            continue;
        }
        let updated = header.get("updatedAt").and_then(Value::as_str).unwrap_or("").to_string();
        if best.as_ref().is_none_or(|(newest, _)| updated > *newest) {
            best = Some((updated, at));
        }
    }
    best.map(|(_, at)| at)
}

/// True when `from` (an `importedFrom` record) names the source `text`.
fn names(from: &Value, text: &str) -> bool {
    if from.get("id").and_then(Value::as_str) == Some(text) {
        return true;
    }
    let stem = from.get("path").and_then(Value::as_str).and_then(|p| Path::new(p).file_name()?.to_str());
    stem.is_some_and(|name| name == text || name.strip_suffix(".jsonl") == Some(text))
}

/// The header fields before `events` of a file in the store's layout (the
/// first line, closed); `None` for anything else.
fn head_of(path: &Path) -> Option<serde_json::Map<String, Value>> {
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    file.take(HEAD_LIMIT).read_to_end(&mut head).ok()?;
    let line = &head[..memchr::memchr(b'\n', &head)?];
    let mut closed = line.strip_suffix(b"\"events\":[")?.to_vec();
    closed.extend_from_slice(b"\"events\":[]}");
    serde_json::from_slice(&closed).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_source_is_named_by_its_id_or_its_file() {
        let from = json!({"tool": "codex", "id": "0199a1b2-c3d4", "path": "/s/rollout-2025-01-01-0199a1b2-c3d4.jsonl"});
        assert!(names(&from, "0199a1b2-c3d4"));
        assert!(names(&from, "rollout-2025-01-01-0199a1b2-c3d4"));
        assert!(names(&from, "rollout-2025-01-01-0199a1b2-c3d4.jsonl"));
        assert!(!names(&from, "0199a1b2"));
        assert!(
            could_be("6f1c2a9e-1b7d-4c55-9d2e-3a8f0c4b7e11") && !could_be("../etc/passwd") && !could_be("a/b-c-d-e")
        );
    }
}
