//! The registry itself: the tools of one chat (built-in, the session's own,
//! executable and MCP tools as their servers start), what is offered in
//! which situation, the session's permissions and sandbox, and the hooks
//! its dispatch ([`super::dispatch`]) runs around each call.

use std::sync::Arc;

use super::{Offering, Origin, Permissions, Situation, Tool, ToolSource, builtins};
use crate::limits;
use crate::provider::{Cancel, ToolSpec};
use crate::store::ToolCall;

/// The tools of one chat and the permission state of its session.
#[derive(Default)]
pub struct Registry {
    pub(super) tools: Vec<Arc<dyn Tool>>,
    offering: Offering,
    /// The session's permission state.
    pub permissions: Permissions,
    /// The chat's MCP servers, whose tools join as they start (SPEC 15).
    servers: Option<Arc<dyn ToolSource>>,
    /// The session's sandbox (SPEC 17).
    sandbox: Arc<crate::sandbox::Sandbox>,
    /// The config's hooks: each call's `tool_call` and `tool_result` (SPEC 15).
    pub(super) hooks: Arc<crate::hooks::HooksConfig>,
}

impl Registry {
    /// An empty registry with what to offer and the permissions.
    pub fn new(offering: Offering, permissions: Permissions) -> Registry {
        Registry {
            tools: Vec::new(),
            offering,
            permissions,
            servers: None,
            sandbox: Arc::default(),
            hooks: Arc::default(),
        }
    }

    /// The registry with the seven built-in tools.
    pub fn with_builtins(offering: Offering, permissions: Permissions) -> Registry {
        let mut registry = Registry::new(offering, permissions);
        for tool in builtins() {
            registry.add(tool);
        }
        registry
    }

    /// `--no-tools`: offer nothing.
    pub fn offer_none(&mut self) {
        self.offering.none = true;
    }

    /// The command line's choices (`--no-tools`, `--allow`), for the next
    /// session opened in the same chat.
    pub fn carry_to(&self, next: &mut Registry) {
        next.offering.none = self.offering.none;
        next.permissions = self.permissions.without_session();
        // Extension tools belong to the chat, not to one session.
        for tool in self.tools.iter().filter(|t| t.origin() == Origin::Extension) {
            next.add(tool.clone());
        }
        next.servers = self.servers.clone();
    }

    /// The session's sandbox, for the calls' [`ToolContext`].
    pub fn sandbox(&self) -> Arc<crate::sandbox::Sandbox> {
        self.sandbox.clone()
    }

    /// Run the next calls in this sandbox (a session opened, `/sandbox MODE`).
    pub fn set_sandbox(&mut self, sandbox: crate::sandbox::Sandbox) {
        self.sandbox = Arc::new(sandbox);
    }

    /// Run the config's `tool_call` and `tool_result` hooks around each call.
    pub fn set_hooks(&mut self, hooks: crate::hooks::HooksConfig) {
        self.hooks = Arc::new(hooks);
    }

    /// Offer the tools of these MCP servers as they start.
    pub fn attach_servers(&mut self, servers: Arc<dyn ToolSource>) {
        self.servers = Some(servers);
    }

    /// The chat's MCP servers, if it has any.
    pub fn servers(&self) -> Option<&Arc<dyn ToolSource>> {
        self.servers.as_ref()
    }

    /// Before a model call: wait for MCP servers still starting or listing
    /// changed tools (each is bounded; `cancel` stops the wait), offer
    /// their tools as they are now (added, changed in place, removed), and
    /// return what to tell the user (servers that failed or stopped, each
    /// once).
    pub async fn settle(&mut self, cancel: &Cancel) -> Vec<String> {
        let Some(servers) = self.servers.clone() else { return Vec::new() };
        if !self.offering.none {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = servers.ready() => {}
            }
            let now = servers.tools();
            self.tools.retain(|t| !servers.owns(t.name()) || now.iter().any(|n| n.name() == t.name()));
            for tool in now {
                match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
                    Some(slot) => *slot = tool,
                    None => self.tools.push(tool),
                }
            }
        }
        servers.news()
    }

    /// The names of every tool in the registry, offered or not.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_string()).collect()
    }

    /// The built-in tools offered on a normal step (for the system prompt).
    pub fn builtin_names(&self) -> Vec<String> {
        self.offered(&Situation::default())
            .into_iter()
            .filter(|t| t.origin() == Origin::BuiltIn)
            .map(|t| t.name().to_string())
            .collect()
    }

    /// Offer only the tools whose names match `globs` (a named agent's
    /// `tools`, SPEC 20); a bad glob is an error naming it.
    pub fn offer_only(&mut self, globs: &[String]) -> anyhow::Result<()> {
        let mut set = globset::GlobSetBuilder::new();
        for glob in globs {
            set.add(globset::Glob::new(glob).map_err(|e| anyhow::anyhow!("--tools {glob:?}: {e}"))?);
        }
        self.offering.only = Some(set.build()?);
        Ok(())
    }

    /// Take the tool `name` out (a child agent offers no `task`).
    pub fn remove(&mut self, name: &str) {
        self.tools.retain(|t| t.name() != name);
    }

    /// Add a tool; one with the name of a tool already there replaces it.
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub(super) fn available(&self, tool: &dyn Tool, situation: &Situation) -> bool {
        let o = &self.offering;
        let off = o.none
            || (o.builtin_off && tool.origin() == Origin::BuiltIn)
            // The memory flush offers the session's own tools only.
            || (situation.flush && tool.origin() != Origin::Session)
            || o.disabled.as_ref().is_some_and(|set| set.is_match(tool.name()))
            || o.only.as_ref().is_some_and(|set| !set.is_match(tool.name()));
        !off && tool.offered(situation)
    }

    /// The tools offered now.
    pub fn offered(&self, situation: &Situation) -> Vec<&dyn Tool> {
        self.tools.iter().map(|t| t.as_ref()).filter(|t| self.available(*t, situation)).collect()
    }

    /// The specs offered to the model now.
    pub fn specs(&self, situation: &Situation) -> Vec<ToolSpec> {
        self.offered(situation).into_iter().map(|t| t.spec()).collect()
    }

    /// A tool by name, offered or not (to render a call).
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| t.as_ref())
    }

    /// Whether a call of the tool `name` may change files (SPEC 19). An
    /// unknown tool does not run, so it changes nothing.
    pub fn mutates(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.mutates())
    }

    /// The call in one line (`read  src/main.rs`).
    pub fn summary(&self, call: &ToolCall) -> String {
        match self.get(&call.name) {
            Some(tool) => tool.summary(&call.input),
            None => limits::one_line(&call.input.to_string(), 100),
        }
    }

    /// Whether `name` is a tool whose calls of one answer may run at the
    /// same time (the `task` tool, SPEC 20).
    pub fn runs_beside(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.concurrent())
    }
}
