//! The REPL's slash commands (SPEC 4): one enum, each with its help text,
//! so `/help`, completion, the manual page and the dispatch cannot drift
//! apart, and no command is a string compared in one place only.

use anyhow::Result;

use super::Chat;
use crate::config::Thinking;

/// A slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `/help`.
    Help,
    /// `/status`.
    Status,
    /// `/sessions`.
    Sessions,
    /// `/resume [ID]`.
    Resume,
    /// `/model [NAME]`.
    Model,
    /// `/thinking [LEVEL]`.
    Thinking,
    /// `/sandbox [MODE]`.
    Sandbox,
    /// `/new`.
    New,
    /// `/reset` (the same as `/new`).
    Reset,
    /// `/fork [N]`.
    Fork,
    /// `/rewind`.
    Rewind,
    /// `/compact [instruction]` (run by the REPL itself, in the background).
    Compact,
    /// `/clear`.
    Clear,
    /// `/artifacts`.
    Artifacts,
    /// `/export [FILE]`.
    Export,
    /// `/mcp`.
    Mcp,
    /// `/quit`.
    Quit,
    /// `/exit` (the same as `/quit`; not listed).
    Exit,
}

/// What the REPL does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Read the next line.
    Continue,
    /// Leave.
    Quit,
    /// Put this text in the input line (`/rewind`: the message gone back to).
    Input(String),
}

impl Command {
    /// Every command in the order `/help` lists them (`/exit` is not listed).
    pub const LISTED: [Command; 17] = [
        Command::Help,
        Command::Status,
        Command::Sessions,
        Command::Resume,
        Command::Model,
        Command::Thinking,
        Command::Sandbox,
        Command::New,
        Command::Reset,
        Command::Fork,
        Command::Rewind,
        Command::Compact,
        Command::Clear,
        Command::Artifacts,
        Command::Export,
        Command::Mcp,
        Command::Quit,
    ];

    /// The command as typed: `/status`.
    pub fn name(self) -> &'static str {
        match self {
            Command::Help => "/help",
            Command::Status => "/status",
            Command::Sessions => "/sessions",
            Command::Resume => "/resume",
            Command::Model => "/model",
            Command::Thinking => "/thinking",
            Command::Sandbox => "/sandbox",
            Command::New => "/new",
            Command::Reset => "/reset",
            Command::Fork => "/fork",
            Command::Rewind => "/rewind",
            Command::Compact => "/compact",
            Command::Clear => "/clear",
            Command::Artifacts => "/artifacts",
            Command::Export => "/export",
            Command::Mcp => "/mcp",
            Command::Quit => "/quit",
            Command::Exit => "/exit",
        }
    }

    /// What `/help` says of it (its argument first, when it takes one).
    pub fn help(self) -> &'static str {
        match self {
            Command::Help => "this list",
            Command::Status => "this session: model, window, context, usage, artifacts (glrs-sessions status)",
            Command::Sessions => "recent sessions (glrs-sessions ls)",
            Command::Resume => "[ID] open another session (no ID: pick one)",
            Command::Model => "[provider/model] show or change the model",
            Command::Thinking => "[off|low|medium|high] show or set the thinking level",
            Command::Sandbox => "[workspace-write|read-only|off] show or set the sandbox of the model's commands",
            Command::New => "start a fresh session (for this key, if any); this one stays",
            Command::Reset => "the same as /new",
            Command::Fork => "[N] copy this session (entries 1..N) to a new id (glrs-fork)",
            Command::Rewind => "go back to before a message: the files, the conversation (in a fork), or both",
            Command::Compact => "[instruction] compact now, steered by the instruction (glrs-compact)",
            Command::Clear => "the model starts from nothing; the transcript stays in the session",
            Command::Artifacts => "this session's compaction artifacts (glrs-artifacts ls)",
            Command::Export => "[FILE] write the transcript to FILE (.md, .html or .jsonl; default ID.md)",
            Command::Mcp => "the MCP servers (mcpServers in config.json), their state and tools",
            Command::Quit | Command::Exit => "leave (Ctrl-D too)",
        }
    }

    /// The command a typed word names (`/status`), if any.
    pub fn named(word: &str) -> Option<Command> {
        Command::LISTED.into_iter().chain([Command::Exit]).find(|c| c.name() == word)
    }

    /// A line's command word and its argument (trimmed): `/export a.md` →
    /// (`/export`, `a.md`).
    pub fn split(line: &str) -> (&str, &str) {
        line.split_once(char::is_whitespace).map_or((line, ""), |(c, a)| (c, a.trim()))
    }
}

/// Run the slash command `line` (a line starting with `/`).
pub fn run(chat: &mut Chat, line: &str, color: bool) -> Result<Action> {
    let (word, arg) = Command::split(line);
    let Some(command) = Command::named(word) else {
        say!("unknown command {word}: /help lists them");
        return Ok(Action::Continue);
    };
    match command {
        Command::Quit | Command::Exit => return Ok(Action::Quit),
        Command::Help => help(),
        Command::Status => status(chat)?,
        Command::Clear => {
            if let Some(problem) = chat.clear() {
                warn!("glrs-chat: {problem}");
            }
            say!("(cleared: the model starts from nothing; the transcript stays in the session)");
        }
        Command::Mcp => mcp_listing(chat, color),
        Command::Artifacts => {
            crate::programs::run_program("glrs-artifacts", &["ls", chat.agent().id().as_str()])?;
        }
        Command::Export => export(chat, arg)?,
        Command::Sessions => {
            crate::programs::run_program("glrs-sessions", &["ls", "-n", "20"])?;
        }
        Command::Model => model(chat, arg)?,
        Command::Sandbox => {
            if !arg.is_empty() {
                chat.set_sandbox_mode(crate::sandbox::Mode::parse(arg).map_err(anyhow::Error::msg)?);
            }
            say!("sandbox {}", chat.agent().sandbox().describe());
        }
        Command::Thinking => thinking(chat, arg)?,
        Command::Resume => resume(chat, arg, color)?,
        Command::New | Command::Reset => new_session(chat)?,
        Command::Rewind => return Ok(super::rewind::run(chat)?.map_or(Action::Continue, Action::Input)),
        Command::Fork => fork(chat, arg)?,
        // The REPL runs it before it gets here (in the background).
        Command::Compact => say!("/compact runs from the prompt"),
    }
    Ok(Action::Continue)
}

fn help() {
    for command in Command::LISTED {
        say!("  {:<10} {}", command.name(), command.help());
    }
    say!("  Esc or Ctrl-C stops a turn; a line typed during a turn joins it; a line ending in \\ continues.");
}

fn status(chat: &Chat) -> Result<()> {
    let trigger = chat.agent().trigger();
    let line = trigger.threshold().map_or("off".to_string(), |t| format!("{t} tokens"));
    say!(
        "model {} · thinking {} · window {} tokens · trigger {line} · context {} tokens ({}%) · compactions {} · last memory flush: {}",
        model_shown(chat),
        chat.agent().thinking(),
        trigger.window,
        chat.agent().context_tokens(),
        chat.agent().fill_percent(),
        chat.agent().compactions(),
        chat.agent().flushed_cycle().map_or("none this session".to_string(), |c| format!("after compaction {c}"))
    );
    say!("{}", chat.agent().pruning_status());
    say!("sandbox {}", chat.agent().sandbox().describe());
    if chat.agent().is_saved() {
        crate::programs::run_program("glrs-sessions", &["status", chat.agent().id().as_str()])?;
    } else {
        say!("session {} has nothing saved yet", chat.agent().id());
    }
    Ok(())
}

fn export(chat: &Chat, arg: &str) -> Result<()> {
    if !chat.agent().is_saved() {
        say!("nothing to export yet: session {} has nothing saved", chat.agent().id());
        return Ok(());
    }
    let file = if arg.is_empty() { format!("{}.md", chat.agent().id()) } else { arg.to_string() };
    let status = crate::programs::run_program("glrs-sessions", &["export", chat.agent().id().as_str(), "-o", &file])?;
    if status.success() {
        say!("exported to {file}");
    }
    Ok(())
}

fn model(chat: &mut Chat, arg: &str) -> Result<()> {
    if !arg.is_empty() {
        chat.set_model(crate::provider::select::ModelRef::parse(arg)?)?;
        say!("model {} for the next turns", model_shown(chat));
        return Ok(());
    }
    say!("{} (window {} tokens)", model_shown(chat), chat.agent().window());
    let mut models = crate::provider::select::configured_models(chat.agent().config());
    if !models.contains(&chat.agent().model().full()) {
        models.push(chat.agent().model().full());
        models.sort();
    }
    say!("configured models (/model NAME switches; Tab completes):");
    for m in models {
        let mark = if m == chat.agent().model().full() { "*" } else { " " };
        say!("  {mark} {}", crate::output::terminal_safe(&m));
    }
    Ok(())
}

/// The model's id on the terminal: an imported session's may hold escapes.
fn model_shown(chat: &Chat) -> String {
    crate::output::terminal_safe(&chat.agent().model().full()).into_owned()
}

fn thinking(chat: &mut Chat, arg: &str) -> Result<()> {
    if arg.is_empty() {
        say!("thinking {} ({})", chat.agent().thinking(), Thinking::choices());
    } else {
        chat.set_thinking(Thinking::parse(arg).map_err(anyhow::Error::msg)?);
        say!("thinking {} for the next turns", chat.agent().thinking());
    }
    Ok(())
}

fn resume(chat: &mut Chat, arg: &str, color: bool) -> Result<()> {
    let at = if arg.is_empty() {
        match super::picker::pick_session(chat.agent().store())? {
            super::picker::Pick::Open(at) => at,
            _ => return Ok(()),
        }
    } else {
        chat.agent().store().resolve(arg)?
    };
    if &at.id == chat.agent().id() {
        say!("session {} is the one open", chat.agent().id());
        return Ok(());
    }
    let current = chat.agent().model().clone();
    // The other session keeps the system prompt it was started with.
    let (store, config) = (chat.agent().store().clone(), chat.agent().config().clone());
    let mut next =
        crate::agent::Agent::resume(store, config, &at, crate::store::lock::Holder::Chat, None, || Ok(current), None)?;
    chat.agent().carry_tools_to(&mut next);
    let next = Chat::from(next);
    switch_to(chat, next);
    say!("session {} · {}", chat.agent().id(), model_shown(chat));
    super::history::show(chat, color);
    Ok(())
}

fn new_session(chat: &mut Chat) -> Result<()> {
    let next = Chat::from(chat.agent().successor()?);
    switch_to(chat, next);
    match &chat.agent().key() {
        Some(key) => say!("new session {} for key {key}", chat.agent().id()),
        None => say!("new session {}", chat.agent().id()),
    }
    Ok(())
}

/// Leave this session (saying how to come back to it) for `next`.
fn switch_to(chat: &mut Chat, next: Chat) {
    super::repl::leave_loudly(chat);
    if chat.agent().is_saved() {
        say!("left {} (glrs-chat --resume {})", chat.agent().id(), chat.agent().id());
    }
    *chat = next;
}

fn fork(chat: &Chat, arg: &str) -> Result<()> {
    if !chat.agent().is_saved() {
        say!("nothing to fork yet: session {} has nothing saved", chat.agent().id());
        return Ok(());
    }
    let mut args = vec![chat.agent().id().to_string()];
    if !arg.is_empty() {
        args.push(arg.to_string());
    }
    let out = std::process::Command::new(crate::programs::program_path("glrs-fork")).args(&args).output()?;
    if out.status.success() {
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        say!("forked to {id}: /resume {id} opens it");
    } else {
        crate::output::to_stderr(String::from_utf8_lossy(&out.stderr).trim_end());
    }
    Ok(())
}

/// `/mcp`: each server, its state, and its tools (SPEC 15).
fn mcp_listing(chat: &Chat, color: bool) {
    // Ready: awaited before the command runs.
    let listing = chat.agent().tools().servers().map(|s| s.listing()).unwrap_or_default();
    if listing.is_empty() {
        match chat.agent().config().mcp_servers.is_empty() {
            true => say!("no MCP servers: add them under \"mcpServers\" in config.json (GUIDE.md shows how)"),
            false => say!("no MCP servers were started: --no-tools starts none"),
        }
        return;
    }
    let style = crate::output::Style::on_terminal(color);
    // What a server says (its descriptions, its stderr) is shown, not obeyed.
    let safe = |t: &str| crate::output::terminal_safe(t).into_owned();
    for server in listing {
        let count = if server.tools.is_empty() { String::new() } else { format!(" · {} tools", server.tools.len()) };
        say!("{}  {}{count}", server.name, safe(&server.state));
        // Whole: what the model reads of a tool is for the user to see.
        for (tool, description) in server.tools {
            let mut lines = description.lines();
            say!("  {tool}  {}", style.dim(&safe(lines.next().unwrap_or(""))));
            for line in lines {
                say!("      {}", style.dim(&safe(line)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_named_by_its_name_and_words_split_from_arguments() {
        for command in Command::LISTED.into_iter().chain([Command::Exit]) {
            assert_eq!(Command::named(command.name()), Some(command));
            assert!(!command.help().is_empty());
        }
        let names: Vec<&str> = Command::LISTED.map(Command::name).to_vec();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique, "each listed once");
        assert!(!names.contains(&"/exit"), "/exit is not listed");
        assert_eq!(Command::named("/stat"), None, "no prefixes");
        assert_eq!(Command::named("/Status"), None);
        assert_eq!(Command::split("/export  notes.md "), ("/export", "notes.md"));
        assert_eq!(Command::split("/status"), ("/status", ""));
    }

    #[test]
    fn the_help_of_thinking_names_every_level() {
        let levels: Vec<String> =
            <Thinking as clap::ValueEnum>::value_variants().iter().map(Thinking::to_string).collect();
        assert!(
            Command::Thinking.help().starts_with(&format!("[{}] ", levels.join("|"))),
            "{}",
            Command::Thinking.help()
        );
    }
}
