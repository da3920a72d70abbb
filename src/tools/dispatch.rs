//! The registry's dispatch: one call from the model's answer to its
//! result. In order: the `tool_call` hooks (SPEC 15: exit 2 blocks the
//! call), the tool found by name, the permission rules, the sandbox's view
//! of the call (judged once: [`Standing`]) and, when the decision is to
//! ask, the user; then the call runs ([`Cleared`], without the registry, so
//! several can run at once), and its `tool_result` hooks see what it gave.

use std::sync::Arc;

use serde_json::Value;

use super::{Answer, Asker, Decision, Registry, Sandboxing, Situation, Tool, ToolContext, ToolOutput};
use super::{Judged, Progress, ReadGuard};
use crate::hooks::{Event, Payload, Scene};
use crate::permissions;
use crate::store::ToolCall;

/// How the sandbox sees one call, judged once per call. The permission
/// decision with the sandbox taken into account: a deny rule always wins;
/// a call leaving the sandbox always asks (but in `off`), and so does a
/// write outside the writable roots, whatever the allow rules say; a
/// sandboxed command, or a write inside the roots in `workspace-write`,
/// needs no prompt.
struct Standing<'a> {
    sandboxing: Sandboxing,
    sandbox: &'a crate::sandbox::Sandbox,
    /// A write's target, resolved (its links followed) once, and whether
    /// it is inside the writable roots; `None` for anything else or with
    /// the sandbox off.
    write: Option<(std::path::PathBuf, bool)>,
}

impl<'a> Standing<'a> {
    fn of(sandboxing: Sandboxing, sandbox: &'a crate::sandbox::Sandbox) -> Self {
        let write = match &sandboxing {
            Sandboxing::Writes(path) if sandbox.mode() != crate::sandbox::Mode::Off => {
                let target = crate::sandbox::resolve(path);
                let writable = sandbox.policy().is_writable(&target);
                Some((target, writable))
            }
            _ => None,
        };
        Standing { sandboxing, sandbox, write }
    }

    /// The permission rules' decision, as the sandbox changes it;
    /// `beyond`: the user answered `a` to this very call past the sandbox.
    fn decide(&self, decision: Decision, beyond: bool) -> Decision {
        use crate::sandbox::Mode;
        match (decision, &self.sandboxing, &self.write) {
            (Decision::Deny(why), _, _) => Decision::Deny(why),
            _ if beyond && self.every_time() => Decision::Allow,
            (_, Sandboxing::Outside(_), _) if self.sandbox.mode() != Mode::Off => Decision::Ask,
            (Decision::Ask, Sandboxing::Inside, _) if self.sandbox.enforced() => Decision::Allow,
            (_, _, Some((_, false))) => Decision::Ask,
            (_, _, Some((_, true))) if self.sandbox.mode() == Mode::WorkspaceWrite => Decision::Allow,
            (decision, _, _) => decision,
        }
    }

    /// Whether the call is asked about every time, whatever was answered
    /// before: it leaves the sandbox, or writes outside the writable roots.
    fn every_time(&self) -> bool {
        match &self.sandboxing {
            _ if self.sandbox.mode() == crate::sandbox::Mode::Off => false,
            Sandboxing::Outside(_) => true,
            Sandboxing::Writes(_) => matches!(self.write, Some((_, false))),
            Sandboxing::None | Sandboxing::Inside => false,
        }
    }

    /// What `a` for a call past the sandbox is remembered by: the command
    /// line leaving the sandbox, the resolved path of a write outside the
    /// roots; `None` for any other call.
    fn beyond_key(&self, subject: Option<&str>) -> Option<String> {
        if !self.every_time() {
            return None;
        }
        match &self.write {
            Some((target, false)) => Some(target.to_string_lossy().into_owned()),
            _ => subject.map(str::to_string),
        }
    }

    /// What `a` grants for this call, as the prompt says it.
    fn always(&self, tool: &str) -> String {
        match (tool, self.every_time()) {
            ("bash", true) => "this exact command, outside the sandbox".into(),
            ("bash", false) => "this exact command".into(),
            (_, true) => format!("{tool} of this file, outside the writable roots"),
            // A write inside the roots asks only with the sandbox off.
            (_, false) => format!("every {tool} call"),
        }
    }

    /// What stderr says of a call denied with no one to ask (one-shot):
    /// the call and what would let it run.
    fn told(&self, tool: &str, summary: &str, subject: Option<&str>, cwd: &std::path::Path) -> String {
        let call = crate::limits::one_line(&format!("{tool} {summary}"), 200);
        let what = match (&self.sandboxing, &self.write) {
            (Sandboxing::Outside(_), _) if self.every_time() => {
                "it asked to run outside the sandbox; --sandbox off would allow it".to_string()
            }
            (_, Some((_, false))) => "it writes outside the writable roots; --sandbox off would allow it".to_string(),
            _ => match permissions::allow_flags(tool, subject, cwd) {
                Ok(rules) if !rules.is_empty() => format!("{} would allow it", rules.join(" ")),
                Ok(_) => format!("--allow {tool} would allow it"),
                Err(why) => format!("no {tool}:GLOB rule can allow it ({why}); --allow {tool} would"),
            },
        };
        format!("denied: {call}: {what}")
    }

    /// The result of a call that would ask, with no one to ask: why it
    /// asks (it leaves the sandbox, it writes outside the roots, or no rule
    /// allows it) and what would let it run.
    fn cannot_ask(&self, tool: &str, subject: Option<&str>, cwd: &std::path::Path) -> String {
        match (&self.sandboxing, &self.write) {
            (Sandboxing::Outside(reason), _) if self.every_time() => crate::sandbox::outside_denied(reason),
            (_, Some((target, false))) => crate::sandbox::write_outside_denied(tool, target, self.sandbox.mode()),
            _ => permissions::no_terminal(tool, subject, cwd),
        }
    }
}

impl Registry {
    /// Run a call: find the tool, check permission, run it until it ends or
    /// `ctx.cancel` fires. Always a result.
    pub async fn call(
        &mut self,
        call: &ToolCall,
        ctx: &ToolContext<'_>,
        asker: &mut dyn Asker,
        situation: &Situation,
    ) -> ToolOutput {
        match self.prepare(call, ctx, asker, situation).await {
            Ok(cleared) => cleared.run(&call.input, ctx).await,
            Err(refused) => refused,
        }
    }

    /// The first half of [`Registry::call`]: find the tool and decide
    /// whether the call may run (asking through `asker` when it must). A
    /// call that may not is its error result; one that may is a
    /// [`Cleared`], which runs without the registry, so several can run at
    /// once.
    pub async fn prepare(
        &mut self,
        call: &ToolCall,
        ctx: &ToolContext<'_>,
        asker: &mut dyn Asker,
        situation: &Situation,
    ) -> Result<Cleared, ToolOutput> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolOutput::error("interrupted by the user before it ran"));
        }
        // SPEC 15: the `tool_call` hooks see every call first; exit 2 blocks it.
        if let Some(reason) = self.before_call(call, ctx, asker).await {
            return Err(ToolOutput::error(format!("blocked by a tool_call hook: {reason}")));
        }
        let Some(tool) = self.tools.iter().find(|t| t.name() == call.name && self.available(t.as_ref(), situation))
        else {
            let known: Vec<&str> = self.offered(situation).iter().map(|t| t.name()).collect();
            let offer = if known.is_empty() {
                "no tools are available".to_string()
            } else {
                format!("available: {}", known.join(", "))
            };
            return Err(ToolOutput::error(format!("unknown tool {:?}: {offer}", call.name)));
        };
        let tool = tool.clone();
        if let Value::String(raw) = &call.input {
            return Err(ToolOutput::error(format!("the input is not valid JSON: {raw}")));
        }
        // Judging the call resolves its paths (their links followed: file
        // system calls, which a slow or hung mount can stall): off the
        // runtime's other tasks, so Esc and signals still get through.
        let (subject, standing, decision) = crate::runtime::blocking(|| {
            let subject = tool.subject(&call.input, ctx.cwd);
            let decision = self.permissions.decide(tool.name(), tool.needs_permission(), subject.as_deref(), ctx.cwd);
            let standing = Standing::of(tool.sandboxing(&call.input, ctx.cwd), ctx.sandbox);
            let beyond = standing
                .beyond_key(subject.as_deref())
                .is_some_and(|key| self.permissions.allowed_beyond(tool.name(), &key));
            let decision = standing.decide(decision, beyond);
            (subject, standing, decision)
        });
        match decision {
            Decision::Allow => {}
            Decision::Deny(why) => {
                // One-shot: the person sees each denial, not only the model.
                if !asker.can_ask() {
                    let call = crate::limits::one_line(&format!("{} {}", tool.name(), tool.summary(&call.input)), 200);
                    asker.tell(&format!("denied: {call}: {}", why.trim_start_matches("denied: ")));
                }
                return Err(ToolOutput::error(why));
            }
            Decision::Ask if !asker.can_ask() => {
                asker.tell(&standing.told(tool.name(), &tool.summary(&call.input), subject.as_deref(), ctx.cwd));
                return Err(ToolOutput::error(standing.cannot_ask(tool.name(), subject.as_deref(), ctx.cwd)));
            }
            Decision::Ask => self.ask(&tool, call, subject.as_deref(), &standing, ctx, asker).await?,
        }
        let reads = ReadGuard::new(self.permissions.deny_rules().to_vec()).with_sandbox(ctx.sandbox.shared_policy());
        let judged =
            Judged { subject, reads: Arc::new(reads), permissions: Arc::new(self.permissions.clone()), progress: None };
        Ok(Cleared { tool, judged })
    }

    /// Ask the user about a call; `Err` is the result of a call not allowed.
    async fn ask(
        &mut self,
        tool: &Arc<dyn Tool>,
        call: &ToolCall,
        subject: Option<&str>,
        standing: &Standing<'_>,
        ctx: &ToolContext<'_>,
        asker: &mut dyn Asker,
    ) -> Result<(), ToolOutput> {
        // Built only for someone who is asked, and off the runtime
        // (it reads the file).
        let (for_preview, input, cwd) = (tool.clone(), call.input.clone(), ctx.cwd.to_path_buf());
        let preview = crate::runtime::off_thread(move |_| for_preview.preview(&input, &cwd)).await;
        let question = permissions::Question {
            tool: tool.name(),
            summary: tool.summary(&call.input),
            preview: preview.ok().flatten(),
            subject,
            full: tool.in_full(&call.input).or_else(|| subject.map(|s| format!("path: {s}"))),
            always: standing.always(tool.name()),
        };
        let answer = match asker.ask(&question) {
            permissions::Asked::Now(answer) => answer,
            permissions::Asked::Later(answer) => tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Answer::Interrupted,
                answer = answer => answer.unwrap_or(Answer::Interrupted),
            },
        };
        match answer {
            Answer::Once => Ok(()),
            // Past the sandbox, `a` holds for this exact call only.
            Answer::Always => {
                match standing.beyond_key(subject) {
                    Some(key) => self.permissions.allow_beyond(tool.name(), &key),
                    None => self.permissions.allow_for_session(tool.name(), subject),
                }
                Ok(())
            }
            Answer::Deny(reason) => Err(ToolOutput::error(permissions::denied_by_user(reason.as_deref()))),
            Answer::Cannot => Err(ToolOutput::error(standing.cannot_ask(tool.name(), subject, ctx.cwd))),
            Answer::Interrupted => Err(ToolOutput::error("interrupted by the user before it ran")),
        }
    }

    /// Run the `tool_call` hooks of `call`; the reason when one blocks it.
    async fn before_call(&self, call: &ToolCall, ctx: &ToolContext<'_>, asker: &mut dyn Asker) -> Option<String> {
        if self.hooks.of(Event::ToolCall).is_empty() {
            return None;
        }
        let payload = Payload::ToolCall { tool: call.name.clone(), input: call.input.clone() };
        self.run_hooks(payload, call, ctx, asker).await.blocked
    }

    /// After a call ran (or was refused): its `tool_result` hooks, which see
    /// the result. Their problems are told through `asker`.
    pub async fn after_call(&self, call: &ToolCall, output: &ToolOutput, ctx: &ToolContext<'_>, asker: &mut dyn Asker) {
        if self.hooks.of(Event::ToolResult).is_empty() {
            return;
        }
        let payload = Payload::ToolResult {
            tool: call.name.clone(),
            input: call.input.clone(),
            result: output.content.clone(),
            is_error: output.is_error,
        };
        self.run_hooks(payload, call, ctx, asker).await;
    }

    /// Run the hooks of `payload`'s event for `call` (matched against its
    /// tool and rule subject), telling each problem.
    async fn run_hooks(
        &self,
        payload: Payload,
        call: &ToolCall,
        ctx: &ToolContext<'_>,
        asker: &mut dyn Asker,
    ) -> crate::hooks::Outcome {
        // A subject is a resolved path (file system calls): off the runtime.
        let subject = crate::runtime::blocking(|| self.get(&call.name).and_then(|t| t.subject(&call.input, ctx.cwd)));
        let scene =
            Scene { session_id: ctx.session_id, session_file: ctx.session_file, cwd: ctx.cwd, redactor: ctx.redactor };
        let tool = Some((call.name.as_str(), subject.as_deref()));
        let outcome = crate::hooks::run(&self.hooks, payload, &scene, tool).await;
        for problem in &outcome.problems {
            asker.tell(&format!("warning: {problem}"));
        }
        outcome
    }
}

/// A call the registry allowed: the tool and what was judged for it, run
/// without the registry ([`Registry::prepare`]).
pub struct Cleared {
    tool: Arc<dyn Tool>,
    judged: Judged,
}

impl Cleared {
    /// Report how far the run gets to `progress`.
    pub fn with_progress(mut self, progress: Arc<Progress>) -> Cleared {
        self.judged.progress = Some(progress);
        self
    }

    /// Run the call until it ends or `ctx.cancel` fires.
    pub async fn run(self, input: &Value, ctx: &ToolContext<'_>) -> ToolOutput {
        let ctx = ToolContext { judged: self.judged, ..*ctx };
        let run = self.tool.run(input, &ctx);
        if self.tool.stops_itself() {
            return run.await;
        }
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => ToolOutput::error("interrupted by the user: the tool was stopped"),
            out = run => out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sandbox's view of a decision, as the registry takes it.
    fn decide(decision: Decision, sandboxing: &Sandboxing, sandbox: &crate::sandbox::Sandbox) -> Decision {
        Standing::of(sandboxing.clone(), sandbox).decide(decision, false)
    }

    #[test]
    fn the_sandbox_decides_who_asks() {
        use crate::sandbox::{Mode, Places, Sandbox, SandboxConfig};
        let dir = tempfile::tempdir().unwrap();
        let root = crate::sandbox::resolve(dir.path());
        std::fs::create_dir_all(root.join("work/.git")).unwrap();
        let places = Places {
            home: Some(root.join("home")),
            tmp: root.join("tmp"),
            data: root.join("data"),
            config_dir: root.join("home/.config/glrs"),
            config_file: root.join("home/.config/glrs/config.json"),
            own_output: None,
            caches: None,
        };
        let ww = Sandbox::new(&SandboxConfig::default(), Mode::WorkspaceWrite, &root.join("work"), &places).unwrap();
        let deny = Decision::Deny("no".into());
        let outside = Sandboxing::Outside("why".into());
        assert_eq!(decide(deny.clone(), &outside, &ww), deny, "a deny rule wins");
        assert_eq!(decide(Decision::Allow, &outside, &ww), Decision::Ask, "leaving the sandbox asks");
        assert_eq!(decide(Decision::Allow, &outside, &ww.with_mode(Mode::Off)), Decision::Allow);
        let writes = |p: &str| Sandboxing::Writes(root.join(p));
        assert_eq!(decide(Decision::Ask, &writes("work/src/a.rs"), &ww), Decision::Allow);
        assert_eq!(decide(Decision::Ask, &writes("work/.git/config"), &ww), Decision::Ask);
        assert_eq!(decide(Decision::Ask, &writes("home/.bashrc"), &ww), Decision::Ask);
        assert_eq!(decide(Decision::Ask, &writes("work/a.rs"), &ww.with_mode(Mode::ReadOnly)), Decision::Ask);
        assert_eq!(decide(Decision::Ask, &Sandboxing::Inside, &ww.with_mode(Mode::Off)), Decision::Ask);
        assert_eq!(decide(Decision::Ask, &Sandboxing::None, &ww), Decision::Ask);
        // `a` answered to this very call past the sandbox lets it run again
        // (a deny rule still wins); it means nothing for a call inside.
        let past = |decision: Decision, sandboxing: &Sandboxing, sandbox: &Sandbox| {
            Standing::of(sandboxing.clone(), sandbox).decide(decision, true)
        };
        assert_eq!(past(Decision::Ask, &outside, &ww), Decision::Allow);
        assert_eq!(past(deny.clone(), &outside, &ww), deny);
        assert_eq!(past(Decision::Ask, &writes("home/.bashrc"), &ww), Decision::Allow);
        assert_eq!(past(Decision::Ask, &Sandboxing::Inside, &ww.with_mode(Mode::Off)), Decision::Ask);
        // What the prompt says `a` grants.
        let says = |sandboxing: &Sandboxing, sandbox: &Sandbox, tool: &str| {
            let standing = Standing::of(sandboxing.clone(), sandbox);
            (standing.always(tool), standing.beyond_key(Some("echo hi")))
        };
        let bashrc = root.join("home/.bashrc").to_string_lossy().into_owned();
        assert_eq!(
            says(&outside, &ww, "bash"),
            ("this exact command, outside the sandbox".into(), Some("echo hi".into()))
        );
        assert_eq!(says(&Sandboxing::Inside, &ww, "bash"), ("this exact command".into(), None));
        assert_eq!(
            says(&writes("home/.bashrc"), &ww, "edit"),
            ("edit of this file, outside the writable roots".into(), Some(bashrc))
        );
        let ro = ww.with_mode(Mode::ReadOnly);
        assert_eq!(says(&writes("work/a.rs"), &ro, "edit").0, "edit of this file, outside the writable roots");
        assert_eq!(says(&writes("work/a.rs"), &ww.with_mode(Mode::Off), "edit"), ("every edit call".into(), None));
        assert_eq!(says(&Sandboxing::None, &ww, "note"), ("every note call".into(), None));
    }

    /// Collects what the registry tells.
    #[derive(Default)]
    struct Told(Vec<String>);
    impl Asker for Told {
        fn ask(&mut self, _: &permissions::Question<'_>) -> permissions::Asked {
            permissions::Asked::Now(Answer::Cannot)
        }
        fn tell(&mut self, text: &str) {
            self.0.push(text.to_string());
        }
    }

    fn hook(command: &str) -> crate::hooks::Hook {
        crate::hooks::Hook { command: command.into(), matcher: None, timeout: Some(10), cwd: None }
    }

    /// The registry runs the hooks of every call, whoever calls it: a
    /// `tool_call` hook that exits 2 blocks the call (the tool never runs),
    /// one that fails is told, and `tool_result` hooks see the result.
    #[tokio::test]
    async fn the_registry_runs_the_hooks_of_every_call() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = crate::provider::Cancel::default();
        let ctx = super::super::tests::ctx(dir.path(), &cancel);
        let seen = dir.path().join("seen.json");
        let mut registry = Registry::new(Default::default(), permissions::Permissions::default());
        registry.add(Arc::new(super::super::tests::Echo));
        let call = |input: Value| ToolCall { id: "c1".into(), name: "echo".into(), input };
        let situation = Situation::default();
        registry.set_hooks(crate::hooks::HooksConfig {
            tool_call: vec![hook("grep -q secret && { echo 'not that' >&2; exit 2; }; exit 0"), hook("exit 7")],
            tool_result: vec![hook(&format!("cat > '{}'", seen.display()))],
            ..Default::default()
        });
        let mut told = Told::default();
        let blocked = registry.call(&call(serde_json::json!({"say": "secret"})), &ctx, &mut told, &situation).await;
        assert_eq!(blocked, ToolOutput::error("blocked by a tool_call hook: not that"));
        assert!(told.0.is_empty(), "the first hook blocked: the failing one never ran: {:?}", told.0);
        assert!(!seen.exists(), "a blocked call is not run, so it has no result hooks of its own here");
        let call = call(serde_json::json!({"say": "hello"}));
        let out = registry.call(&call, &ctx, &mut told, &situation).await;
        assert_eq!(out, ToolOutput::ok(r#"{"say":"hello"}"#));
        assert_eq!(told.0.len(), 1, "the failing hook is told once: {:?}", told.0);
        assert!(told.0[0].starts_with("warning: "), "{:?}", told.0);
        registry.after_call(&call, &out, &ctx, &mut told).await;
        let payload: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(payload["event"], "tool_result");
        assert_eq!(payload["result"], r#"{"say":"hello"}"#);
        assert_eq!(payload["isError"], false);
    }
}
