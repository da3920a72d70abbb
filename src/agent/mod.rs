//! The agent: one open session, its context in memory, and the turn loop
//! over it (`turn`): the model steps, their tool calls (through the one
//! registry, with the permission rules and the hooks) and the write points.
//! No terminal and no REPL: the chat (`crate::chat`) wraps an `Agent` with
//! what only someone at a keyboard brings (steers, compaction started from
//! the chat, overflow recovery), through [`turn::Driver`]; `glrs-compact`
//! runs the memory flush on an `Agent` of its own ([`Agent::memory_flush`]).
//!
//! An `Agent` holds the session's open lock for as long as it lives. Its
//! fields are its own; other modules use its methods. It remembers the
//! session file as it last wrote or read it (one `LastSeen`: stamp, mark,
//! entry count, `updatedAt`): when the file's stamp differs before a model
//! call, another program changed the session (e.g. a compaction landed) and
//! the context is rebuilt from the file.

mod calls;
mod checkpoint;
pub mod flush;
pub mod hooked;
mod parts;
pub mod pruning;
pub mod reset;
pub mod session_tools;
mod step;
pub mod system;
pub mod turn;
mod write;

use std::path::Path;

use crate::config::Config;
use crate::context;
use crate::error::StoreError;
use crate::provider::select::ModelRef;
use crate::provider::{Provider, catalogue};
use crate::redact::Redactor;
use crate::store::lock::Holder;
use crate::store::{Entry, Located, OpenLock, Stamp, Store};
use crate::tools::{Permissions, Registry};
use crate::{SessionId, time};
use anyhow::{Context, Result};
use parts::{Binding, LastSeen, LiveContext, Prompt, SessionLog};
pub use turn::{Driver, TurnKind, TurnOutcome, TurnUi, Unattended};
pub use write::{Unsaved, WriteFailed, WriteNote};

/// An open conversation: the session it records to, the model it talks to, and what it holds in memory between writes.
pub struct Agent {
    /// The configuration it was started with.
    config: Config,
    /// The session it records to: the file, its lock, what is not yet written.
    log: SessionLog,
    /// The context the next model call sends, with its token estimate.
    context: LiveContext,
    /// The model it talks to and how.
    binding: Binding,
    /// What the system prompt is made of.
    prompt: Prompt,
    /// Every tool the model can call, and the session's permissions.
    tools: Registry,
    /// Applied to everything this agent writes.
    redactor: Redactor,
    /// Where the workspace's checkpoints are taken (SPEC 19).
    checkpoints: crate::checkpoint::Tracker,
}

/// The names of the tools every chat has: the built-in ones and the
/// session's own (`memory_append`, the compaction tools, `task`), known
/// before any session is opened (to check `--allow` rules).
pub fn standard_tool_names() -> Vec<String> {
    let mut names: Vec<String> = crate::tools::builtins().iter().map(|t| t.name().to_string()).collect();
    names.push("memory_append".into());
    names.extend(session_tools::COMPACTION_TOOLS.iter().map(|k| k.name().to_string()));
    names.push(crate::tools::task::NAME.into());
    names
}

impl Agent {
    /// A new session. Its file is created at the first write, so starting
    /// and quitting leaves nothing behind.
    pub fn start(store: Store, config: Config, model: ModelRef, system: Option<String>, cwd: String) -> Result<Agent> {
        // A bad model or a missing key fails here, before any file exists.
        let provider = Provider::from_config(&config, &model.provider)?;
        let (id, open) = loop {
            let id = store.fresh_id()?;
            let open = store.open_lock(&id)?;
            // Taken the lock first: now nobody else can have made this id.
            if store.locate(&id).is_none() {
                break (id, open);
            }
        };
        let system = system.or_else(|| config.system_prompt.clone());
        Agent::assemble(store, config, id, open, model, provider, system, cwd)
    }

    /// An agent on `id` with nothing read yet: what `start` returns, and what
    /// `resume` fills in from the file.
    #[allow(clippy::too_many_arguments)] // each is a distinct part of an open session
    fn assemble(
        store: Store,
        config: Config,
        id: SessionId,
        open: OpenLock,
        model: ModelRef,
        provider: Provider,
        system: Option<String>,
        cwd: String,
    ) -> Result<Agent> {
        let window = catalogue::context_window(&config, &model.provider, &model.model);
        let permissions = Permissions::new(&config.permissions.allow, &config.permissions.deny, &[], false)?;
        let mut tools = Registry::with_builtins(crate::tools::Offering::from_config(&config)?, permissions);
        let places = crate::sandbox::Places {
            own_output: Some(store.paths.output_of(id.as_str())),
            caches: crate::sandbox::policy::caches_folder(&crate::checkpoint::workspace_key(
                &crate::checkpoint::workspace_of(Path::new(&cwd)),
            )),
            ..crate::sandbox::Places::from_env(&store.paths)
        };
        let mode = config.sandbox.mode.unwrap_or_default();
        tools.set_sandbox(crate::sandbox::Sandbox::new(&config.sandbox, mode, Path::new(&cwd), &places)?);
        tools.set_hooks(config.hooks.clone());
        let memory = crate::compact::flush::memory_dir(&store.paths.data, Path::new(&cwd));
        tools.add(std::sync::Arc::new(session_tools::MemoryAppend { dir: memory }));
        for kind in session_tools::COMPACTION_TOOLS {
            tools.add(std::sync::Arc::new(session_tools::CompactionTool {
                kind,
                store: store.clone(),
                id: id.clone(),
            }));
        }
        let config_home = system::config_home();
        let mut agents = system::load_instructions(
            config_home.as_deref(),
            &system::agents_files(config_home.as_deref(), Path::new(&cwd)),
        );
        // SPEC 20: subagents, and the named agents the model may choose.
        let (named, left_out) = crate::tools::task::load_agents(config_home.as_deref(), Path::new(&cwd));
        agents.problems.extend(left_out);
        tools.add(std::sync::Arc::new(crate::tools::task::Task::new(store.clone(), named)));
        let redactor = config.redactor()?;
        let settings = crate::checkpoint::Settings::from_config(&config);
        let checkpoints = crate::checkpoint::Tracker::new(&store.paths.data, Path::new(&cwd), &id, settings);
        Ok(Agent {
            log: SessionLog::new(store, id, cwd, open),
            context: LiveContext::default(),
            binding: Binding {
                provider,
                window,
                thinking: config.thinking.unwrap_or_default(),
                last_call: None,
                model,
            },
            prompt: Prompt { system, agents },
            tools,
            redactor,
            checkpoints,
            config,
        })
    }

    /// Open an existing session, holding it open as `holder` (a chat, or
    /// `glrs-compact` for its memory flush). Refused (`Busy`, exit 4) while
    /// another holds it. The model is `model`, else the one the session
    /// last used, else `fallback`'s.
    #[allow(clippy::too_many_arguments)] // each is a distinct part of an open session
    pub fn resume(
        store: Store,
        config: Config,
        at: &Located,
        holder: Holder,
        model: Option<ModelRef>,
        fallback: impl FnOnce() -> Result<ModelRef>,
        system: Option<String>,
    ) -> Result<Agent> {
        let open = store.open_lock_as(&at.id, holder)?;
        // The stamp first: if the file changes while it is read, the stamp
        // is the older one, and the next check reloads (never the reverse).
        let stamp = Stamp::of(&at.path).with_context(|| format!("cannot read {}", at.path.display()))?;
        // Only the entries from the last boundary on are read (and only
        // those the context uses parsed); counts come from a streaming scan.
        let recent = flush::read_for_context(&store, at)?;
        let file = &recent.lines;
        let events = file.entries();
        let chosen = model.is_some();
        let model = match model {
            Some(m) => m,
            None => match file.get_str("model") {
                Some(name) => ModelRef::parse(name)?,
                None => fallback()?,
            },
        };
        let provider = Provider::from_config(&config, &model.provider)
            .map_err(|e| if chosen { e } else { model_hint(e, &model, &config) })?;
        let cwd = file.get_str("cwd").unwrap_or("").to_string();
        // `--system` wins, then what the session was started with, then the config.
        let system =
            system.or_else(|| file.get_str("system").map(str::to_string)).or_else(|| config.system_prompt.clone());
        let mut agent = Agent::assemble(store, config, at.id.clone(), open, model, provider, system, cwd)?;
        agent.context.messages = context::replay_from(&events, recent.first);
        agent.context.tokens = file.get_u64("contextTokens").unwrap_or(0);
        agent.log.key = file.get_str("key").map(str::to_string);
        agent.log.key_recorded = true;
        agent.binding.last_call = file.get_str("updatedAt").and_then(|t| t.parse().ok());
        if let Some(level) = file.get_str("thinking").and_then(|t| crate::provider::cache::Thinking::parse(t).ok()) {
            agent.binding.thinking = level;
        }
        // SPEC 17: the mode the session ran in, unless --sandbox says again.
        if let Some(mode) = file.get_str("sandbox").and_then(|m| crate::sandbox::Mode::parse(m).ok()) {
            agent.set_sandbox_mode(mode);
        }
        agent.context.cycle = crate::compact::flush::cycle_of(&recent.hit_texts());
        // A child agent (SPEC 20) starts no children of its own.
        if file.get("subagent").and_then(serde_json::Value::as_bool) == Some(true) {
            agent.tools.remove(crate::tools::task::NAME);
        }
        agent.log.seen = LastSeen {
            // A legacy session has no file in the store yet: its first
            // write saves it there.
            file: (!at.legacy).then(|| (stamp, file.mark.clone())),
            entries: recent.total,
            updated_at: file.get_str("updatedAt").map(str::to_string),
            thinking: file.get("thinking").is_some(),
        };
        Ok(agent)
    }

    /// Permissions from the config plus `--allow` rules and `--allow-all`.
    pub fn set_permissions(&mut self, allow: &[String], allow_all: bool) -> Result<()> {
        let p = &self.config.permissions;
        self.tools.permissions = Permissions::new(&p.allow, &p.deny, allow, allow_all)?;
        Ok(())
    }

    /// A child agent's inheritance (SPEC 20): the parent session's
    /// allowances (`--grant`), and a named agent's tools (`--tools`).
    pub fn inherit(&mut self, grants: &[String], only_tools: &[String]) -> Result<()> {
        for grant in grants {
            self.tools.permissions.grant(grant)?;
        }
        if !only_tools.is_empty() {
            self.tools.offer_only(only_tools)?;
        }
        Ok(())
    }

    /// The store the session lives in.
    pub fn store(&self) -> &Store {
        &self.log.store
    }

    /// The configuration the agent was started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.log.id
    }

    /// What to do about an overflow compaction could not fix.
    pub fn overflow_advice(&self) -> String {
        crate::provider::catalogue::overflow_advice(
            &self.config,
            &self.binding.model.provider,
            &self.binding.model.model,
        )
    }

    /// The model it talks to.
    pub fn model(&self) -> &ModelRef {
        &self.binding.model
    }

    /// The context window of the model, in tokens.
    pub fn window(&self) -> u64 {
        self.binding.window
    }

    /// The thinking level of the next turns.
    pub fn thinking(&self) -> crate::provider::cache::Thinking {
        self.binding.thinking
    }

    /// The estimate of the context the next request sends (SPEC 5).
    pub fn context_tokens(&self) -> u64 {
        self.context.tokens
    }

    /// Compactions in the session.
    pub fn compactions(&self) -> u64 {
        self.context.cycle.compactions
    }

    /// The compaction count the newest memory flush recorded, if any.
    pub fn flushed_cycle(&self) -> Option<u64> {
        self.context.cycle.flushed
    }

    /// The context size when a `before_compact` hook last cancelled an
    /// automatic compaction in this compaction cycle, as the file records
    /// it (a `compactionCancelled` entry).
    pub fn cancelled_at(&self) -> Option<u64> {
        self.context.cycle.cancelled_at
    }

    /// How many times the context was rebuilt from the file or cleared.
    pub fn rebuilds(&self) -> u64 {
        self.context.rebuilds
    }

    /// The session key that owns this session, if any.
    pub fn key(&self) -> Option<&str> {
        self.log.key.as_deref()
    }

    /// The tools, for what the user is shown of them (`/mcp`).
    pub fn tools(&self) -> &Registry {
        &self.tools
    }

    /// Give `next` (the session switched to) this one's added tools and
    /// permissions.
    pub fn carry_tools_to(&self, next: &mut Agent) {
        self.tools.carry_to(&mut next.tools);
    }

    /// The compaction trigger for the current model.
    pub fn trigger(&self) -> crate::compact::Trigger {
        crate::compact::Trigger::for_model(&self.config, &self.binding.model.provider, &self.binding.model.model)
    }

    /// `--key`: the session key that owns this session, written (with the
    /// key's entry in `keys.json`) at the next save.
    pub fn set_key(&mut self, key: String) {
        self.log.key = Some(key);
    }

    /// The session's sandbox (SPEC 17).
    pub fn sandbox(&self) -> std::sync::Arc<crate::sandbox::Sandbox> {
        self.tools.sandbox()
    }

    /// `--sandbox`, `/sandbox MODE`: the sandbox mode of the next calls,
    /// saved in the header as `sandbox`.
    pub fn set_sandbox_mode(&mut self, mode: crate::sandbox::Mode) {
        let sandbox = self.tools.sandbox().with_mode(mode);
        self.tools.set_sandbox(sandbox);
    }

    /// `--thinking`: the thinking level of the next turns, saved in the
    /// header.
    pub fn set_thinking(&mut self, level: crate::provider::cache::Thinking) {
        self.binding.thinking = level;
    }

    /// The names of every tool the agent has (to keep executable tools from
    /// shadowing them).
    pub fn tool_names(&self) -> Vec<String> {
        self.tools.names()
    }

    /// Add a tool the model can call (an executable tool, SPEC 15).
    pub fn add_tool(&mut self, tool: std::sync::Arc<dyn crate::tools::Tool>) {
        self.tools.add(tool);
    }

    /// The `AGENTS.md` files in the prompt, and those left out.
    pub fn instructions(&self) -> &system::Instructions {
        &self.prompt.agents
    }

    /// The working folder the session belongs to (its `cwd`).
    pub fn cwd(&self) -> &str {
        &self.log.cwd
    }

    /// Offer the tools of these MCP servers (SPEC 15) through the registry.
    pub fn attach_servers(&mut self, servers: std::sync::Arc<dyn crate::tools::ToolSource>) {
        self.tools.attach_servers(servers);
    }

    /// `--no-tools`: offer the model nothing.
    pub fn no_tools(&mut self) {
        self.tools.offer_none();
    }

    /// The system prompt as sent: the default part (or its replacement),
    /// then the `AGENTS.md` files.
    pub fn system_prompt(&self) -> Option<String> {
        let builtins = self.tools.builtin_names();
        let builtins = (!builtins.is_empty()).then_some(builtins);
        system::assemble(self.prompt.system.as_deref(), builtins.as_deref(), &self.log.cwd, &self.prompt.agents.text)
    }

    /// The system prompt's share of the context, estimated.
    pub fn system_tokens(&self) -> u64 {
        self.system_prompt().map_or(0, |s| crate::message::estimate_text(&s))
    }

    /// Switch models for the next turns.
    pub fn set_model(&mut self, model: ModelRef) -> Result<()> {
        self.binding.provider = Provider::from_config(&self.config, &model.provider)?;
        self.binding.window = catalogue::context_window(&self.config, &model.provider, &model.model);
        self.binding.model = model;
        Ok(())
    }

    /// The context fill, in percent of the window.
    pub fn fill_percent(&self) -> u64 {
        // Of the window compaction plans against, not the model's whole
        // window: on a 1M-token model compaction fires at `compactAt` of
        // `compactWindow`, and the prompt should say so (75%, not 18%).
        (self.context.tokens.saturating_mul(100)).checked_div(self.trigger().window).unwrap_or(0)
    }

    /// True once the session has a file in the store.
    pub fn is_saved(&self) -> bool {
        self.log.seen.file.is_some()
    }

    /// If another program changed the session file since this agent last
    /// saw it, rebuild the context from the file (plus what this agent has
    /// not written yet). Returns true when it did.
    pub fn sync_from_disk(&mut self) -> Result<bool, StoreError> {
        let Some((known, _)) = self.log.seen.file else { return Ok(false) };
        let path = self.log.store.session_path(&self.log.id);
        let now = Stamp::of(&path).map_err(|e| StoreError::io(&path, "read", e))?;
        if now == known {
            return Ok(false);
        }
        let at = Located { id: self.log.id.clone(), path: path.clone(), legacy: false };
        let recent = flush::read_for_context(&self.log.store, &at)?;
        let file = &recent.lines;
        let mut events = file.entries();
        let known_len = recent.total;
        self.context.cycle = crate::compact::flush::cycle_of(&recent.hit_texts());
        let unwritten: Vec<String> = self.log.unwritten.iter().filter_map(|e| serde_json::to_string(e).ok()).collect();
        events.extend(unwritten.iter().map(String::as_str));
        self.context.rebuilds += 1;
        self.context.messages = context::replay_from(&events, recent.first);
        self.context.tokens = file.get_u64("contextTokens").unwrap_or(self.context.tokens);
        self.log.seen = LastSeen {
            // The mark was read after `now` was taken: if the file changed
            // meanwhile, the stamps differ at the next check, and the mark
            // at the next write.
            file: Some((now, file.mark.clone())),
            entries: known_len,
            updated_at: file.get_str("updatedAt").map(str::to_string),
            thinking: file.get("thinking").is_some(),
        };
        Ok(true)
    }

    /// Add a prompt to the shared history (`prompts.json`, the REPL's Up
    /// arrow), whichever mode it was typed in. A failure is only a warning.
    pub fn remember_prompt(&self, text: &str) -> Result<()> {
        let prompt = crate::store::prompts::Prompt {
            text: self.redactor.text(text).into_owned(),
            at: time::now(),
            session: self.log.id.to_string(),
            cwd: self.log.cwd.clone(),
            truncated_from: None,
            extra: Default::default(),
        };
        self.log.store.add_prompt(prompt, crate::store::prompts::DEFAULT_CAP).context("prompt history not saved")
    }

    /// `/clear`: a `cleared` entry; the model starts from nothing, the
    /// transcript stays in the session.
    pub fn clear(&mut self) -> Option<WriteNote> {
        self.record(Entry::Cleared { at: time::now() });
        self.context.rebuilds += 1;
        self.context.messages.clear();
        self.context.tokens = self.system_tokens();
        self.save_or_report()
    }
}

/// A session's own model that cannot be used here (an imported session's,
/// whose provider has no key on this machine): the error, and how to go
/// on with another model, naming those configured.
fn model_hint(e: anyhow::Error, model: &ModelRef, config: &Config) -> anyhow::Error {
    let configured = crate::provider::select::configured_models(config);
    let choices = match configured.as_slice() {
        [] => "none is configured: see glrs models".to_string(),
        names => format!("configured: {}", names.join(", ")),
    };
    anyhow::anyhow!(
        "{e:#}; this session last used {}: to continue it with another model, pass --model provider/model-id \
         ({choices})",
        model.full()
    )
}
