//! Hooks (SPEC 15): `hooks.<event>` in the config is a list of
//! `{"command", "matcher?", "timeout?", "cwd?"}`. Each runs with `sh -c` in
//! its `cwd`, else in `/` (never the workspace), in its own process group,
//! with the event as JSON on stdin (`event`, `sessionId`, `sessionFile`,
//! `cwd` and the event's fields).
//! Exit 0: its stdout is kept (a `user_prompt` hook's is appended to the
//! message). Exit 2: it blocks (a `tool_call`; a `before_compact` cancels an
//! automatic compaction), its stderr being the reason. Anything else, or
//! running past its timeout, is a problem the caller reports, and is
//! otherwise ignored.
//!
//! Hooks run through the process runner `bash` uses (`crate::process`): a hook is done when its shell
//! exits, and then its whole group is killed (so `sleep 100 &` neither holds
//! us until the timeout nor outlives the hook), and its output is cut to
//! the tool limits, the whole kept in a file the note names.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::limits;
use crate::permissions::Rule;
use crate::process::{self, Ending, Ran, Spawn};

/// The timeout of a hook that sets none, in seconds.
pub const DEFAULT_TIMEOUT: u64 = 60;

/// One hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// The `sh -c` command.
    pub command: String,
    /// For `tool_call` and `tool_result`: a `TOOL` or `TOOL:GLOB` rule,
    /// parsed once as the config is read (a bad one fails the load, the
    /// error naming its key), not again at every event.
    #[serde(default, deserialize_with = "matcher")]
    pub matcher: Option<Rule>,
    /// Seconds before it is killed (default 60).
    pub timeout: Option<u64>,
    /// The folder it runs in (`~` expanded, a relative one, `.` too, from
    /// the session's cwd); else `/`, never the workspace, where the model
    /// may have planted what the command would run
    /// ([`crate::paths::OWN_PROGRAMS_CWD`]). The session's cwd is in the
    /// event's JSON either way.
    pub cwd: Option<String>,
}

/// Read a `matcher` as a [`Rule`]; the config reader puts the key before
/// the error.
fn matcher<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<Rule>, D::Error> {
    let text = String::deserialize(de)?;
    Rule::parse(&text).map(Some).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
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

/// What an event tells its hooks besides the scene (SPEC 15): one case
/// per event, serialized to exactly the keys of the event's JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[allow(missing_docs)] // each field is the key of the same name in SPEC 15
pub enum Payload {
    SessionStart {},
    UserPrompt {
        prompt: String,
    },
    ToolCall {
        tool: String,
        input: Value,
    },
    ToolResult {
        tool: String,
        input: Value,
        result: String,
        #[serde(rename = "isError")]
        is_error: bool,
    },
    TurnEnd {
        reply: String,
    },
    BeforeCompact {
        #[serde(rename = "tokensBefore")]
        tokens_before: u64,
    },
    Compacted {
        #[serde(rename = "tokensBefore")]
        tokens_before: u64,
        #[serde(rename = "tokensAfter")]
        tokens_after: u64,
        artifact: String,
    },
    SessionEnd {},
}

impl Payload {
    /// The event it is the payload of.
    pub fn event(&self) -> Event {
        match self {
            Payload::SessionStart {} => Event::SessionStart,
            Payload::UserPrompt { .. } => Event::UserPrompt,
            Payload::ToolCall { .. } => Event::ToolCall,
            Payload::ToolResult { .. } => Event::ToolResult,
            Payload::TurnEnd { .. } => Event::TurnEnd,
            Payload::BeforeCompact { .. } => Event::BeforeCompact,
            Payload::Compacted { .. } => Event::Compacted,
            Payload::SessionEnd {} => Event::SessionEnd,
        }
    }

    /// Its keys and values, for the event's JSON.
    fn fields(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields,
            // A struct of strings, numbers and JSON values always
            // serializes to an object.
            _ => Map::new(),
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

    /// Check every command and timeout (matchers were checked as they were
    /// read); errors name the key.
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
    /// The session's cwd (told to hooks; where one whose `cwd` is relative runs).
    pub cwd: &'a Path,
    /// Applied to a hook's long output kept in a file.
    pub redactor: &'a crate::redact::Redactor,
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

/// Run the hooks of `payload`'s event in order, telling them the payload;
/// `tool` is the tool and its rule subject, which `matcher`s are tested
/// against (a hook with a matcher runs only for a matching tool). The
/// first hook that blocks stops the rest.
pub async fn run(
    hooks: &HooksConfig,
    payload: Payload,
    scene: &Scene<'_>,
    tool: Option<(&str, Option<&str>)>,
) -> Outcome {
    if hooks.of(payload.event()).is_empty() {
        return Outcome::default();
    }
    // A long output is kept whole where `bash` keeps its own.
    run_in(hooks, &payload, scene, tool, &crate::limits::output_dir()).await
}

/// [`run`], with long outputs kept whole in files under `output_dir`.
async fn run_in(
    hooks: &HooksConfig,
    payload: &Payload,
    scene: &Scene<'_>,
    tool: Option<(&str, Option<&str>)>,
    output_dir: &Path,
) -> Outcome {
    let event = payload.event();
    let mut outcome = Outcome::default();
    let list = hooks.of(event);
    if list.is_empty() {
        return outcome;
    }
    let mut json = Map::new();
    json.insert("event".into(), event.name().into());
    json.insert("sessionId".into(), scene.session_id.into());
    json.insert("sessionFile".into(), scene.session_file.to_string_lossy().into());
    json.insert("cwd".into(), scene.cwd.to_string_lossy().into());
    json.extend(payload.fields());
    let stdin = Value::Object(json).to_string();
    for hook in list {
        if let Some(rule) = &hook.matcher {
            let matched = tool.is_some_and(|(name, subject)| rule.concerns(name, subject));
            if !matched {
                continue;
            }
        }
        let secs = hook.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let shown = limits::one_line(&hook.command, 60);
        let dir = crate::paths::own_program_cwd(scene.cwd, hook.cwd.as_deref());
        let ran = run_one(&hook.command, &dir, stdin.as_bytes(), Duration::from_secs(secs), output_dir).await;
        let ran = match ran {
            Ok(ran) => ran,
            Err(why) => {
                outcome.problems.push(format!("{} hook `{shown}`: {why}", event.name()));
                continue;
            }
        };
        // A hook that failed otherwise than by blocking, one line with its
        // stderr.
        let failed = |ran: Ran, how: String| {
            let err = stderr_text(ran, scene.redactor);
            format!("{} hook `{shown}` failed ({how}): {}", event.name(), limits::one_line(err.trim(), 200))
        };
        match ran.ending {
            Ending::Exit(0) => {
                let out = process::output_text(&ran.output, scene.redactor);
                if !out.trim().is_empty() {
                    outcome.output.push(out);
                }
                if let Some(err) = &ran.stderr {
                    err.remove();
                }
            }
            Ending::Exit(2) => {
                let err = stderr_text(ran, scene.redactor);
                let reason = err.trim();
                let reason =
                    if reason.is_empty() { format!("blocked by the hook `{shown}`") } else { reason.to_string() };
                outcome.blocked = Some(reason);
                break;
            }
            Ending::Exit(code) => outcome.problems.push(failed(ran, format!("exit code {code}"))),
            Ending::Signal(sig) => outcome.problems.push(failed(ran, format!("killed by signal {sig}"))),
            Ending::TimedOut(s) => {
                // Nothing it printed is used: no file is left of it.
                ran.output.remove();
                if let Some(err) = &ran.stderr {
                    err.remove();
                }
                outcome.problems.push(format!("{} hook `{shown}` timed out after {s} s and was killed", event.name()))
            }
        }
    }
    outcome
}

/// A hook's stderr as the caller shows it (cut like `bash`'s output when
/// long); its stdout, not used then, is removed.
fn stderr_text(ran: Ran, redactor: &crate::redact::Redactor) -> String {
    ran.output.remove();
    ran.stderr.as_ref().map(|p| process::output_text(p, redactor)).unwrap_or_default()
}

/// Run one hook with `sh -c` through the runner `bash` uses (own process
/// group, stdin written within the timeout, output in files as it is
/// written): it is done when its shell exits, and then the whole group is
/// killed, so a child it left in the background holding stdout open
/// neither keeps us waiting nor outlives it. `Err` when it did not start.
async fn run_one(command: &str, cwd: &Path, stdin: &[u8], timeout: Duration, output_dir: &Path) -> Result<Ran, String> {
    let args = ["-c", command];
    let spawn = Spawn { stdin: Some(stdin), stderr_apart: true, ..Spawn::new(OsStr::new("sh"), &args, cwd) };
    process::run_process(&spawn, timeout, output_dir, "hook").await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hooks(value: Value) -> HooksConfig {
        serde_json::from_value(value).unwrap()
    }

    /// The scene of a test session whose hooks run in `cwd`.
    fn scene(cwd: &Path) -> Scene<'_> {
        Scene { session_id: "s1", session_file: Path::new("/x/s1.json"), cwd, redactor: &NO_REDACTION }
    }

    static NO_REDACTION: std::sync::LazyLock<crate::redact::Redactor> =
        std::sync::LazyLock::new(crate::redact::Redactor::off);

    #[test]
    fn outputs_blocks_matchers_failures_and_timeouts() {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("output");
        let scene = scene(dir.path());
        let rt = crate::runtime::build().unwrap();
        let h = hooks(json!({
            "tool_call": [
                {"command": "cat > seen.json; echo ok", "cwd": "."},
                {"command": "echo 'no rm -rf' >&2; exit 2", "matcher": "bash:rm -rf*"},
                {"command": "exit 5"}
            ],
            "turn_end": [{"command": "sleep 30", "timeout": 1}]
        }));
        h.validate().unwrap();
        let call = |cmd: &str| Payload::ToolCall { tool: "bash".into(), input: json!({"command": cmd}) };
        let run = |payload: Payload, tool| rt.block_on(run_in(&h, &payload, &scene, tool, &out_dir));
        let out = run(call("ls"), Some(("bash", Some("ls"))));
        assert_eq!(out.output, ["ok\n"]);
        assert_eq!(out.blocked, None);
        assert!(out.problems.len() == 1 && out.problems[0].contains("exit code 5"), "{out:?}");
        let seen: Value = serde_json::from_slice(&std::fs::read(dir.path().join("seen.json")).unwrap()).unwrap();
        assert_eq!(seen["event"], "tool_call");
        assert_eq!(seen["sessionId"], "s1");
        assert_eq!(seen["input"]["command"], "ls");
        let out = run(call("rm -rf /"), Some(("bash", Some("rm -rf /"))));
        assert_eq!(out.blocked.as_deref(), Some("no rm -rf"));
        assert!(out.problems.is_empty(), "the block stops the rest");
        let out = run(Payload::TurnEnd { reply: "done".into() }, None);
        assert!(out.problems[0].contains("timed out after 1 s"), "{out:?}");
        assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0, "short outputs leave no file");
    }

    /// Issue 31, item 11: never in the workspace unless the config says so.
    #[test]
    fn a_hook_runs_in_slash_unless_its_cwd_names_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let scene = scene(dir.path());
        let rt = crate::runtime::build().unwrap();
        let h = hooks(json!({"session_start": [
            {"command": "pwd"}, {"command": "pwd", "cwd": "."}, {"command": "pwd", "cwd": "sub"}
        ]}));
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let out = rt.block_on(run_in(&h, &Payload::SessionStart {}, &scene, None, &dir.path().join("output")));
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(
            out.output,
            ["/\n".to_string(), format!("{}\n", real.display()), format!("{}/sub\n", real.display())]
        );
    }

    #[test]
    fn a_long_output_is_cut_and_a_background_child_neither_holds_nor_outlives_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("output");
        let scene = scene(dir.path());
        let rt = crate::runtime::build().unwrap();
        // The background child writes its pid then holds stdout open; the
        // test's own bound (not the hook's 60 s) is what a regression hits.
        let h = hooks(json!({
            "session_start": [{"command": "sleep 100 & echo $! > bg.pid; echo started", "timeout": 60, "cwd": dir.path()}],
            "session_end": [{"command": "seq 1 100000; echo 'err' >&2"}]
        }));
        let out = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(20), run_in(&h, &Payload::SessionStart {}, &scene, None, &out_dir))
                .await
                .expect("the hook returned when its shell exited, not at its 60 s timeout")
        });
        assert_eq!(out.output, ["started\n"]);
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid")).unwrap().trim().parse().unwrap();
        // SAFETY: signal 0 only asks whether the process exists. Killed
        // with its group, it is a zombie or gone once reaped by init; wait
        // (bounded) for it to be gone.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while unsafe { libc::kill(pid, 0) } == 0 && !is_zombie(pid) {
            assert!(std::time::Instant::now() < deadline, "the background sleep {pid} outlived its hook");
            std::thread::sleep(Duration::from_millis(20));
        }

        let out = rt.block_on(run_in(&h, &Payload::SessionEnd {}, &scene, None, &out_dir));
        let text = &out.output[0];
        assert!(text.starts_with("[… 98000 earlier lines cut: the whole output is in "), "{}", &text[..120]);
        assert!(text.ends_with("\n100000\n") && text.len() < 60 * 1024, "{} bytes", text.len());
        let file = text.lines().next().unwrap().split(" is in ").nth(1).unwrap().trim_end_matches(']');
        assert_eq!(std::fs::read_to_string(file).unwrap().lines().count(), 100_000);
        assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 1, "only the whole stdout is kept");
    }

    /// Each event's own keys, as SPEC 15 lists them (and `reply` for
    /// `turn_end`), and the event each payload belongs to.
    #[test]
    fn each_payload_has_the_keys_of_its_event() {
        let keys = |p: &Payload| {
            let mut k: Vec<String> = p.fields().keys().cloned().collect();
            k.sort();
            (p.event().name(), k.join(","))
        };
        let input = json!({"command": "ls"});
        let cases = [
            (Payload::SessionStart {}, ("session_start", "")),
            (Payload::UserPrompt { prompt: "hi".into() }, ("user_prompt", "prompt")),
            (Payload::ToolCall { tool: "bash".into(), input: input.clone() }, ("tool_call", "input,tool")),
            (
                Payload::ToolResult { tool: "bash".into(), input, result: "ok".into(), is_error: false },
                ("tool_result", "input,isError,result,tool"),
            ),
            (Payload::TurnEnd { reply: "done".into() }, ("turn_end", "reply")),
            (Payload::BeforeCompact { tokens_before: 9 }, ("before_compact", "tokensBefore")),
            (
                Payload::Compacted { tokens_before: 9, tokens_after: 3, artifact: "a.md".into() },
                ("compacted", "artifact,tokensAfter,tokensBefore"),
            ),
            (Payload::SessionEnd {}, ("session_end", "")),
        ];
        for (payload, (event, want)) in cases {
            assert_eq!(keys(&payload), (event, want.to_string()), "{payload:?}");
        }
        let fields = Payload::BeforeCompact { tokens_before: 9 }.fields();
        assert_eq!(fields["tokensBefore"], 9, "numbers stay numbers");
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
    }
}
