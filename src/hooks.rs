//! Hooks (SPEC 15): `hooks.<event>` in the config is a list of
//! `{"command", "matcher?", "timeout?"}`. Each runs with `sh -c` in the
//! session's cwd, in its own process group, with the event as JSON on stdin
//! (`event`, `sessionId`, `sessionFile`, `cwd` and the event's fields).
//! Exit 0: its stdout is kept (a `user_prompt` hook's is appended to the
//! message). Exit 2: it blocks (a `tool_call`; a `before_compact` cancels an
//! automatic compaction), its stderr being the reason. Anything else, or
//! running past its timeout (then the group is killed), is a problem the
//! caller reports, and is otherwise ignored.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::tools::Rule;

/// The timeout of a hook that sets none, in seconds.
pub const DEFAULT_TIMEOUT: u64 = 60;

/// One hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// The `sh -c` command.
    pub command: String,
    /// For `tool_call` and `tool_result`: a `TOOL` or `TOOL:GLOB` rule.
    pub matcher: Option<String>,
    /// Seconds before it is killed (default 60).
    pub timeout: Option<u64>,
}

/// `hooks.*`: the hooks of each event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the event of the same name (SPEC 15)
pub struct HooksConfig {
    pub session_start: Vec<Hook>,
    pub user_prompt: Vec<Hook>,
    pub tool_call: Vec<Hook>,
    pub tool_result: Vec<Hook>,
    pub turn_end: Vec<Hook>,
    pub before_compact: Vec<Hook>,
    pub compacted: Vec<Hook>,
    pub session_end: Vec<Hook>,
}

/// The events hooks run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // named as in SPEC 15
pub enum Event {
    SessionStart,
    UserPrompt,
    ToolCall,
    ToolResult,
    TurnEnd,
    BeforeCompact,
    Compacted,
    SessionEnd,
}

impl Event {
    /// The name in the config and in the event JSON.
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "session_start",
            Event::UserPrompt => "user_prompt",
            Event::ToolCall => "tool_call",
            Event::ToolResult => "tool_result",
            Event::TurnEnd => "turn_end",
            Event::BeforeCompact => "before_compact",
            Event::Compacted => "compacted",
            Event::SessionEnd => "session_end",
        }
    }
}

impl HooksConfig {
    /// The hooks of `event`.
    pub fn of(&self, event: Event) -> &[Hook] {
        match event {
            Event::SessionStart => &self.session_start,
            Event::UserPrompt => &self.user_prompt,
            Event::ToolCall => &self.tool_call,
            Event::ToolResult => &self.tool_result,
            Event::TurnEnd => &self.turn_end,
            Event::BeforeCompact => &self.before_compact,
            Event::Compacted => &self.compacted,
            Event::SessionEnd => &self.session_end,
        }
    }

    /// Check every matcher and timeout; errors name the key.
    pub fn validate(&self) -> Result<()> {
        for event in [
            Event::SessionStart,
            Event::UserPrompt,
            Event::ToolCall,
            Event::ToolResult,
            Event::TurnEnd,
            Event::BeforeCompact,
            Event::Compacted,
            Event::SessionEnd,
        ] {
            for (i, hook) in self.of(event).iter().enumerate() {
                let key = format!("hooks.{}[{i}]", event.name());
                if hook.command.trim().is_empty() {
                    anyhow::bail!("{key}.command: must not be empty");
                }
                if let Some(m) = &hook.matcher {
                    Rule::parse(m).map_err(|e| anyhow::anyhow!("{key}.matcher: {e:#}"))?;
                }
                if let Some(t) = hook.timeout
                    && !(1..=86_400).contains(&t)
                {
                    anyhow::bail!("{key}.timeout: must be from 1 to 86400 seconds, got {t}");
                }
            }
        }
        Ok(())
    }
}

/// Where an event happens.
pub struct Scene<'a> {
    /// The session's id.
    pub session_id: &'a str,
    /// The session's file.
    pub session_file: &'a Path,
    /// The session's cwd (where hooks run).
    pub cwd: &'a Path,
}

/// What the hooks of one event said.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// The stdout of each hook that exited 0 and printed something.
    pub output: Vec<String>,
    /// Set when a hook exited 2: its stderr (the reason).
    pub blocked: Option<String>,
    /// Hooks that failed otherwise, one line each, to report.
    pub problems: Vec<String>,
}

/// Run the hooks of `event` in order. `fields` are the event's own fields;
/// `tool` is the tool and its rule subject, which `matcher`s are tested
/// against (a hook with a matcher runs only for a matching tool). The
/// first hook that blocks stops the rest.
pub async fn run(
    hooks: &HooksConfig,
    event: Event,
    scene: &Scene<'_>,
    fields: Map<String, Value>,
    tool: Option<(&str, Option<&str>)>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let list = hooks.of(event);
    if list.is_empty() {
        return outcome;
    }
    let mut payload = Map::new();
    payload.insert("event".into(), event.name().into());
    payload.insert("sessionId".into(), scene.session_id.into());
    payload.insert("sessionFile".into(), scene.session_file.to_string_lossy().into());
    payload.insert("cwd".into(), scene.cwd.to_string_lossy().into());
    payload.extend(fields);
    let stdin = Value::Object(payload).to_string();
    for hook in list {
        if let Some(matcher) = &hook.matcher {
            let matched = match (Rule::parse(matcher), tool) {
                (Ok(rule), Some((name, subject))) => rule.matches(name, subject),
                _ => false,
            };
            if !matched {
                continue;
            }
        }
        let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let shown = crate::tools::limits::one_line(&hook.command, 60);
        match run_one(&hook.command, scene.cwd, stdin.as_bytes(), Duration::from_secs(secs)).await {
            Ok((0, out, _)) => {
                if !out.trim().is_empty() {
                    outcome.output.push(out);
                }
            }
            Ok((2, _, err)) => {
                let reason = err.trim();
                let reason =
                    if reason.is_empty() { format!("blocked by the hook `{shown}`") } else { reason.to_string() };
                outcome.blocked = Some(reason);
                break;
            }
            Ok((code, _, err)) => outcome.problems.push(format!(
                "{} hook `{shown}` failed (exit code {code}): {}",
                event.name(),
                crate::tools::limits::one_line(err.trim(), 200)
            )),
            Err(why) => outcome.problems.push(format!("{} hook `{shown}` {why}", event.name())),
        }
    }
    outcome
}

/// Run one hook: exit code, stdout, stderr; or why it did not finish.
async fn run_one(command: &str, cwd: &Path, stdin: &[u8], timeout: Duration) -> Result<(i32, String, String), String> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", command])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Hooks run on the runtime of the program's main thread (glrs-chat,
    // glrs-compact): see crate::deathsig.
    crate::deathsig::die_with_parent(cmd.as_std_mut());
    let mut child = cmd.spawn().map_err(|e| format!("could not start: {e}"))?;
    // Whatever the hook started dies with it, on time-out too.
    let _group = crate::tools::bash::GroupKill(child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or(0));
    let pipe = child.stdin.take();
    let run = async {
        if let Some(mut pipe) = pipe {
            use tokio::io::AsyncWriteExt;
            // A hook that ignores its input is fine.
            let _ = pipe.write_all(stdin).await;
        }
        child.wait_with_output().await
    };
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(out)) => Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Ok(Err(e)) => Err(format!("failed: {e}")),
        Err(_) => Err(format!("timed out after {} s and was killed", timeout.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hooks(value: Value) -> HooksConfig {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn outputs_blocks_matchers_failures_and_timeouts() {
        let dir = tempfile::tempdir().unwrap();
        let scene = Scene { session_id: "s1", session_file: Path::new("/x/s1.json"), cwd: dir.path() };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let h = hooks(json!({
            "tool_call": [
                {"command": "cat > seen.json; echo ok"},
                {"command": "echo 'no rm -rf' >&2; exit 2", "matcher": "bash:rm -rf*"},
                {"command": "exit 5"}
            ],
            "turn_end": [{"command": "sleep 30", "timeout": 1}]
        }));
        h.validate().unwrap();
        let fields = |cmd: &str| {
            let mut m = Map::new();
            m.insert("tool".into(), "bash".into());
            m.insert("input".into(), json!({"command": cmd}));
            m
        };
        let out = rt.block_on(run(&h, Event::ToolCall, &scene, fields("ls"), Some(("bash", Some("ls")))));
        assert_eq!(out.output, ["ok\n"]);
        assert_eq!(out.blocked, None);
        assert!(out.problems.len() == 1 && out.problems[0].contains("exit code 5"), "{out:?}");
        let seen: Value = serde_json::from_slice(&std::fs::read(dir.path().join("seen.json")).unwrap()).unwrap();
        assert_eq!(seen["event"], "tool_call");
        assert_eq!(seen["sessionId"], "s1");
        assert_eq!(seen["input"]["command"], "ls");
        let out = rt.block_on(run(&h, Event::ToolCall, &scene, fields("rm -rf /"), Some(("bash", Some("rm -rf /")))));
        assert_eq!(out.blocked.as_deref(), Some("no rm -rf"));
        assert!(out.problems.is_empty(), "the block stops the rest");
        let started = std::time::Instant::now();
        let out = rt.block_on(run(&h, Event::TurnEnd, &scene, Map::new(), None));
        assert!(out.problems[0].contains("timed out after 1 s"), "{out:?}");
        assert!(started.elapsed() < Duration::from_secs(20));

        for (bad, key) in [
            (json!({"tool_call": [{"command": "x", "matcher": "bash:["}]}), "hooks.tool_call[0].matcher"),
            (json!({"turn_end": [{"command": "x", "timeout": 0}]}), "hooks.turn_end[0].timeout"),
        ] {
            let err = format!("{:#}", hooks(bad).validate().unwrap_err());
            assert!(err.contains(key), "{err}");
        }
    }
}
