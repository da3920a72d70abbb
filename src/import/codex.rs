//! Codex rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), after
//! the rollout types of openai/codex `codex-rs` (protocol crate): each line
//! a `RolloutLine` `{timestamp, type, payload}` holding a `RolloutItem`
//! (`session_meta`, `turn_context`, `response_item`, `compacted`,
//! `event_msg`); the older layout is a header line `{id, timestamp,
//! instructions}` and then bare `ResponseItem`s.
//!
//! `response_item`s are the history: a run of model-side items (reasoning,
//! assistant text, calls) is one model call, each `function_call_output`
//! answers its `call_id`. `event_msg`s are the UI's echo of that history:
//! kept as `custom`, never mapped twice (only a model call's first
//! `token_count` gives its usage; Codex repeats it, and those are kept).
//! Every line maps to an entry or is kept whole: nothing of it is lost.

use std::path::Path;

use serde_json::Value;

use super::build::{Builder, CallRef};
use super::{Parent, Read, Skipped, Unit, content_text, file_stem, text_of, time_of};
use crate::message::StopReason;
use crate::store::Entry;

/// The prefixes of the user messages Codex writes itself.
const INJECTED: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
];

/// What the reader knows as it walks the file.
#[derive(Default)]
struct State {
    b: Builder,
    at: String,
    id: Option<String>,
    cwd: String,
    version: Option<String>,
    provider: String,
    model: String,
    parent: Option<Parent>,
    /// The model call the latest model-side items belong to.
    current: Option<CallRef>,
    /// The latest model call, for the usage a `token_count` reports.
    last: Option<CallRef>,
    /// The context the latest `token_count` reports (its last call's input
    /// and output): a compaction's `tokensBefore`; 0 once used or unknown.
    context_tokens: u64,
    skipped: Vec<Skipped>,
}

/// Read a rollout.
pub fn read(path: &Path, lines: Vec<(usize, Value)>) -> Read {
    let mut s = State { provider: "openai".into(), ..State::default() };
    for (n, line) in lines {
        if let Some(at) = time_of(line.get("timestamp")) {
            s.b.saw(&at);
            s.at = at;
        }
        let kind = line.get("type").and_then(Value::as_str).map(str::to_string);
        match (kind.as_deref(), line.get("payload")) {
            (Some(kind), Some(payload)) => {
                if let Err(why) = s.item(kind, payload, &line) {
                    s.skipped.push(Skipped { line: n, why });
                }
            }
            // The older layout: the header, state records, bare items.
            (None, None) if n_is_header(&line, &s) => {
                s.meta(&line);
                // Kept as the `session_meta` it was in that layout (its
                // `instructions` and `git` map to no entry).
                let at = s.at.clone();
                s.b.keep(&at, "session_meta", line);
            }
            (None, None) if line.get("record_type").is_some() => {
                let at = s.at.clone();
                s.b.keep(&at, "state", line);
            }
            (Some(_), None) => {
                let item = line.clone();
                if let Err(why) = s.response_item(&item) {
                    s.skipped.push(Skipped { line: n, why });
                }
            }
            _ => s.skipped.push(Skipped { line: n, why: "not a Codex rollout line (no type)".into() }),
        }
    }
    s.finish(path)
}

/// The older layout's header: the first line, with an `id`.
fn n_is_header(line: &Value, s: &State) -> bool {
    s.id.is_none() && line.get("id").is_some()
}

impl State {
    fn item(&mut self, kind: &str, payload: &Value, line: &Value) -> Result<(), String> {
        match kind {
            "session_meta" => {
                self.meta(payload);
                let at = self.at.clone();
                self.b.keep(&at, kind, line.clone());
            }
            "turn_context" => {
                // A turn of its own begins: no answer goes on across it.
                self.current = None;
                if let Some(model) = text_of(payload, "model") {
                    self.model = model;
                }
                if let Some(cwd) = text_of(payload, "cwd") {
                    self.cwd = cwd;
                }
                let at = self.at.clone();
                self.b.keep(&at, kind, line.clone());
            }
            "response_item" => self.response_item(payload)?,
            "compacted" => self.compacted(payload, line)?,
            "event_msg" => self.event(payload, line),
            _ => {
                let at = self.at.clone();
                self.b.keep(&at, kind, line.clone());
            }
        }
        Ok(())
    }

    /// `SessionMeta` (or the older header).
    fn meta(&mut self, meta: &Value) {
        if self.id.is_none() {
            self.id = text_of(meta, "id");
        }
        if let Some(cwd) = text_of(meta, "cwd") {
            self.cwd = cwd;
        }
        if let Some(version) = text_of(meta, "cli_version") {
            self.version = Some(version);
        }
        if let Some(provider) = text_of(meta, "model_provider") {
            self.provider = provider;
        }
        // The thread's own start (its line is written a little later).
        if let Some(at) = time_of(meta.get("timestamp")) {
            if self.b.first_at.as_ref().is_none_or(|first| at < *first) {
                self.b.first_at = Some(at.clone());
            }
            self.b.saw(&at);
        }
        // A spawned thread (`source: {subagent: {thread_spawn: {parent_thread_id}}}`,
        // a subagent) or a fork (`forked_from_id`, the history copied into
        // its own rollout) continues another thread.
        let spawner = meta.pointer("/source/subagent/thread_spawn/parent_thread_id").and_then(Value::as_str);
        let forked = meta.get("forked_from_id").and_then(Value::as_str);
        if let Some(id) = spawner.or(forked) {
            self.parent = Some(Parent::Source { id: id.to_string(), call: None, subagent: spawner.is_some() });
        }
    }

    fn model_name(&self) -> String {
        if self.model.is_empty() { String::new() } else { format!("{}/{}", self.provider, self.model) }
    }

    /// The model call model-side items join, started if there is none.
    fn current(&mut self) -> CallRef {
        if let Some(call) = self.current {
            return call;
        }
        let (at, model) = (self.at.clone(), self.model_name());
        let call = self.b.model_call(&at, &model, StopReason::Stop);
        self.current = Some(call);
        self.last = Some(call);
        call
    }

    fn response_item(&mut self, item: &Value) -> Result<(), String> {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let at = self.at.clone();
        let need = |name: &str| text_of(item, name).ok_or_else(|| format!("a {kind} without {name}"));
        match kind {
            "message" => {
                let role = need("role")?;
                let text = content_text(item.get("content"));
                match role.as_str() {
                    "assistant" => {
                        let call = self.current();
                        self.b.text(call, &text);
                    }
                    "user" => {
                        self.current = None;
                        let injected = INJECTED.iter().any(|p| text.trim_start().starts_with(p));
                        // The older layout has no `session_meta` cwd: the
                        // environment Codex told its model is where it ran.
                        if let Some(cwd) = environment_cwd(&text) {
                            self.cwd = cwd;
                        }
                        self.b.user(&at, text, injected);
                    }
                    // Developer and system messages are Codex's own
                    // instructions (sandbox, permissions): not the user's.
                    _ => self.b.keep(&at, &format!("message:{role}"), item.clone()),
                }
            }
            "reasoning" => {
                let text = reasoning_text(item);
                let call = self.current();
                self.b.reasoning(call, &at, text, None);
            }
            "function_call" => {
                let (id, name) = (need("call_id")?, need("name")?);
                let call = self.current();
                self.b.stop(call, StopReason::ToolUse);
                self.b.tool_call(call, &id, &name, arguments(item.get("arguments")));
            }
            "custom_tool_call" => {
                let (id, name) = (need("call_id")?, need("name")?);
                let input = serde_json::json!({"input": item.get("input").cloned().unwrap_or(Value::Null)});
                let call = self.current();
                self.b.stop(call, StopReason::ToolUse);
                self.b.tool_call(call, &id, &name, input);
            }
            "local_shell_call" => {
                let id = text_of(item, "call_id")
                    .or_else(|| text_of(item, "id"))
                    .ok_or("a local_shell_call without call_id")?;
                let call = self.current();
                self.b.stop(call, StopReason::ToolUse);
                self.b.tool_call(call, &id, "local_shell", item.get("action").cloned().unwrap_or(Value::Null));
            }
            "function_call_output" | "custom_tool_call_output" => {
                let id = need("call_id")?;
                self.current = None;
                let (result, failed) = output_text(item.get("output"));
                self.b.result(&id, &at, result, failed, &format!("{kind}:unanswered"));
            }
            // Built-in and harness items with no result of their own.
            _ => self.b.keep(&at, kind, item.clone()),
        }
        Ok(())
    }

    /// `CompactedItem {message, replacement_history}`: the history before it
    /// is replaced by the summary. A remote compaction's summary is
    /// encrypted (a `compaction` item only OpenAI's server reads, `message`
    /// empty): the brief is then the messages Codex carried on beside it.
    fn compacted(&mut self, payload: &Value, line: &Value) -> Result<(), String> {
        self.current = None;
        let at = self.at.clone();
        let history = payload.get("replacement_history").and_then(Value::as_array);
        if payload.get("message").is_none() && history.is_none() {
            return Err("a compacted item without message".into());
        }
        let mut brief = text_of(payload, "message").unwrap_or_default();
        if brief.trim().is_empty() {
            brief = carried_on(history.map_or(&[][..], Vec::as_slice));
        }
        if history.is_some() {
            self.b.keep(&at, "compacted", line.clone());
        }
        // 0 (no `token_count` since the last compaction): the builder
        // estimates it from what the compaction replaced.
        let tokens_before = std::mem::take(&mut self.context_tokens);
        self.b.compacted(&at, brief, tokens_before, None);
        Ok(())
    }

    fn event(&mut self, payload: &Value, line: &Value) {
        let at = self.at.clone();
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        // A new turn (a compaction's, say, whose summary Codex records as an
        // answer before the `compacted` line): no answer goes on across it.
        if matches!(kind, "task_started" | "turn_started") {
            self.current = None;
        }
        let usage = payload.pointer("/info/last_token_usage");
        match (kind, usage) {
            ("token_count", Some(usage)) => {
                let n = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
                let cached = n("cached_input_tokens");
                let total = n("total_tokens");
                self.context_tokens =
                    if total > 0 { total } else { n("input_tokens").saturating_add(n("output_tokens")) };
                // A model call's usage is the first count after it; Codex
                // repeats the count (a turn's start, after a compaction):
                // a repeat is kept, so no call is counted twice.
                let Some(call) = self.last.take() else {
                    self.b.keep(&at, "event_msg", line.clone());
                    return;
                };
                let entry = Entry::Usage {
                    at,
                    model: self.model_name(),
                    input_tokens: n("input_tokens").saturating_sub(cached),
                    output_tokens: n("output_tokens"),
                    cache_read_tokens: cached,
                    cache_write_tokens: 0,
                    cost_usd: None,
                };
                self.b.usage(call, entry);
            }
            _ => self.b.keep(&at, "event_msg", line.clone()),
        }
    }

    fn finish(self, path: &Path) -> Read {
        let State { b, id, cwd, version, parent, skipped, .. } = self;
        let (title, model) = (b.title.clone(), b.model.clone());
        let created_at = b.first_at.clone().unwrap_or_else(crate::time::now);
        let updated_at = b.last_at.clone().unwrap_or_else(|| created_at.clone());
        let unit = Unit {
            key: None,
            source_id: id.unwrap_or_else(|| file_stem(path)),
            entries: b.finish(),
            cwd,
            created_at,
            updated_at,
            title,
            model,
            parent,
        };
        Read { version, units: vec![unit], skipped }
    }
}

/// The label of a brief made of the messages a remote compaction kept.
const CARRIED_ON: &str = "Codex compacted here (its own summary is encrypted)";

/// The brief of a compaction whose summary is encrypted: the user and
/// assistant messages of its replacement history, which is what Codex
/// itself sends on (its developer messages are Codex's own instructions,
/// never sent by glrs, as everywhere in a rollout).
fn carried_on(history: &[Value]) -> String {
    let mut brief = format!(
        "{CARRIED_ON}\n\nCodex's summary of the earlier conversation is encrypted (only OpenAI's server reads it); \
         these are the messages Codex kept and sent on with it:"
    );
    let mut encrypted = 0;
    for item in history {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let role = item.get("role").and_then(Value::as_str).unwrap_or("");
        match (kind, role) {
            ("message", "user" | "assistant") => {
                let text = content_text(item.get("content"));
                if !text.trim().is_empty() {
                    brief.push_str(&format!("\n\n[{role}]\n{text}"));
                }
            }
            ("compaction" | "compaction_summary", _) => encrypted += 1,
            _ => {}
        }
    }
    if encrypted > 0 {
        brief.push_str(&format!("\n\n({encrypted} encrypted summary item(s) left out: glrs cannot read them.)"));
    }
    brief
}

/// The working folder an `<environment_context>` message names: `<cwd>`
/// in the XML Codex writes, or the `Current working directory:` line of
/// its earlier text form.
fn environment_cwd(text: &str) -> Option<String> {
    let body = text.trim_start().strip_prefix("<environment_context>")?;
    let body = body.split("</environment_context>").next().unwrap_or(body);
    let from_xml = body.split_once("<cwd>").and_then(|(_, rest)| rest.split_once("</cwd>")).map(|(cwd, _)| cwd);
    let from_text = || body.lines().find_map(|l| l.trim().strip_prefix("Current working directory:"));
    let cwd = from_xml.or_else(from_text)?.trim();
    (!cwd.is_empty() && !cwd.contains('\n')).then(|| cwd.to_string())
}

/// A reasoning item's text: its raw content when recorded, else its summary.
fn reasoning_text(item: &Value) -> String {
    let content = content_text(item.get("content"));
    if !content.is_empty() {
        return content;
    }
    content_text(item.get("summary"))
}

/// A call's input: the `arguments` JSON text as an object (text that is
/// not an object is wrapped, as every provider wants an object).
fn arguments(arguments: Option<&Value>) -> Value {
    let parsed = match arguments {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())),
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    };
    if parsed.is_object() { parsed } else { serde_json::json!({"arguments": parsed}) }
}

/// A tool output's text and whether it failed: a string, content items,
/// or `{content, success}`.
fn output_text(output: Option<&Value>) -> (String, bool) {
    match output {
        Some(Value::Object(o)) => {
            let failed = o.get("success").and_then(Value::as_bool) == Some(false);
            (content_text(o.get("content")), failed)
        }
        other => (content_text(other), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_environment_names_the_cwd_in_either_form() {
        let xml =
            "<environment_context>\n  <cwd>/home/ada/src/tool</cwd>\n  <shell>bash</shell>\n</environment_context>";
        let text = "<environment_context>\nCurrent working directory: /srv/app\nApproval policy: on-request\n</environment_context>";
        assert_eq!(environment_cwd(xml).as_deref(), Some("/home/ada/src/tool"));
        assert_eq!(environment_cwd(text).as_deref(), Some("/srv/app"));
        assert_eq!(environment_cwd("<environment_context>\n  <shell>zsh</shell>\n</environment_context>"), None);
        assert_eq!(environment_cwd("please cd <cwd>/etc</cwd>"), None, "only Codex's own message");
    }

    #[test]
    fn an_encrypted_summary_leaves_the_brief_the_messages_codex_sent_on() {
        let history = [
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the build"}]}),
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox"}]}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and the docs"}]}),
            json!({"type": "compaction", "encrypted_content": "gAAAAB"}),
        ];
        let brief = carried_on(&history);
        assert!(brief.starts_with(CARRIED_ON) && CARRIED_ON.len() < 80);
        assert!(brief.contains("[user]\nfix the build\n\n[user]\nand the docs"), "{brief}");
        assert!(!brief.contains("sandbox") && !brief.contains("gAAAAB"), "{brief}");
    }
}
