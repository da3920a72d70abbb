//! The tool registry (SPEC 14, 15): every tool the model can call goes
//! through it — the built-in tools, the session's own memory and compaction
//! tools, and extension tools. A tool has a name, a description, a JSON
//! Schema, whether it needs permission, and an async run that can be
//! cancelled. The turn loop asks the registry what to offer and hands it
//! each call by name; the registry decides permission (`permissions`) in one
//! place, so a tool added later is asked about like the built-in ones.
//!
//! Every call gets a result: an unknown tool, bad input, a denial or an
//! interruption is an error result for the model, never a crash.

pub mod bash;
mod dispatch;
pub mod exec;
pub mod fs;
pub mod guard;
mod registry;
pub mod search;
pub mod task;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::limits;
pub use crate::permissions::{Answer, Asker, Decision, Permissions, Rule};
use crate::provider::{Cancel, ToolSpec};
pub use dispatch::Cleared;
pub use guard::{Judged, ReadGuard};
pub use registry::Registry;

/// What a tool run gives back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result text the model reads.
    pub content: String,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// A tool whose work off the runtime panicked fails with an error result.
impl From<crate::runtime::Panicked> for ToolOutput {
    fn from(e: crate::runtime::Panicked) -> ToolOutput {
        ToolOutput::error(format!("the tool failed: {e}"))
    }
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput { content: content.into(), is_error: false }
    }

    /// A failed result.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput { content: content.into(), is_error: true }
    }
}

/// A boxed tool run: `Send` so a runtime may move it, and dropped to stop
/// it (a tool that starts processes kills them when dropped).
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// What a tool run may use from the session.
pub struct ToolContext<'a> {
    /// Relative paths are taken from here (the session's cwd).
    pub cwd: &'a Path,
    /// Set by Esc or Ctrl-C; the registry also stops waiting when it fires.
    pub cancel: &'a Cancel,
    /// The session's id.
    pub session_id: &'a str,
    /// The session's file.
    pub session_file: &'a Path,
    /// Where output too long for the model is kept whole.
    pub output_dir: &'a Path,
    /// What the registry judged for this call; `Registry::call` sets it,
    /// so a context made for it starts with `Judged::default()`.
    pub judged: Judged,
    /// Applied to the output files kept there: the cache holds no secret
    /// the session file would not.
    pub redactor: &'a crate::redact::Redactor,
    /// The session's sandbox (SPEC 17): what commands run inside, and the
    /// roots the file tools obey.
    pub sandbox: &'a crate::sandbox::Sandbox,
    /// The session's model (`provider/model-id`): a child agent's, unless
    /// it is given another (SPEC 20).
    pub model: &'a str,
    /// How many entries the session file holds when the call runs: a child
    /// agent's session records it as `parent.entry`.
    pub entries: usize,
}

/// How the sandbox bears on one call (SPEC 17 "Asking").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sandboxing {
    /// The sandbox has no part in it.
    None,
    /// It runs a command inside the sandbox (`bash`): with the kernel
    /// enforcing it, it needs no prompt.
    Inside,
    /// It asks to run outside the sandbox (`bash` with `"sandbox": false`),
    /// for this reason: it always asks, unless the mode is `off`.
    Outside(String),
    /// It writes this file (`write`, `edit`): inside the writable roots in
    /// `workspace-write` it needs no prompt.
    Writes(PathBuf),
}

/// How far a long call has got, for the REPL's live line (SPEC 20: a
/// child agent's tool calls and time).
#[derive(Debug, Default)]
pub struct Progress {
    tools: std::sync::atomic::AtomicU64,
    started: std::sync::OnceLock<std::time::Instant>,
    took: std::sync::OnceLock<std::time::Duration>,
}

impl Progress {
    /// The call made one more tool call.
    pub fn step(&self) {
        self.tools.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many tool calls it made.
    pub fn tools(&self) -> u64 {
        self.tools.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// It starts running now.
    pub fn start(&self) {
        let _ = self.started.set(std::time::Instant::now());
    }

    /// It has ended.
    pub fn end(&self) {
        if let Some(started) = self.started.get() {
            let _ = self.took.set(started.elapsed());
        }
    }

    /// Whether it has ended.
    pub fn ended(&self) -> bool {
        self.took.get().is_some()
    }

    /// `(3 tools, 12 s)`: what it did so far, or in all once it ended.
    pub fn line(&self) -> String {
        let took = self.took.get().copied().or_else(|| self.started.get().map(|s| s.elapsed()));
        let tools = self.tools();
        let noun = if tools == 1 { "tool" } else { "tools" };
        match took {
            Some(took) => format!("({tools} {noun}, {} s)", took.as_secs()),
            None => "(waiting for its turn)".to_string(),
        }
    }
}

/// What decides which tools are offered for the next model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Situation {
    /// The silent memory flush (SPEC 7) is running.
    pub flush: bool,
    /// The session has at least one compaction artifact (SPEC 6).
    pub artifacts: bool,
}

/// The kind of tool, for `--no-tools` and `tools.enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`.
    BuiltIn,
    /// The session's memory and compaction tools.
    Session,
    /// Executable and MCP tools (SPEC 15).
    Extension,
}

/// One tool.
pub trait Tool: Send + Sync {
    /// The name, description and input schema offered to the model.
    fn spec(&self) -> ToolSpec;
    /// The tool's name.
    fn name(&self) -> &str;
    /// The kind of tool (built in, the session's, an extension); extension unless it says.
    fn origin(&self) -> Origin {
        Origin::Extension
    }
    /// True when a call may change files, so a checkpoint of the workspace
    /// is taken before it (SPEC 19): `write`, `edit`, `bash`, executable and
    /// MCP tools; not the read-only built-ins nor the session's own tools.
    fn mutates(&self) -> bool {
        self.origin() != Origin::Session
    }
    /// True when a call must be allowed (a rule, an answer) before it runs.
    /// Extension tools always ask.
    fn needs_permission(&self) -> bool {
        true
    }
    /// What `TOOL:GLOB` rules match against: the `bash` command, the file
    /// path. `None`: only `TOOL` rules apply.
    fn subject(&self, _input: &Value, _cwd: &Path) -> Option<String> {
        None
    }
    /// The call in one line, for the REPL (`● bash  cargo test`).
    fn summary(&self, input: &Value) -> String {
        limits::one_line(&serde_json::to_string(input).unwrap_or_default(), 100)
    }
    /// The whole call for the permission prompt, nothing left out: by
    /// default every argument for an extension tool (a long first one must
    /// not hide a `path`), nothing for a built-in one (the subject is shown).
    fn in_full(&self, input: &Value) -> Option<String> {
        (self.origin() != Origin::BuiltIn).then(|| arguments(input))
    }
    /// How the sandbox bears on a call (SPEC 17 "Asking"): runs inside it,
    /// asks to run outside it, or writes a file. Nothing, unless it says.
    fn sandboxing(&self, _input: &Value, _cwd: &Path) -> Sandboxing {
        Sandboxing::None
    }
    /// What the permission prompt shows beyond the summary (a short diff).
    fn preview(&self, _input: &Value, _cwd: &Path) -> Option<String> {
        None
    }
    /// Whether the model is offered this tool now.
    fn offered(&self, _situation: &Situation) -> bool {
        true
    }
    /// Whether calls of this tool in one answer run at the same time
    /// rather than in order (the `task` tool: each is a process of its own).
    fn concurrent(&self) -> bool {
        false
    }
    /// Whether a run returns by itself soon after `ctx.cancel` fires, with
    /// a result of its own (the `task` tool names the stopped child's
    /// session); otherwise the registry stops waiting for it and drops it.
    fn stops_itself(&self) -> bool {
        false
    }
    /// Run a call; dropping the future stops it.
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a>;
}

/// Every argument of a call, one `name: value` a line (a string as it is,
/// line breaks and all; anything else as JSON), in the order given.
pub fn arguments(input: &Value) -> String {
    match input {
        Value::Object(map) => {
            let mut out = String::new();
            for (name, value) in map {
                let value = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("{name}: {value}\n"));
            }
            out
        }
        other => other.to_string(),
    }
}

/// Parse a tool's input into its typed form; a bad input names the field.
pub fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ToolOutput> {
    serde_path_to_error::deserialize(input)
        .map_err(|e| ToolOutput::error(format!("bad input at {}: {}", e.path(), e.inner())))
}

/// A path as the model gave it: `~` expanded, relative to `cwd`.
pub fn resolve_path(cwd: &Path, path: &str) -> PathBuf {
    let expanded = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match dirs::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(path),
        },
        _ => PathBuf::from(path),
    };
    if expanded.is_absolute() { expanded } else { cwd.join(expanded) }
}

/// How a path is shown and matched by rules: relative to `cwd` when it is
/// inside it, else absolute.
pub fn shown_path(cwd: &Path, path: &Path) -> String {
    let normal = normalize(path);
    match normal.strip_prefix(normalize(cwd)) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        Ok(_) => ".".into(),
        Err(_) => normal.to_string_lossy().into_owned(),
    }
}

/// `a/./b/../c` → `a/c`, without touching the disk (the file may not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Settings that choose what the registry offers.
#[derive(Debug, Clone, Default)]
pub struct Offering {
    /// `--no-tools`: nothing at all.
    pub none: bool,
    /// `tools.enabled: false`: no built-in tools.
    pub builtin_off: bool,
    /// `tools.disabled`: globs over tool names.
    pub disabled: Option<globset::GlobSet>,
    /// A named agent's `tools` (SPEC 20): only tools matching these globs
    /// are offered.
    pub only: Option<globset::GlobSet>,
}

impl Offering {
    /// What `tools.*` says the registry offers.
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Offering> {
        Ok(Offering {
            none: false,
            builtin_off: config.tools.enabled == Some(false),
            disabled: config.disabled_tools()?,
            only: None,
        })
    }
}

/// Tools that come and go while the chat runs (MCP servers, SPEC 15): the
/// registry offers what a source has before each model call. A trait, so
/// the registry names no MCP (the layers stay one way: `mcp` implements it).
pub trait ToolSource: Send + Sync {
    /// Resolves when no server is still starting or listing its changed
    /// tools (each bounded).
    fn ready(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
    /// The tools as they are now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// Whether `name` is one of this source's tools (offered now or not).
    fn owns(&self, name: &str) -> bool;
    /// What happened since the last call, each thing once (a server that
    /// failed or stopped), to tell the user.
    fn news(&self) -> Vec<String>;
    /// Each server, its state and its tools, for `/mcp`.
    fn listing(&self) -> Vec<SourceListing>;
}

/// One server of a [`ToolSource`] as `/mcp` shows it.
#[derive(Debug, Clone)]
pub struct SourceListing {
    /// Its name under `mcpServers`.
    pub name: String,
    /// Where it is (`running`, `failed: …`), as shown.
    pub state: String,
    /// Its tools as offered: name and description.
    pub tools: Vec<(String, String)>,
}

/// The seven built-in tools of SPEC 14.
pub fn builtins() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(fs::Read),
        Arc::new(fs::Write),
        Arc::new(fs::Edit),
        Arc::new(bash::Bash),
        Arc::new(search::Grep),
        Arc::new(search::Find),
        Arc::new(fs::Ls),
    ]
}

/// A call in one line for a transcript: `$ cargo test` for `bash`,
/// `read src/main.rs` for the other built-in tools, the input as JSON for
/// any other tool.
pub fn describe_call(name: &str, input: &Value) -> String {
    match builtins().into_iter().find(|t| t.name() == name) {
        Some(_) if name == "bash" => {
            format!("$ {}", input.get("command").and_then(Value::as_str).unwrap_or("?"))
        }
        Some(tool) => format!("{name} {}", tool.summary(input)),
        None => format!("{name} {}", serde_json::to_string(input).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    /// Test contexts redact nothing.
    static NO_REDACTION: std::sync::LazyLock<crate::redact::Redactor> =
        std::sync::LazyLock::new(crate::redact::Redactor::off);
    use super::*;
    use crate::store::ToolCall;
    use serde_json::json;

    pub(super) struct Echo;
    impl Tool for Echo {
        fn spec(&self) -> ToolSpec {
            ToolSpec { name: "echo".into(), description: "echo".into(), parameters: json!({"type": "object"}) }
        }
        fn name(&self) -> &str {
            "echo"
        }
        fn needs_permission(&self) -> bool {
            false
        }
        fn run<'a>(&'a self, input: &'a Value, _: &'a ToolContext<'a>) -> ToolFuture<'a> {
            Box::pin(async move { ToolOutput::ok(input.to_string()) })
        }
    }

    pub(super) struct Never;
    impl Asker for Never {
        fn ask(&mut self, _: &crate::permissions::Question<'_>) -> crate::permissions::Asked {
            crate::permissions::Asked::Now(Answer::Cannot)
        }
    }

    pub fn ctx<'a>(cwd: &'a Path, cancel: &'a Cancel) -> ToolContext<'a> {
        ToolContext {
            cwd,
            cancel,
            session_id: "aaaa0001",
            session_file: cwd,
            output_dir: cwd,
            judged: Judged::default(),
            redactor: &NO_REDACTION,
            sandbox: crate::sandbox::Sandbox::off(),
            model: "",
            entries: 0,
        }
    }

    #[tokio::test]
    async fn known_unknown_bad_input_and_disabled() {
        let cancel = Cancel::default();
        let dir = std::env::temp_dir();
        let c = ctx(&dir, &cancel);
        let s = Situation::default();
        let mut registry = Registry::default();
        let call = |name: &str, input: Value| ToolCall { id: "c".into(), name: name.into(), input };
        let out = registry.call(&call("echo", json!({})), &c, &mut Never, &s).await;
        assert!(out.content.contains("no tools are available"));
        registry.add(Arc::new(Echo));
        assert_eq!(
            registry.call(&call("echo", json!({"a": 1})), &c, &mut Never, &s).await,
            ToolOutput::ok("{\"a\":1}")
        );
        let out = registry.call(&call("nope", json!({})), &c, &mut Never, &s).await;
        assert!(out.is_error && out.content.contains("available: echo"), "{out:?}");
        assert!(registry.call(&call("echo", Value::String("{oops".into())), &c, &mut Never, &s).await.is_error);

        let mut set = globset::GlobSetBuilder::new();
        set.add(globset::Glob::new("ec*").unwrap());
        let mut off = Registry::new(
            Offering { disabled: Some(set.build().unwrap()), ..Offering::default() },
            Permissions::default(),
        );
        off.add(Arc::new(Echo));
        assert!(off.specs(&s).is_empty());
        assert!(off.call(&call("echo", json!({})), &c, &mut Never, &s).await.is_error);
        cancel.cancel();
        let out = registry.call(&call("echo", json!({})), &c, &mut Never, &s).await;
        assert!(out.is_error && out.content.contains("interrupted"), "{out:?}");
    }

    #[test]
    fn paths_resolve_against_the_cwd() {
        let cwd = Path::new("/work/app");
        assert_eq!(resolve_path(cwd, "src/a.rs"), PathBuf::from("/work/app/src/a.rs"));
        assert_eq!(resolve_path(cwd, "/etc/hosts"), PathBuf::from("/etc/hosts"));
        assert_eq!(shown_path(cwd, Path::new("/work/app/./src/../src/a.rs")), "src/a.rs");
        assert_eq!(shown_path(cwd, Path::new("/etc/hosts")), "/etc/hosts");
        assert_eq!(shown_path(cwd, cwd), ".");
    }
}
