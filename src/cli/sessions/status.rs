//! `glrs-sessions status`: what is known about one session.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::StatusArgs;
use crate::exit::ExitCode;
use crate::output::{field, stdout_is_terminal, terminal_safe};
use crate::store::{Entry, Parsed, Store};

/// Totals over a session's `usage` entries.
#[derive(Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// `modelCalls` in JSON as in the text form: one name for one fact.
    #[serde(rename = "modelCalls")]
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Only when at least one call reported a cost.
    pub cost_usd: Option<f64>,
}

impl UsageTotals {
    /// From a session's usage sum.
    fn of(sum: &crate::store::recent::UsageSum) -> UsageTotals {
        UsageTotals {
            calls: sum.calls,
            input_tokens: sum.input_tokens,
            output_tokens: sum.output_tokens,
            cache_read_tokens: sum.cache_read_tokens,
            cache_write_tokens: sum.cache_write_tokens,
            cost_usd: sum.cost_usd,
        }
    }

    /// Add `other` in (saturating: the counts come from files).
    fn add(&mut self, other: &UsageTotals) {
        self.calls = self.calls.saturating_add(other.calls);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        if let Some(cost) = other.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }
}

/// The session's subagents (SPEC 20): the child sessions its `task` calls
/// made (`parent.id` this session, `subagent: true`), and their usage,
/// which `usage` includes.
#[derive(Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Subagents {
    /// Their ids, oldest first.
    pub sessions: Vec<String>,
    /// Their usage summed.
    pub usage: UsageTotals,
}

/// The subagents of session `id`; a child that cannot be read is named in
/// a warning and left out.
fn subagents_of(store: &Store, id: &str) -> Result<Subagents> {
    let listing = crate::store::listing::list(store)?;
    let mut children: Vec<&crate::store::listing::Summary> = listing
        .sessions
        .iter()
        .filter(|s| s.parent.as_ref().and_then(|p| p.get("id")).and_then(Value::as_str) == Some(id))
        .collect();
    children.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    let mut found = Subagents::default();
    for child in children {
        let read = store.resolve(&child.id).and_then(|at| store.tally(&at));
        match read {
            Ok((recent, sum)) if recent.lines.get("subagent").and_then(Value::as_bool) == Some(true) => {
                found.sessions.push(child.id.clone());
                found.usage.add(&UsageTotals::of(&sum));
            }
            Ok(_) => {}
            Err(e) => crate::cli::warn(super::PROGRAM, &format!("subagent {}: {}", child.id, e.report())),
        }
    }
    Ok(found)
}

/// Everything `status` reports.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub id: String,
    pub path: String,
    pub legacy: bool,
    pub title: Option<String>,
    pub key: Option<String>,
    pub model: Option<String>,
    /// The thinking level saved in the header (SPEC 16), when set.
    pub thinking: Option<String>,
    /// The sandbox mode (SPEC 17): the header's, else the config's.
    pub sandbox: String,
    /// Whether this machine's kernel enforces that mode.
    pub sandbox_enforced: bool,
    pub cwd: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub parent: Option<Value>,
    pub pinned: bool,
    pub bytes: u64,
    pub entries: u64,
    pub context_tokens: u64,
    /// The window compaction plans against, and the trigger (SPEC 6).
    pub window: u64,
    pub trigger: Option<u64>,
    pub compactions: u64,
    pub last_compaction: Option<String>,
    pub last_memory_flush: Option<String>,
    pub artifacts: u64,
    /// The session's usage and its subagents'.
    pub usage: UsageTotals,
    /// The subagents' part of `usage`, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagents: Option<Subagents>,
    /// True while a chat holds the session's open lock.
    pub open: bool,
    /// The pid of the program that has it open.
    pub open_by: Option<u32>,
    /// True when that program is `glrs-compact` (its memory flush before a
    /// compaction), not a chat.
    pub compacting: bool,
}

pub fn run(store: &Store, args: &StatusArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let at = store.resolve(&args.id)?;
    // Only the header and the count are read, with the `compacted` and
    // `custom` entries and the `usage` totals of a scan (kept beside the
    // file, so a second status reads only what was appended since).
    let (recent, sum) = store.tally(&at)?;
    let file = &recent.lines;
    let text = |name| file.get_str(name).map(str::to_string);
    let mut usage = UsageTotals::of(&sum);
    let subagents = Some(subagents_of(store, at.id.as_str())?).filter(|s| !s.sessions.is_empty());
    if let Some(children) = &subagents {
        usage.add(&children.usage);
    }
    let (mut compactions, mut last_compaction, mut last_flush) = (0, None, None);
    for hit in &recent.hits {
        match Parsed::from_text(&hit.text) {
            Parsed::Known(Entry::Compacted { at, .. }) => {
                compactions += 1;
                last_compaction = Some(at);
            }
            Parsed::Known(Entry::Custom { at, name, .. }) if name == "memoryFlush" => last_flush = Some(at),
            _ => {}
        }
    }
    let holder = if at.legacy { None } else { store.open_holder_of(&at.id)? };
    let config = crate::config::Config::load_env(&store.paths)?;
    let trigger = crate::compact::Trigger::for_session(&config, file.get_str("model"));
    let sandbox_mode = file
        .get_str("sandbox")
        .and_then(|m| crate::sandbox::Mode::parse(m).ok())
        .unwrap_or(config.sandbox.mode.unwrap_or_default());
    let status = Status {
        id: at.id.to_string(),
        path: at.path.display().to_string(),
        legacy: at.legacy,
        title: text("title"),
        key: text("key"),
        model: text("model"),
        thinking: text("thinking"),
        sandbox: sandbox_mode.name().to_string(),
        sandbox_enforced: sandbox_mode != crate::sandbox::Mode::Off
            && matches!(crate::sandbox::support(), crate::sandbox::Support::Enforced(_)),
        cwd: text("cwd"),
        created_at: text("createdAt"),
        updated_at: text("updatedAt"),
        parent: file.get("parent").cloned(),
        pinned: file.get("pinned").and_then(Value::as_bool).unwrap_or(false),
        bytes: std::fs::metadata(&at.path).map(|m| m.len()).unwrap_or(0),
        entries: recent.total as u64,
        context_tokens: file.get_u64("contextTokens").unwrap_or(0),
        window: trigger.window,
        trigger: trigger.threshold(),
        compactions,
        last_compaction,
        last_memory_flush: last_flush,
        artifacts: store.artifact_count(&at.id) as u64,
        usage,
        subagents,
        open: holder.is_some(),
        open_by: holder.and_then(|(pid, _)| pid),
        compacting: holder.is_some_and(|(_, by)| by == crate::store::lock::Holder::Compaction),
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &status)?;
        writeln!(out)?;
    } else {
        write_plain(out, &status)?;
    }
    Ok(ExitCode::Success)
}

/// One `name<TAB>value` line a fact (aligned on a terminal); absent facts
/// are left out.
fn write_plain(out: &mut dyn Write, s: &Status) -> Result<()> {
    let terminal = stdout_is_terminal();
    let mut rows: Vec<(&str, String)> = vec![("id", s.id.clone()), ("path", s.path.clone())];
    let mut opt = |name, value: &Option<String>| {
        if let Some(v) = value {
            rows.push((name, v.clone()));
        }
    };
    opt("title", &s.title);
    opt("key", &s.key);
    opt("model", &s.model);
    opt("thinking", &s.thinking);
    let enforced = if s.sandbox_enforced { "enforced by the kernel" } else { "not enforced here" };
    opt("sandbox", &Some(format!("{} ({enforced})", s.sandbox)));
    opt("cwd", &s.cwd);
    opt("createdAt", &s.created_at);
    opt("updatedAt", &s.updated_at);
    if let Some(parent) = &s.parent {
        let id = parent.get("id").and_then(Value::as_str).unwrap_or("?");
        let entry = parent.get("entry").map(Value::to_string).unwrap_or_default();
        rows.push(("parent", format!("{id} {entry}").trim_end().to_string()));
    }
    rows.push(("legacy", s.legacy.to_string()));
    rows.push(("pinned", s.pinned.to_string()));
    rows.push(("bytes", s.bytes.to_string()));
    rows.push(("entries", s.entries.to_string()));
    rows.push(("contextTokens", s.context_tokens.to_string()));
    rows.push(("window", s.window.to_string()));
    rows.push(("trigger", s.trigger.map_or("off".into(), |t| t.to_string())));
    rows.push(("compactions", s.compactions.to_string()));
    let mut opt = |name, value: &Option<String>| {
        if let Some(v) = value {
            rows.push((name, v.clone()));
        }
    };
    opt("lastCompaction", &s.last_compaction);
    opt("lastMemoryFlush", &s.last_memory_flush);
    rows.push(("artifacts", s.artifacts.to_string()));
    let u = &s.usage;
    rows.push(("modelCalls", u.calls.to_string()));
    rows.push(("inputTokens", u.input_tokens.to_string()));
    rows.push(("outputTokens", u.output_tokens.to_string()));
    rows.push(("cacheReadTokens", u.cache_read_tokens.to_string()));
    rows.push(("cacheWriteTokens", u.cache_write_tokens.to_string()));
    if let Some(cost) = u.cost_usd {
        rows.push(("costUsd", format!("{cost:.6}")));
    }
    if let Some(children) = &s.subagents {
        // SPEC 20: `subagents: N, cost …`, their ids after.
        let cost = children.usage.cost_usd.map_or("unknown".to_string(), |c| format!("{c:.6}"));
        let ids = children.sessions.join(" ");
        rows.push(("subagents", format!("{}, cost {cost} ({ids})", children.sessions.len())));
    }
    let open = match (s.open, s.open_by) {
        (false, _) => "no".to_string(),
        (true, Some(pid)) => format!("pid {pid}"),
        (true, None) => "yes".to_string(),
    };
    let open = if s.compacting { format!("{open} (glrs-compact: a compaction is running)") } else { open };
    rows.push(("openBy", open));
    for (name, value) in rows {
        if terminal {
            // Titles, keys and folders are text from the session file:
            // shown, never obeyed, on a terminal.
            writeln!(out, "{name:<17} {}", terminal_safe(&value))?;
        } else {
            writeln!(out, "{name}\t{}", field(&value))?;
        }
    }
    Ok(())
}
