//! `task` (SPEC 20): a subagent, the Unix way. A call runs a child
//! `glrs-chat` in a session of its own, made here before it starts (so it
//! exists, as the record of what was asked, whatever becomes of the child):
//! its header has `parent: {id, entry}` and `subagent: true`, the parent's
//! cwd, and the child resumes it with `--resume ID`, the prompt on stdin,
//! `--json` for its answer. It has a fresh context: its first request holds
//! its prompt and its own system prompt, nothing of the parent's
//! conversation.
//!
//! It may do what the parent may, never more: the parent's sandbox mode
//! (`--sandbox`), its allow rules,
//! `--allow-all` only when the parent has it, and the allowances the user
//! gave the parent's session (`a`), exactly ([`super::Permissions::child_args`]);
//! deny rules come from the config both read. It is a one-shot run, so a
//! call that would ask is denied with the reason, which its model sees.
//! Its process is the parent's like any command's ([`crate::process`]): a
//! group of its own killed when the call ends or is dropped (Esc), the
//! parent-death signal, the watchdog; what the child starts is its own
//! process machinery's, which dies with it.
//!
//! Calls of one answer run at the same time ([`Tool::concurrent`]; the turn
//! loop bounds them by `subagents.maxParallel`). A child does not offer
//! `task` itself: one level of subagents, no fork bomb.

pub mod agents;
mod child;

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Origin, Tool, ToolContext, ToolFuture, ToolOutput, parse_input};
use crate::provider::ToolSpec;
use crate::store::Store;
pub use agents::NamedAgent;

/// The tool's name.
pub const NAME: &str = "task";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskInput {
    description: String,
    prompt: String,
    agent: Option<String>,
    model: Option<String>,
}

/// `task`: run a subagent.
pub struct Task {
    store: Store,
    agents: Vec<NamedAgent>,
}

impl Task {
    /// The tool over `store`, offering `agents`.
    pub fn new(store: Store, agents: Vec<NamedAgent>) -> Task {
        Task { store, agents }
    }

    fn description(&self) -> String {
        let mut text = String::from(
            "Run a subagent: a fresh agent in a session of its own, with the same tools and permissions, for a \
             self-contained side task (search the code, review a diff, run the tests and summarise). It sees only \
             your prompt, so say everything it needs; it cannot ask anyone. Its result is its final answer and its \
             session id (read the whole session with glrs-sessions show ID). Several task calls in one answer \
             run at the same time.",
        );
        if !self.agents.is_empty() {
            text.push_str(" Named agents (give one as agent):");
            for agent in &self.agents {
                text.push_str(&format!("\n- {}: {}", agent.name, crate::limits::one_line(&agent.description, 300)));
            }
        }
        text
    }
}

impl Tool for Task {
    fn name(&self) -> &str {
        NAME
    }
    fn origin(&self) -> Origin {
        Origin::BuiltIn
    }
    fn spec(&self) -> ToolSpec {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        let mut agent = json!({"type": "string", "description": "a named agent (its system prompt, model and tools)"});
        if !names.is_empty() {
            agent["enum"] = json!(names);
        }
        ToolSpec {
            name: NAME.into(),
            description: self.description(),
            parameters: json!({"type": "object", "properties": {
                "description": {"type": "string", "description": "the task in a few words, shown to the user"},
                "prompt": {"type": "string", "description": "everything the subagent needs to do the task"},
                "agent": agent,
                "model": {"type": "string", "description": "provider/model-id, else the agent's or yours"}
            }, "required": ["description", "prompt"]}),
        }
    }
    /// Starting a child is no privilege: the child asks (and, unable to ask,
    /// is denied) for what it does. Deny rules still apply (`task`).
    fn needs_permission(&self) -> bool {
        false
    }
    fn summary(&self, input: &Value) -> String {
        let description = input.get("description").and_then(Value::as_str).unwrap_or("?");
        match input.get("agent").and_then(Value::as_str) {
            Some(agent) => crate::limits::one_line(&format!("{description}  ({agent})"), 100),
            None => crate::limits::one_line(description, 100),
        }
    }
    fn concurrent(&self) -> bool {
        true
    }
    fn stops_itself(&self) -> bool {
        true
    }
    fn run<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let input: TaskInput = match parse_input(input) {
                Ok(i) => i,
                Err(e) => return e,
            };
            let agent = match &input.agent {
                None => None,
                Some(name) => match self.agents.iter().find(|a| &a.name == name) {
                    Some(agent) => Some(agent),
                    None => return ToolOutput::error(unknown_agent(name, &self.agents)),
                },
            };
            let model = input
                .model
                .clone()
                .or_else(|| agent.and_then(|a| a.model.clone()))
                .unwrap_or_else(|| ctx.model.to_string());
            if let Err(e) = crate::provider::select::ModelRef::parse(&model) {
                return ToolOutput::error(format!("bad model {model:?}: {e:#}"));
            }
            let child = child::Child {
                store: &self.store,
                model: &model,
                agent,
                prompt: &input.prompt,
                description: &input.description,
            };
            child.run(ctx).await
        })
    }
}

fn unknown_agent(name: &str, agents: &[NamedAgent]) -> String {
    if agents.is_empty() {
        return format!("no agent is named {name:?}: there are no named agents (leave agent out)");
    }
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    format!("no agent is named {name:?}: the named agents are {}", names.join(", "))
}

/// The named agents for a session in `cwd` (the user's and the
/// repository's), and a line for each file left out.
pub fn load_agents(config_home: Option<&Path>, cwd: &Path) -> (Vec<NamedAgent>, Vec<String>) {
    agents::load(&agents::agent_dirs(config_home, cwd))
}
