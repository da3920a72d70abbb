//! The memory flush's rules (SPEC 7), for every program that flushes (the
//! chat at idle, `glrs-compact` before compacting): when a flush is due, the
//! compaction cycle a session is in, the flush turn's prompts, and the
//! private `memory/` folder notes go to. The turn itself is run by the
//! agent's turn loop (`crate::agent`); nothing here knows it or the REPL.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Trigger;
use crate::config::Config;
use crate::store::{Entry, EntryText, Parsed};

/// Default of `memoryFlush.softThresholdTokens`: how far below the trigger the flush runs.
pub const SOFT_THRESHOLD: u64 = 4_000;
/// Default of `memoryFlush.prompt`: the user message of the flush turn.
pub const PROMPT: &str = "Pre-compaction memory flush: the older part of this conversation will soon be \
summarised. Save anything worth keeping beyond it (decisions, facts about the user and the project, open tasks, \
exact names and commands) with memory_append. If there is nothing to save, reply with NO_REPLY.";
/// Default of `memoryFlush.systemPrompt`: appended to the system prompt for the flush turn.
pub const SYSTEM_PROMPT: &str = "You are saving durable notes before the conversation is summarised. Use \
the memory_append tool for each note. When you are done, reply with NO_REPLY and nothing else.";

/// The `custom` entry a chat records when a `before_compact` hook cancels
/// its automatic compaction (SPEC 15): `{"contextTokens": N, "reason": …}`.
/// It is not asked again in that cycle until the context has grown by
/// `keepRecentTokens`, whichever process asks next (one-shot runs too).
pub const CANCELLED: &str = "compactionCancelled";

/// The [`CANCELLED`] record's data.
pub fn cancelled_data(context_tokens: u64, reason: &str) -> Value {
    json!({"contextTokens": context_tokens, "reason": reason})
}

/// Where a session is in its compaction cycle, read from its entries by
/// [`cycle_of`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cycle {
    /// The number of `compacted` entries.
    pub compactions: u64,
    /// The compaction count the newest memory flush recorded.
    pub flushed: Option<u64>,
    /// The context size when a `before_compact` hook last cancelled an
    /// automatic compaction, since the last `compacted` entry.
    pub cancelled_at: Option<u64>,
}

/// The session's [`Cycle`], from its `compacted` and `custom` entries.
pub fn cycle_of<E: EntryText>(events: &[E]) -> Cycle {
    let mut cycle = Cycle::default();
    for raw in events {
        let text = raw.text();
        let custom = |text: &str| text.contains("memoryFlush") || text.contains(CANCELLED);
        let candidate = match crate::store::entry::quick_type(text) {
            Some(kind) => kind == "compacted" || (kind == "custom" && custom(text)),
            None => text.contains("\"compacted\"") || custom(text),
        };
        if !candidate {
            continue;
        }
        match Parsed::from_text(text) {
            Parsed::Known(Entry::Compacted { .. }) => {
                cycle.compactions += 1;
                cycle.cancelled_at = None;
            }
            Parsed::Known(Entry::Custom { name, data, .. }) if name == "memoryFlush" => {
                cycle.flushed = data.get("compactionCount").and_then(Value::as_u64);
            }
            Parsed::Known(Entry::Custom { name, data, .. }) if name == CANCELLED => {
                cycle.cancelled_at = data.get("contextTokens").and_then(Value::as_u64);
            }
            _ => {}
        }
    }
    cycle
}

/// True when `memoryFlush.enabled` is not false and no flush ran in the
/// session's current compaction cycle (`compactions`, `flushed` as
/// [`cycle_of`] reads them): the flush runs at most once a cycle.
pub fn wanted(config: &Config, compactions: u64, flushed: Option<u64>) -> bool {
    config.memory_flush.enabled != Some(false) && flushed != Some(compactions)
}

/// True when a chat should flush now: [`wanted`], and the context within
/// `softThresholdTokens` of the `trigger`. `overflowed`: the last turn ended
/// with an overflow compaction could not fix, and a flush would send the
/// same oversized context again.
pub fn due(
    config: &Config,
    trigger: &Trigger,
    context_tokens: u64,
    (compactions, flushed): (u64, Option<u64>),
    overflowed: bool,
) -> bool {
    if !wanted(config, compactions, flushed) || overflowed {
        return false;
    }
    let soft = config.memory_flush.soft_threshold_tokens.unwrap_or(SOFT_THRESHOLD);
    trigger.threshold().is_some_and(|t| context_tokens > t.saturating_sub(soft))
}

/// The flush turn's user message (`memoryFlush.prompt`, else [`PROMPT`]).
pub fn prompt(config: &Config) -> String {
    config.memory_flush.prompt.clone().unwrap_or_else(|| PROMPT.to_string())
}

/// The flush turn's system prompt: the session's own (`base`), then
/// `memoryFlush.systemPrompt` (else [`SYSTEM_PROMPT`]).
pub fn system_prompt(config: &Config, base: Option<&str>) -> String {
    let flush = config.memory_flush.system_prompt.as_deref().unwrap_or(SYSTEM_PROMPT);
    match base {
        Some(s) => format!("{s}\n\n{flush}"),
        None => flush.to_string(),
    }
}

/// The `memoryFlush` record's data: the cycle it ran in, and why it was
/// skipped, if it was.
pub fn record_data(cycle: u64, skipped: Option<&str>) -> Value {
    match skipped {
        Some(why) => json!({"compactionCount": cycle, "skipped": why}),
        None => json!({"compactionCount": cycle}),
    }
}

/// The `internal` mark of the flush's prompt (a `user` entry glrs sent).
pub const INTERNAL: &str = "memoryFlush";

/// Where the notes of a session in `cwd` go (SPEC 7): in glrs's data
/// folder, `<data>/memory/<workspace>/`, named as the workspace's
/// checkpoints are (its folder's name and a hash of its path; the
/// workspace is the git work tree `cwd` is in, else `cwd`). Never inside
/// the user's repository: no `memory/` shows up in `git status`.
pub fn memory_dir(data: &Path, cwd: &Path) -> PathBuf {
    let workspace = crate::checkpoint::workspace_of(cwd);
    data.join("memory").join(crate::checkpoint::workspace_key(&workspace))
}

/// The memory folder `dir` ([`memory_dir`]), created 0700 with the folders
/// above it when missing: notes are private.
pub fn memory_folder(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    Ok(dir.to_path_buf())
}

/// True when notes can be written in `dir` (it exists or can be made, and
/// a file can be created in it).
pub fn writable(dir: &Path) -> bool {
    memory_folder(dir).is_ok_and(|dir| tempfile::NamedTempFile::new_in(dir).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_go_to_the_data_folder_named_for_the_workspace_never_into_it() {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".git")).unwrap();
        std::fs::create_dir(project.path().join("src")).unwrap();
        let dir = memory_dir(data.path(), &project.path().join("src"));
        assert!(dir.starts_with(data.path().join("memory")), "{}", dir.display());
        assert_eq!(dir, memory_dir(data.path(), project.path()), "one folder for the whole work tree");
        assert!(writable(&dir));
        assert!(!project.path().join("memory").exists() && !project.path().join("src/memory").exists());
        // A data folder where a file stands in the way cannot take notes.
        std::fs::write(data.path().join("blocked"), "").unwrap();
        assert!(!writable(&data.path().join("blocked/memory")));
    }

    #[test]
    fn a_flush_is_wanted_once_a_cycle() {
        let config = Config::default();
        assert!(wanted(&config, 0, None));
        assert!(!wanted(&config, 2, Some(2)));
        assert!(wanted(&config, 3, Some(2)));
        let off: Config = serde_json::from_str(r#"{"memoryFlush": {"enabled": false}}"#).unwrap();
        assert!(!wanted(&off, 0, None));
    }

    #[test]
    fn a_cancelled_compaction_is_remembered_until_the_next_compaction() {
        let custom = |name: &str, data: Value| {
            serde_json::to_string(&Entry::Custom { at: "2026-11-30T00:00:00Z".into(), name: name.into(), data })
                .unwrap()
        };
        let compacted = r#"{"type":"compacted","at":"2026-11-30T00:00:00Z","brief":"b","firstKept":2,"tokensBefore":9,"tokensAfter":1,"model":"openai/gpt-4.1","artifact":"a.md"}"#;
        let flushed = custom("memoryFlush", json!({"compactionCount": 0}));
        let cancelled = custom(CANCELLED, cancelled_data(5000, "not now"));
        let events = [flushed.as_str(), cancelled.as_str()];
        assert_eq!(cycle_of(&events), Cycle { compactions: 0, flushed: Some(0), cancelled_at: Some(5000) });
        let later = custom(CANCELLED, cancelled_data(9000, "still not"));
        let events = [cancelled.as_str(), later.as_str()];
        assert_eq!(cycle_of(&events).cancelled_at, Some(9000), "the newest counts");
        let events = [cancelled.as_str(), compacted];
        assert_eq!(cycle_of(&events), Cycle { compactions: 1, flushed: None, cancelled_at: None });
    }

    #[test]
    fn the_flush_system_prompt_follows_the_sessions_own() {
        let config = Config::default();
        assert_eq!(system_prompt(&config, None), SYSTEM_PROMPT);
        assert_eq!(system_prompt(&config, Some("Be brief.")), format!("Be brief.\n\n{SYSTEM_PROMPT}"));
    }
}
