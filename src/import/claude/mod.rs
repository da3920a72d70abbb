//! Claude Code transcripts (`~/.claude/projects/<cwd>/<uuid>.jsonl`). No
//! schema is published; the shapes read here: conversation lines (`user`,
//! `assistant`, `system`) with `uuid`, `parentUuid`, `sessionId`,
//! `timestamp`, `cwd`, `version`; every content block of one answer on its
//! own `assistant` line repeating `message.id` (merged into one model
//! call); tool results in `user` lines as `tool_result` blocks (paired by
//! `tool_use_id`); `isMeta` lines are injected context; a compaction is a
//! `system` `compact_boundary` line and then a `user` line with
//! `isCompactSummary`; `summary` and `custom-title` lines are titles; a
//! subagent's lines (`isSidechain`) are in `agent-*.jsonl` files (beside the
//! session or in `<sessionId>/subagents/`), or in older versions inside the
//! session's own file. Every other line type is kept as `custom`.
//!
//! The `uuid` tree is cut into the file's session and its forks (see
//! [`tree`]); each takes its lines in file order, every line once. Lines
//! off the tree (metadata) stay with the file's session.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

mod tree;

use super::build::{Builder, CallRef, Mark, entries_before};
use super::{Parent, Read, Skipped, Unit, content_text, file_stem, text_of, time_of};
use crate::message::StopReason;
use crate::store::Entry;

/// User text Claude Code writes itself (slash commands, their output,
/// interruptions, reminders): kept, never the title.
const INJECTED: &[&str] = &[
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "Caveat: ",
    "[Request interrupted by user",
];

/// One session being built: the file's own, or a sidechain in it.
#[derive(Default)]
struct Part {
    b: Builder,
    /// Model calls by `message.id`, to merge their lines.
    calls: HashMap<String, CallRef>,
    /// A `compact_boundary` waiting for its summary: (time, tokens before).
    boundary: Option<(String, u64)>,
    /// The main part's place when this sidechain began.
    began: Option<Mark>,
    agent: Option<String>,
    /// Where each of its tree's lines ended (by `uuid`): where a fork
    /// leaving after that line begins.
    after: HashMap<String, Mark>,
}

/// Read a Claude Code transcript.
pub fn read(path: &Path, lines: Vec<(usize, Value)>) -> Read {
    let conversation = |l: &Value| matches!(l.get("type").and_then(Value::as_str), Some("user" | "assistant"));
    let is_side = |l: &Value| l.get("isSidechain").and_then(Value::as_bool) == Some(true);
    // A subagent's own file: every conversation line is on the sidechain.
    let agent_file = lines.iter().any(|(_, l)| conversation(l))
        && lines.iter().filter(|(_, l)| conversation(l)).all(|(_, l)| is_side(l));
    let tree = tree::cut(&lines, |l| is_side(l) == agent_file);
    // One part per branch of the tree, the file's session first.
    let mut parts: Vec<Part> = (0..tree.branches.len().max(1)).map(|_| Part::default()).collect();
    let mut sides: Vec<(String, Part)> = Vec::new();
    let mut skipped = Vec::new();
    let mut about = About::default();
    for (i, (n, line)) in lines.into_iter().enumerate() {
        about.note(&line);
        let node = text_of(&line, "uuid").zip(tree.owner[i]);
        let part = if is_side(&line) && !agent_file {
            let key = text_of(&line, "agentId").unwrap_or_else(|| "sidechain".into());
            let at = sides.iter().position(|(k, _)| *k == key).unwrap_or_else(|| {
                let began = Some(parts[0].b.mark());
                sides.push((key.clone(), Part { began, agent: Some(key.clone()), ..Part::default() }));
                sides.len() - 1
            });
            &mut sides[at].1
        } else {
            &mut parts[tree.owner[i].unwrap_or(0)]
        };
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if let Err(why) = part.line(&kind, line) {
            skipped.push(Skipped { line: n, why });
        }
        if let Some((uuid, branch)) = node {
            let part = &mut parts[branch];
            part.after.insert(uuid, part.b.mark());
        }
    }
    let (source_id, parent) = if agent_file {
        let call = spawning_call(path);
        (
            about.agent.clone().unwrap_or_else(|| file_stem(path)),
            about.session.clone().map(|id| Parent::Source { id, call, subagent: true }),
        )
    } else {
        (about.session.clone().unwrap_or_else(|| file_stem(path)), None)
    };
    let cwd = about.cwd.unwrap_or_default();
    let named = about.title.or(about.summary);
    let mut units = Vec::new();
    // Each branch's layout (where its items landed, its size, where each
    // of its lines ended), for the forks that leave it.
    let mut cuts: Vec<(Vec<usize>, usize, HashMap<String, Mark>)> = Vec::new();
    for (b, mut part) in parts.into_iter().enumerate() {
        let branch = tree.branches.get(b).cloned().unwrap_or(tree::Branch { key: None, from: None });
        let after = std::mem::take(&mut part.after);
        let parent = match &branch.from {
            _ if b == 0 => parent.clone(),
            Some((owner, at)) => cuts.get(*owner).map(|(placed, total, ends)| {
                let entry = ends.get(at).map_or(*total, |&mark| entries_before(placed, *total, mark));
                Parent::Fork { key: tree.branches[*owner].key.clone(), entry }
            }),
            None => None,
        };
        // A fork holds what it shares with the branch it leaves (SPEC 8).
        if let (Some(Parent::Fork { entry, .. }), Some((owner, _))) = (&parent, &branch.from) {
            let from: &Unit = &units[*owner];
            part.b.share(from.entries[..*entry].to_vec());
            part.b.model = part.b.model.take().or_else(|| from.model.clone());
        }
        let title = if b == 0 { named.clone() } else { None };
        let (unit, placed) = part.finish(branch.key, &source_id, &cwd, parent, title);
        cuts.push((placed, unit.entries.len(), after));
        units.push(unit);
    }
    for (key, side) in sides {
        let (placed, total, _) = &cuts[0];
        let began = side.began.map_or(*total, |m| entries_before(placed, *total, m));
        let parent = Some(Parent::Unit { key: None, entry: began });
        units.push(side.finish(Some(key), &source_id, &cwd, parent, None).0);
    }
    Read { version: about.version, units, skipped }
}

/// The id of the `Agent` call that started a subagent: `toolUseId` in the
/// `agent-*.meta.json` Claude Code writes beside its transcript (newer
/// versions; without it the child forks by time).
fn spawning_call(path: &Path) -> Option<String> {
    let meta = path.with_extension("meta.json");
    let bytes = std::fs::read(meta).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    text_of(&value, "toolUseId")
}

/// What the header of every session made from the file records, gathered
/// from its lines.
#[derive(Default)]
struct About {
    session: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    /// A `custom-title` line's.
    title: Option<String>,
    /// The last `summary` line's.
    summary: Option<String>,
    agent: Option<String>,
}

impl About {
    fn note(&mut self, line: &Value) {
        self.session = self.session.take().or_else(|| text_of(line, "sessionId"));
        self.cwd = self.cwd.take().or_else(|| text_of(line, "cwd"));
        self.version = text_of(line, "version").or(self.version.take());
        self.agent = self.agent.take().or_else(|| text_of(line, "agentId"));
        match line.get("type").and_then(Value::as_str) {
            Some("summary") => self.summary = text_of(line, "summary").or(self.summary.take()),
            Some("custom-title") => self.title = text_of(line, "customTitle").or(self.title.take()),
            _ => {}
        }
    }
}

impl Part {
    fn line(&mut self, kind: &str, line: Value) -> Result<(), String> {
        let at = time_of(line.get("timestamp")).unwrap_or_default();
        if !at.is_empty() {
            self.b.saw(&at);
        }
        match kind {
            "user" => self.user(&at, line),
            "assistant" => self.assistant(&at, line),
            "system" if line.get("subtype").and_then(Value::as_str) == Some("compact_boundary") => {
                let tokens = line.pointer("/compactMetadata/preTokens").and_then(Value::as_u64).unwrap_or(0);
                self.flush_boundary();
                self.boundary = Some((at, tokens));
                Ok(())
            }
            "" => Err("a line without type".into()),
            _ => {
                self.b.keep(&at, kind, line);
                Ok(())
            }
        }
    }

    /// A boundary whose summary never came: a compaction with no brief.
    fn flush_boundary(&mut self) {
        if let Some((at, tokens)) = self.boundary.take() {
            self.b.compacted(&at, "(Claude Code recorded no summary)".into(), tokens, None);
        }
    }

    fn user(&mut self, at: &str, line: Value) -> Result<(), String> {
        let message = line.get("message").ok_or("a user line without message")?;
        let content = message.get("content");
        if line.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            let (at, tokens) = self.boundary.take().unwrap_or_else(|| (at.to_string(), 0));
            self.b.compacted(&at, content_text(content), tokens, None);
            return Ok(());
        }
        self.flush_boundary();
        let meta = line.get("isMeta").and_then(Value::as_bool) == Some(true);
        let blocks = match content {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(Value::String(text)) => {
                let injected = meta || INJECTED.iter().any(|p| text.trim_start().starts_with(p));
                self.b.user(at, text.clone(), injected);
                return Ok(());
            }
            _ => return Err("a user message without content".into()),
        };
        let mut texts = Vec::new();
        for block in blocks {
            if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                let id = text_of(block, "tool_use_id").ok_or("a tool_result without tool_use_id")?;
                let failed = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                self.b.result(&id, at, content_text(block.get("content")), failed, "tool_result:unanswered");
            } else {
                texts.push(block.clone());
            }
        }
        if !texts.is_empty() {
            let text = content_text(Some(&Value::Array(texts)));
            let injected = meta || INJECTED.iter().any(|p| text.trim_start().starts_with(p));
            self.b.user(at, text, injected);
        }
        Ok(())
    }

    fn assistant(&mut self, at: &str, line: Value) -> Result<(), String> {
        self.flush_boundary();
        let message = line.get("message").ok_or("an assistant line without message")?;
        if line.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            let text = content_text(message.get("content"));
            self.b.entry(Entry::Error { at: at.to_string(), text, kind: "provider".into() });
            return Ok(());
        }
        let model = match text_of(message, "model") {
            Some(m) if m != "<synthetic>" => format!("anthropic/{m}"),
            _ => String::new(),
        };
        let stop = text_of(message, "stop_reason");
        let call = match text_of(message, "id") {
            Some(id) => *self.calls.entry(id).or_insert_with(|| self.b.model_call(at, &model, StopReason::Stop)),
            None => self.b.model_call(at, &model, StopReason::Stop),
        };
        if let Some(stop) = &stop {
            self.b.stop(call, StopReason::from(stop.as_str()));
        }
        let blocks = message.get("content").and_then(Value::as_array).ok_or("an assistant message without content")?;
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => self.b.text(call, block.get("text").and_then(Value::as_str).unwrap_or("")),
                Some("thinking") => {
                    let text = text_of(block, "thinking").unwrap_or_default();
                    self.b.reasoning(call, at, text, text_of(block, "signature"));
                }
                Some("tool_use") => {
                    let id = text_of(block, "id").ok_or("a tool_use without id")?;
                    let name = text_of(block, "name").unwrap_or_default();
                    let input =
                        block.get("input").cloned().filter(Value::is_object).unwrap_or_else(|| serde_json::json!({}));
                    self.b.tool_call(call, &id, &name, input);
                }
                // Server tools (web search) answer themselves; redacted thinking has no text.
                Some(other) => self.b.keep(at, &format!("assistant:{other}"), block.clone()),
                None => return Err("an assistant content block without type".into()),
            }
        }
        // Claude Code's own stand-in answers (`<synthetic>`) cost nothing.
        if let Some(u) = message.get("usage").filter(|_| !model.is_empty()) {
            let n = |name: &str| u.get(name).and_then(Value::as_u64).unwrap_or(0);
            let usage = Entry::Usage {
                at: at.to_string(),
                model: model.clone(),
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                cache_read_tokens: n("cache_read_input_tokens"),
                cache_write_tokens: n("cache_creation_input_tokens"),
                cost_usd: None,
            };
            self.b.usage(call, usage);
        }
        Ok(())
    }

    /// The part as a unit, and where each of its items landed.
    fn finish(
        mut self,
        key: Option<String>,
        session: &str,
        cwd: &str,
        parent: Option<Parent>,
        named: Option<String>,
    ) -> (Unit, Vec<usize>) {
        self.flush_boundary();
        let title = named.or(self.b.title.clone());
        let model = self.b.model.clone();
        let created_at = self.b.first_at.clone().unwrap_or_else(crate::time::now);
        let updated_at = self.b.last_at.clone().unwrap_or_else(|| created_at.clone());
        let (entries, placed) = self.b.finish_placed();
        let source_id = match (&key, &self.agent) {
            (Some(_), Some(agent)) => agent.clone(),
            _ => session.to_string(),
        };
        let unit = Unit { key, source_id, entries, cwd: cwd.to_string(), created_at, updated_at, title, model, parent };
        (unit, placed)
    }
}
