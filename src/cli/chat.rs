//! `glrs-chat`: the REPL, or one turn with `-p` (SPEC sections 9, 11, 12).

use std::io::{IsTerminal, Read};
use std::ops::ControlFlow;

use anyhow::{Context, Result, bail};
use clap::Parser;

use crate::agent::Agent;
use crate::chat::{self, Chat};
use crate::cli::UsageError;
use crate::config::{Config, Thinking};
use crate::exit::ExitCode;
use crate::provider::select::{self, ModelRef};
use crate::store::lock::Holder;
use crate::store::{Located, Store, listing};

/// The program's name, for messages.
pub const PROGRAM_NAME: &str = "glrs-chat";

/// Chat with a language model; sessions are saved as you go.
#[derive(Debug, Parser)]
#[command(
    name = "glrs-chat",
    version,
    about = "Chat with a language model; sessions are saved as you go",
    long_about = "Chat with a language model in a REPL, or run one turn with -p (or a prompt on a \
        non-terminal stdin) for scripts. Sessions are saved in $XDG_DATA_HOME/glrs/sessions.\n\n\
        The model is --model, else GLRS_MODEL or \"model\" in the config, else the first that works of \
        OPENAI_API_KEY, ANTHROPIC_API_KEY and an Ollama server on localhost.",
    after_help = "In the REPL: /help lists commands; Esc or Ctrl-C stops a turn and keeps what arrived; a \
        line typed during a turn joins it; Ctrl-D leaves.\n\
        Exit status: 0 success, 1 failure, 2 usage error, 4 the session is open in another chat, \
        130 a one-shot turn stopped with Ctrl-C, 143 and 129 a turn stopped by SIGTERM and SIGHUP (what arrived \
        is saved); 1 also when the session could not be saved, with the recovery file that holds what was not."
)]
pub struct Args {
    /// Open a session by id or unique prefix; with no ID, pick one (newest first)
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "", conflicts_with = "continue_")]
    #[arg(add = crate::cli::complete::ids())]
    pub resume: Option<String>,
    /// Open the newest session started in this directory
    #[arg(short = 'c', long = "continue")]
    pub continue_: bool,
    /// Continue the session of this key, or start one (resets: session.reset in the config)
    #[arg(short = 'k', long, value_name = "KEY", conflicts_with_all = ["resume", "continue_"])]
    pub key: Option<String>,
    /// With --key, when a new session starts: begin it as a copy of this one (unless it is over parentForkMaxTokens)
    #[arg(long, value_name = "ID", requires = "key")]
    #[arg(add = crate::cli::complete::ids())]
    pub parent: Option<String>,
    /// The model, as provider/model-id (openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/llama3.2)
    #[arg(short = 'm', long, value_name = "PROVIDER/MODEL", value_parser = ModelRef::check_arg)]
    pub model: Option<String>,
    /// Replace the default system prompt (else "systemPrompt" in the config; a resumed session keeps its own)
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Allow tool calls matching RULE without asking: TOOL or TOOL:GLOB (bash:git *, edit:src/**); repeatable
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// Allow every tool call without asking (permissions.deny still applies)
    #[arg(long)]
    pub allow_all: bool,
    /// Offer the model no tools at all
    #[arg(long)]
    pub no_tools: bool,
    /// Thinking level (Anthropic budgets 4k/12k/32k tokens; OpenAI reasoning_effort); saved with the session
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<Thinking>,
    /// Sandbox for the model's commands: workspace-write (default: writes only in the workspace, no network), read-only, or off; saved with the session
    #[arg(long, value_name = "MODE", value_parser = ["workspace-write", "read-only", "off"])]
    pub sandbox: Option<String>,
    /// Run one turn with this prompt: the reply on stdout, the session id on stderr
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The same as -p PROMPT. Text piped on stdin is attached after the prompt
    #[arg(value_name = "PROMPT", conflicts_with = "prompt")]
    pub text: Option<String>,
    /// With a one-shot turn: print {id, reply, usage} as JSON
    #[arg(long)]
    pub json: bool,
    /// A child agent (SPEC 20) is given its parent session's allowances
    /// (`TOOL` or `TOOL:SUBJECT`, exact), by the parent's `task` tool only.
    #[arg(long = "grant", value_name = "ALLOWANCE", hide = true)]
    pub grant: Vec<String>,
    /// A named agent's tools (globs over tool names), from the `task` tool.
    #[arg(long = "tools", value_name = "GLOB", hide = true)]
    pub tools: Vec<String>,
    /// A pipe a child agent tells its parent of each tool call on (one line
    /// each), from the `task` tool.
    #[arg(long = "progress-fd", value_name = "FD", hide = true)]
    pub progress_fd: Option<i32>,
}

/// Run `glrs-chat` and return its exit code. The process's one runtime
/// (`crate::runtime`) is built here; what the chat leaves running on it
/// gets a bounded moment to stop when it returns.
pub fn run(args: Args) -> Result<ExitCode> {
    // Whether the kernel can sandbox, tried once before the runtime runs
    // (it spawns and waits for a tiny sandboxed command).
    crate::sandbox::support();
    // Taken before the runtime opens descriptors of its own.
    let progress = args.progress_fd.and_then(chat::oneshot::adopt_progress_pipe);
    let runtime = crate::runtime::build()?;
    let code = {
        let _inside = runtime.enter();
        run_on(args, &runtime, progress)
    };
    crate::runtime::shut_down(runtime);
    code
}

fn run_on(args: Args, runtime: &tokio::runtime::Runtime, progress: Option<std::fs::File>) -> Result<ExitCode> {
    let store = Store::from_env()?;
    let config = Config::load_env(&store.paths)?;
    // Before any child starts: no command, hook or tool gets a provider key.
    crate::process::env::withhold(config.withheld_env());
    // Orphans of what the chat starts stay in its tree (`setsid` children).
    crate::process::escaped::adopt_orphans();
    let prompt = checked_arguments(&args, &config)?;
    let mut notices: Vec<String> = Vec::new();
    // Set up as an agent (key, tools, modes, the session's start); a chat
    // from the first line on.
    let (mut agent, resumed) = match open_agent(&args, store, config, runtime, prompt.is_some(), &mut notices)? {
        ControlFlow::Continue(opened) => opened,
        ControlFlow::Break(code) => return Ok(code),
    };
    let _servers = set_up_tools(&mut agent, &args, runtime)?;
    set_modes(&mut agent, &args)?;
    start_session(&mut agent, runtime, notices);
    let mut chat = Chat::from(agent);
    match prompt {
        Some(prompt) => {
            let code = runtime.block_on(chat::oneshot::run(&mut chat, &prompt, args.json, progress));
            let ended = runtime.block_on(chat.agent().hook(crate::hooks::Payload::SessionEnd {}));
            warn_all(ended.problems);
            code
        }
        None => runtime.block_on(chat::repl::run(chat, resumed)),
    }
}

/// Checks what the arguments can be checked for before anything is
/// written, and returns the one-shot prompt, if this is a one-shot turn.
fn checked_arguments(args: &Args, config: &Config) -> Result<Option<String>> {
    let prompt = one_shot_prompt(args.prompt.clone().or(args.text.clone()))?;
    if args.json && prompt.is_none() {
        return Err(UsageError("--json goes with a one-shot turn (-p PROMPT)".into()).into());
    }
    // A key that is no name is a usage error (exit 2), like any bad argument.
    if let Some(key) = &args.key {
        crate::keys::check_key(key).map_err(|e| UsageError(format!("{e:#}")))?;
    }
    // --allow rules are checked before anything is written: a keyed chat
    // saves its new session (and --parent forks one) before the chat is
    // set up, and a typo must not leave an empty session owning the key.
    crate::tools::Permissions::new(&config.permissions.allow, &config.permissions.deny, &args.allow, args.allow_all)
        .map_err(|e| UsageError(format!("{e:#}")))?;
    // A rule must name a tool there is; executable tools are named only
    // when they are loaded, so with some a rule is checked then as well.
    let tools_dir = crate::agent::system::config_home().map(|home| crate::tools::exec::tools_dir(&home));
    let no_executables = tools_dir.and_then(|dir| std::fs::read_dir(dir).ok()).is_none_or(|mut d| d.next().is_none());
    if no_executables {
        check_rule_tools(&args.allow, &crate::agent::standard_tool_names(), config)?;
    }
    // A model named by --model or GLRS_MODEL that no provider serves is a
    // mistake in how glrs was called too (a model in the config is not).
    let named = match &args.model {
        Some(model) => Some(("--model", model.clone())),
        None => std::env::var("GLRS_MODEL").ok().filter(|m| !m.is_empty()).map(|m| ("GLRS_MODEL", m)),
    };
    if let Some((from, name)) = named {
        let model = ModelRef::parse(&name).map_err(|e| UsageError(format!("{from}: {e:#}")))?;
        crate::provider::check_known(config, &model.provider).map_err(|e| UsageError(format!("{from}: {e:#}")))?;
    }
    Ok(prompt)
}

/// `--allow` rules name tools there are: `known`, or an MCP server's in
/// the config (a usage error names the rule and the tools).
fn check_rule_tools(allow: &[String], known: &[String], config: &Config) -> Result<()> {
    let servers: Vec<String> = config.mcp_servers.keys().cloned().collect();
    crate::tools::Permissions::check_flag_tools(allow, known, &servers).map_err(|e| UsageError(format!("{e:#}")).into())
}

/// The agent the arguments name (a key's session, one resumed, picked or
/// continued, or a new one) and whether it was resumed; or the exit code
/// when the picker chose nothing. A keyed session, when new, is saved, so
/// the next chat for the key finds it.
fn open_agent(
    args: &Args,
    store: Store,
    config: Config,
    runtime: &tokio::runtime::Runtime,
    one_shot: bool,
    notices: &mut Vec<String>,
) -> Result<ControlFlow<ExitCode, (Agent, bool)>> {
    let explicit = args.model.as_deref().map(ModelRef::parse).transpose()?;
    // A resumed session keeps the system prompt in its header unless --system is given.
    let system = args.system.clone();
    let cwd = std::env::current_dir().context("cannot read the current directory")?.to_string_lossy().into_owned();
    let config_path = store.paths.config.clone();
    let choose_default = {
        let config = config.clone();
        move || runtime.block_on(select::choose(&config, None, &config_path))
    };
    // Held from the decision until the key names its session: chats started
    // at once for one key get one session (the others find it open, exit 4).
    let key_lock = args.key.as_ref().map(|_| store.key_start_lock()).transpose()?;
    let target = match args.key.as_deref() {
        Some(key) => key_session(&store, &config, key, args.parent.as_deref(), notices)?,
        None => match named_session(&store, args, one_shot, &cwd)? {
            ControlFlow::Continue(target) => target,
            ControlFlow::Break(code) => return Ok(ControlFlow::Break(code)),
        },
    };
    let resumed = target.is_some();
    let mut agent = match target {
        Some(at) => Agent::resume(store, config, &at, Holder::Chat, explicit, choose_default, system)?,
        None => {
            let model = match explicit {
                Some(m) => m,
                None => choose_default()?,
            };
            Agent::start(store, config, model, system, cwd)?
        }
    };
    if let Some(key) = &args.key {
        agent.set_key(key.clone());
        if !resumed {
            // On disk and in keys.json before the next agent for this key looks.
            agent.save()?;
        }
    }
    drop(key_lock);
    Ok(ControlFlow::Continue((agent, resumed)))
}

/// The session `key` goes on with, else `None` for a new one (begun as a
/// copy of `parent` when one is given and fits).
fn key_session(
    store: &Store,
    config: &Config,
    key: &str,
    parent: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<Option<Located>> {
    match crate::keys::decide(store, config, key, &crate::time::local_now())? {
        crate::keys::KeyDecision::Continue(at) => {
            // Not used now, but a typo would otherwise go unseen until
            // the key's next new session (a warning, not a failure: the
            // parent of a script's first session may be gone since).
            if let Some(Err(e)) = parent.map(|p| store.resolve(p)) {
                let parent = parent.unwrap_or_default();
                crate::output::to_stderr(format_args!(
                    "{PROGRAM_NAME}: warning: --parent {parent}: {e} (key {key} goes on with its session; --parent \
                     is used only when the key starts a new one)",
                    e = e.report()
                ));
            }
            Ok(Some(at))
        }
        crate::keys::KeyDecision::New(reason) => {
            if let Some(why) = reason {
                notices.push(format!("new session for key {key}: {why}"));
            }
            match parent {
                Some(parent) => start_from_parent(store, config, key, parent, notices),
                None => Ok(None),
            }
        }
    }
}

/// The session `--resume` or `--continue` names (`None`: a new one), or
/// the exit code when the picker of a bare `--resume` chose nothing.
fn named_session(
    store: &Store,
    args: &Args,
    one_shot: bool,
    cwd: &str,
) -> Result<ControlFlow<ExitCode, Option<Located>>> {
    Ok(ControlFlow::Continue(match (&args.resume, args.continue_) {
        (Some(id), _) if !id.is_empty() => Some(store.resolve(id)?),
        (Some(_), _) => {
            if one_shot || !std::io::stdin().is_terminal() {
                return Err(UsageError("--resume needs an ID in one-shot mode".into()).into());
            }
            match chat::picker::pick_session(store)? {
                chat::picker::Pick::Open(at) => Some(at),
                chat::picker::Pick::Nothing => return Ok(ControlFlow::Break(ExitCode::Success)),
                chat::picker::Pick::Interrupted => return Ok(ControlFlow::Break(ExitCode::Signal(libc::SIGINT))),
            }
        }
        (None, true) => Some(newest_in(store, cwd)?),
        (None, false) => None,
    }))
}

/// The agent's permissions and tools: the arguments' allowances and a
/// parent's grants, the MCP servers (started now, in the background, and
/// stopped when what this returns is dropped: SPEC 15) and the executable
/// tools; or no tools at all.
fn set_up_tools(agent: &mut Agent, args: &Args, runtime: &tokio::runtime::Runtime) -> Result<Option<StopOnExit>> {
    agent.set_permissions(&args.allow, args.allow_all).map_err(|e| crate::cli::UsageError(format!("{e:#}")))?;
    agent.inherit(&args.grant, &args.tools).map_err(|e| crate::cli::UsageError(format!("{e:#}")))?;
    // The first model call waits for the servers still starting.
    let mut stop_servers = None;
    let servers = crate::config::mcp::check_all(&agent.config().mcp_servers)?;
    if !args.no_tools && !servers.is_empty() {
        let started = crate::mcp::Servers::start(servers, std::path::PathBuf::from(agent.cwd()))
            .context("cannot start the MCP servers")?;
        agent.attach_servers(started.clone());
        stop_servers = Some(StopOnExit(started));
    }
    if args.no_tools {
        agent.no_tools();
    } else if let Some(home) = crate::agent::system::config_home() {
        // SPEC 15: executable tools, described in parallel; a broken one is
        // named once and left out.
        let dir = crate::tools::exec::tools_dir(&home);
        let (tools, problems) = runtime.block_on(crate::tools::exec::load(&dir, &agent.tool_names()));
        for tool in tools {
            agent.add_tool(tool);
        }
        warn_all(problems);
    }
    check_rule_tools(&args.allow, &agent.tool_names(), agent.config())?;
    Ok(stop_servers)
}

/// `--thinking` and `--sandbox`; a sandbox the kernel cannot give is said.
fn set_modes(agent: &mut Agent, args: &Args) -> Result<()> {
    if let Some(level) = args.thinking {
        agent.set_thinking(level);
    }
    if let Some(mode) = &args.sandbox {
        agent.set_sandbox_mode(crate::sandbox::Mode::parse(mode).map_err(crate::cli::UsageError)?);
    }
    let sandbox = agent.sandbox();
    if let (crate::sandbox::Support::Unavailable(why), false) =
        (sandbox.support(), sandbox.mode() == crate::sandbox::Mode::Off)
    {
        eprintln!("{PROGRAM_NAME}: sandbox unavailable: {why}; every bash call asks");
    }
    Ok(())
}

/// What happens once the agent is set up, before its first turn: the
/// maintenance run by itself (SPEC 16), the notices (said and recorded)
/// and the `SessionStart` hooks.
fn start_session(agent: &mut Agent, runtime: &tokio::runtime::Runtime, notices: Vec<String>) {
    // With this agent's session already open (so it is never removed).
    match crate::maintenance::auto::at_chat_start(agent.store(), agent.config(), std::time::SystemTime::now()) {
        Ok(Some(line)) => crate::output::to_stderr(format_args!("{PROGRAM_NAME}: {line}")),
        Ok(None) => {}
        Err(e) => crate::output::to_stderr(format_args!("{PROGRAM_NAME}: warning: maintenance did not run: {e:#}")),
    }
    // Said once, at the start: a configured value the model's window cannot honour.
    let model = agent.model().full();
    warn_all(agent.trigger().misfits(agent.config(), &model));
    for notice in notices {
        crate::output::to_stderr(format_args!("{PROGRAM_NAME}: {notice}"));
        agent.record(crate::store::Entry::Notice { at: crate::time::now(), text: notice });
    }
    let started = runtime.block_on(agent.hook(crate::hooks::Payload::SessionStart {}));
    warn_all(started.problems);
}

/// Each problem as a warning on stderr.
fn warn_all<P: std::fmt::Display>(problems: impl IntoIterator<Item = P>) {
    for problem in problems {
        crate::output::to_stderr(format_args!("{PROGRAM_NAME}: warning: {problem}"));
    }
}

/// Stops the chat's MCP servers when the chat ends, however it ends.
struct StopOnExit(std::sync::Arc<crate::mcp::Servers>);

impl Drop for StopOnExit {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The message of a one-shot turn, if this is one: the prompt argument,
/// with a non-terminal stdin's text attached after it (SPEC 11), or stdin's
/// text alone. An empty prompt is a usage error: it would make a session
/// holding nothing.
fn one_shot_prompt(argument: Option<String>) -> Result<Option<String>> {
    if argument.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(UsageError("the prompt is empty (-p \"\" sends nothing; give the text to send)".into()).into());
    }
    if std::io::stdin().is_terminal() {
        return Ok(argument);
    }
    let mut piped = String::new();
    std::io::stdin().read_to_string(&mut piped).context("cannot read stdin")?;
    Ok(match argument {
        Some(prompt) if piped.trim().is_empty() => Some(prompt),
        Some(prompt) => Some(format!("{prompt}\n\n{}", piped.trim_end())),
        None if piped.trim().is_empty() => {
            return Err(UsageError(
                "no prompt: stdin was empty (give one with -p, or run in a terminal for the REPL)".into(),
            )
            .into());
        }
        None => Some(piped),
    })
}

/// A new keyed session that begins as a copy of `parent`, unless the parent
/// is over `parentForkMaxTokens` (then `None`: start fresh, and say why).
fn start_from_parent(
    store: &Store,
    config: &Config,
    key: &str,
    parent: &str,
    notices: &mut Vec<String>,
) -> Result<Option<Located>> {
    let at = store.resolve(parent)?;
    let tokens = store.read_lines(&at)?.get_u64("contextTokens").unwrap_or(0);
    let limit = config.parent_fork_max_tokens.unwrap_or(100_000);
    if limit > 0 && tokens > limit {
        notices.push(format!(
            "parent {} not copied: its {tokens} context tokens are over parentForkMaxTokens ({limit}); starting fresh",
            at.id
        ));
        return Ok(None);
    }
    let forked = crate::fork::fork(store, &at, None, Some(key))?;
    store.set_key(key, &forked.id)?;
    notices.push(format!("new session for key {key} starts as a copy of {}", at.id));
    Ok(Some(store.resolve(forked.id.as_str())?))
}

/// The newest session whose cwd is `cwd`.
///
/// A session file that cannot be read has no cwd to tell: if it changed
/// after the session found (its `updatedAt` is no later than its time), it
/// may be the newest here, so it is named in a warning, and the newest
/// readable one is resumed all the same (one bad session never hides the
/// others). Older unreadable files are left to `glrs-sessions ls`; a folder
/// that could not be read is always named.
fn newest_in(store: &Store, cwd: &str) -> Result<Located> {
    let listing = listing::list(store)?;
    let found = listing.sessions.iter().find(|s| s.cwd == cwd);
    warn_all(&listing.problems);
    let since = found.as_ref().map_or(i64::MIN, |s| s.updated_ms);
    for bad in listing.unreadable.iter().filter(|u| u.modified_ms >= since) {
        match &found {
            Some(s) => crate::output::to_stderr(format_args!(
                "{PROGRAM_NAME}: warning: {} (changed after {}, which is resumed: it may be a newer session here)",
                bad.problem, s.id
            )),
            None => crate::output::to_stderr(format_args!(
                "{PROGRAM_NAME}: warning: {} (it may be a session started here)",
                bad.problem
            )),
        }
    }
    let Some(newest) = found else {
        bail!("no session was started in {cwd}: nothing to continue (glrs-sessions ls lists them all)")
    };
    let at = store.resolve(&newest.id)?;
    // Open in another program: said with the session, the fork command
    // (from the error's advice) and the next session here (issue 24).
    if let Ok(Some((pid, by))) = store.open_holder_of(&at.id) {
        let next = listing
            .sessions
            .iter()
            .filter(|s| s.cwd == cwd && s.id != newest.id)
            .find(|s| crate::SessionId::parse(&s.id).is_ok_and(|id| matches!(store.open_holder(&id), Ok(None))));
        let busy = anyhow::Error::new(crate::error::StoreError::Busy { id: newest.id.clone(), pid, by });
        return Err(match next {
            Some(next) => busy.context(format!(
                "the newest session in {cwd} is open elsewhere (to continue the one before it: glrs-chat --resume {})",
                next.id
            )),
            None => busy.context(format!("the newest session in {cwd} is open elsewhere")),
        });
    }
    Ok(at)
}
