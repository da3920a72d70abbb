//! One child agent: its session made in the store, its `glrs-chat` run
//! through the process machinery, its answer read back.

use std::time::Duration;

use serde_json::{Value, json};

use super::NamedAgent;
use crate::process::{self, Ending, Spawn};
use crate::store::{SessionFile, Store};
use crate::tools::{Permissions, ToolContext, ToolOutput};
use crate::{SessionId, limits};

/// How long a child may run before it is stopped.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most of a child's stderr its error result quotes.
const STDERR_SHOWN: usize = 2_000;

/// What one `task` call runs.
pub(super) struct Child<'a> {
    pub store: &'a Store,
    pub model: &'a str,
    pub agent: Option<&'a NamedAgent>,
    pub prompt: &'a str,
    /// The task in a few words, as the results name it.
    pub description: &'a str,
}

impl Child<'_> {
    /// Run the child to its end (or until `ctx.cancel`): its answer and
    /// session id, or an error result naming the session.
    pub async fn run(&self, ctx: &ToolContext<'_>) -> ToolOutput {
        let id = match crate::runtime::blocking(|| self.create_session(ctx)) {
            Ok(id) => id,
            Err(e) => return ToolOutput::error(format!("the subagent's session could not be made: {}", e.report())),
        };
        let mut args = self.args(&id, &ctx.judged.permissions, ctx.sandbox.mode());
        // A pipe the child tells of each tool call on, for the live line.
        // The writing end stays open here until the run ends (the child
        // gets it as PASSED_FD); without a pipe there is no live count.
        let (reader, writer) = match std::io::pipe() {
            Ok((reader, writer)) => (Some(reader), Some(writer)),
            Err(_) => (None, None),
        };
        if writer.is_some() {
            args.extend(["--progress-fd".to_string(), process::run::PASSED_FD.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let program = crate::programs::program_path("glrs-chat");
        let spawn = Spawn {
            stdin: Some(self.prompt.as_bytes()),
            stderr_apart: true,
            keep_keys: true,
            pass_fd: writer.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
            ..Spawn::new(program.as_os_str(), &args, ctx.cwd)
        };
        let run = process::run_process(&spawn, CHILD_TIMEOUT, ctx.output_dir, NAME_IN_FILES);
        let counting = count_tools(reader, ctx.judged.progress.as_deref());
        // Dropping the run kills the child's group (and with the child go
        // the commands it started: they are its own process machinery's).
        let ran = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                return ToolOutput::error(format!(
                    "interrupted by the user: the subagent was stopped; its session {id} keeps what it did \
                     (glrs-sessions show {id})"
                ));
            }
            ran = run => ran,
            never = counting => match never {},
        };
        match ran {
            Ok(ran) => answer(self.description, &id, &ran, ctx.redactor),
            Err(e) => ToolOutput::error(format!("the subagent (session {id}) could not run: {e}")),
        }
    }

    /// The child's session, in the store before the child starts.
    fn create_session(&self, ctx: &ToolContext<'_>) -> Result<SessionId, crate::error::StoreError> {
        let cwd = ctx.cwd.to_string_lossy();
        loop {
            let id = self.store.fresh_id()?;
            let mut file = SessionFile::new(id.as_str(), &cwd, &crate::time::now());
            file.set("parent", json!({"id": ctx.session_id, "entry": ctx.entries}));
            file.set("subagent", Value::Bool(true));
            file.set("model", Value::from(self.model));
            if self.store.create_file(&id, &file)? {
                return Ok(id);
            }
        }
    }

    /// `glrs-chat --resume ID --json --model M --sandbox MODE …`: the
    /// parent's sandbox mode and permissions, and a named agent's system
    /// prompt and tools. The child itself runs outside the sandbox (it is
    /// glrs, writing its session); the commands it runs are held by the
    /// same mode as the parent's.
    fn args(&self, id: &SessionId, permissions: &Permissions, sandbox: crate::sandbox::Mode) -> Vec<String> {
        let mut args: Vec<String> =
            ["--resume", id.as_str(), "--json", "--model", self.model, "--sandbox", sandbox.name()]
                .iter()
                .map(|s| s.to_string())
                .collect();
        if let Some(agent) = self.agent {
            if !agent.system.is_empty() {
                args.extend(["--system".to_string(), agent.system.clone()]);
            }
            for glob in agent.tools.iter().flatten() {
                args.extend(["--tools".to_string(), glob.clone()]);
            }
        }
        args.extend(permissions.child_args());
        args
    }
}

/// Count the lines the child writes on its progress pipe (one a tool
/// call) into `progress`; never ends (the run's end ends the wait).
async fn count_tools(
    reader: Option<std::io::PipeReader>,
    progress: Option<&crate::tools::Progress>,
) -> std::convert::Infallible {
    use tokio::io::AsyncBufReadExt;
    let pipe = reader.and_then(|r| tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(r)).ok());
    if let (Some(pipe), Some(progress)) = (pipe, progress) {
        let mut lines = tokio::io::BufReader::new(pipe).lines();
        while let Ok(Some(_)) = lines.next_line().await {
            progress.step();
        }
    }
    std::future::pending().await
}

/// The files a child's output goes through are named after this.
const NAME_IN_FILES: &str = "task";

/// The result the parent's model reads: the child's answer and its session,
/// or why it failed.
fn answer(description: &str, id: &SessionId, ran: &process::Ran, redactor: &crate::redact::Redactor) -> ToolOutput {
    let stdout = ran.output.read_from(0, u64::MAX);
    let stderr = ran.stderr.as_ref().map(|p| process::output_text(p, redactor)).unwrap_or_default();
    ran.output.remove();
    let reply = stdout
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|v| v.get("reply").and_then(Value::as_str).map(str::to_string));
    let what = limits::one_line(description, 80);
    let kept = format!("subagent {what:?}: session {id} (glrs-sessions show {id} has all it did)");
    let failed = |how: String| {
        let stderr = stderr.trim();
        let start = limits::floor_boundary(stderr, stderr.len().saturating_sub(STDERR_SHOWN));
        let mut text = format!("the subagent failed ({how}); {kept}");
        if !stderr.is_empty() {
            text.push_str(&format!(":\n{}", &stderr[start..]));
        }
        if let Some(reply) = reply.as_deref().filter(|r| !r.trim().is_empty()) {
            text.push_str(&format!("\n\nWhat it answered before it ended:\n{}", capped(reply, id)));
        }
        ToolOutput::error(text)
    };
    match ran.ending {
        Ending::Exit(0) => match &reply {
            Some(reply) => ToolOutput::ok(format!("{}\n\n[{kept}]", capped(reply, id))),
            None => failed("it printed no answer".into()),
        },
        Ending::Exit(code) => failed(format!("exit code {code}")),
        Ending::Signal(sig) => failed(format!("killed by signal {sig}")),
        Ending::TimedOut(s) => failed(format!("it ran past {s} s and was stopped")),
    }
}

/// The answer within the limits of a tool result: its beginning, and where
/// the rest is (the child's session holds it whole).
fn capped<'a>(reply: &'a str, id: &SessionId) -> std::borrow::Cow<'a, str> {
    let mut end = limits::floor_boundary(reply, limits::MAX_BYTES);
    if let Some((at, _)) = reply.match_indices('\n').nth(limits::MAX_LINES - 1) {
        end = end.min(at);
    }
    if end >= reply.len() {
        return reply.into();
    }
    format!("{}\n[… the answer goes on: glrs-sessions show {id} has it whole]", &reply[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_keep_their_beginning_and_say_where_the_rest_is() {
        let id = SessionId::parse("0badcafe").unwrap();
        assert_eq!(capped("short", &id), "short");
        let long = "line\n".repeat(limits::MAX_LINES + 10);
        let cut = capped(&long, &id);
        assert!(cut.lines().count() <= limits::MAX_LINES + 1 && cut.contains("glrs-sessions show 0badcafe"));
        let wide = "é".repeat(limits::MAX_BYTES);
        assert!(capped(&wide, &id).len() < wide.len());
    }
}
