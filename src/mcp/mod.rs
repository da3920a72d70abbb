//! MCP servers (SPEC 15): `mcpServers.<name>` in the config, reached with
//! the official Rust SDK (`rmcp`) over stdio or streamable HTTP; their
//! tools go into the one registry as `mcp__<server>__<tool>`, asked about
//! like every extension tool.
//!
//! [`Servers::start`] starts them all at once, as tasks on the process's
//! runtime ([`crate::runtime`]), so the chat's start-up does not wait for them: the first model request
//! does (the registry's `settle`), and only as long as one is still
//! starting, each bounded by its `startupTimeoutSec`. A server that says
//! its tools changed has them listed again ([`changes`]), and the next
//! model request offers the new list. A server that fails to start, or
//! dies later, is reported once ([`Servers::news`]) and left out; calls
//! to a dead server's tools are error results. A streamable HTTP server
//! has no process to watch: it is found dead when a call or a listing
//! cannot reach it. [`Servers::stop`]
//! (also on drop)
//! ends every server with everything it started: each stdio server runs in
//! a process group of its own.
//!
//! Programs other than `glrs-chat` never call [`Servers::start`].

mod changes;
mod connect;
mod stdio;
mod tool;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::Peer;
use rmcp::service::{RoleClient, RunningServiceCancellationToken};

pub use crate::config::mcp::{CALL_TIMEOUT, START_TIMEOUT, Server, ServerConfig, Transport};
use crate::provider::ToolSpec;
pub use tool::{McpTool, result_text, tool_name};

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Being started.
    Starting,
    /// Started; its tools are offered.
    Running,
    /// It did not start, and why.
    Failed(String),
    /// It was running and is not any more, and why.
    Stopped(String),
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            State::Starting => f.write_str("starting"),
            State::Running => f.write_str("running"),
            State::Failed(why) => write!(f, "failed: {why}"),
            State::Stopped(why) => write!(f, "stopped: {why}"),
        }
    }
}

/// A server as `/mcp` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its name under `mcpServers`.
    pub name: String,
    /// Where it is.
    pub state: State,
    /// Its tools as offered: name and description.
    pub tools: Vec<(String, String)>,
}

/// One tool of a server: its own name and what the model is offered.
#[derive(Debug, Clone)]
struct ServerTool {
    name: String,
    spec: ToolSpec,
}

struct Entry {
    server: Server,
    state: State,
    tools: Vec<ServerTool>,
    peer: Option<Peer<RoleClient>>,
    cancel: Option<RunningServiceCancellationToken>,
    group: Arc<Mutex<Option<i32>>>,
    tail: connect::Tail,
    refresh: Arc<changes::Refresh>,
    /// Counts the server's messages too long for the SDK (stdio only).
    oversized: stdio::Oversized,
    /// Tools left out because their names clash, already reported.
    left_out: Vec<String>,
}

/// What the servers' tasks and the chat share.
struct Shared {
    entries: Mutex<Vec<Entry>>,
    news: Mutex<Vec<String>>,
    changed: tokio::sync::watch::Sender<u64>,
    stopping: AtomicBool,
}

/// The MCP servers of one chat.
pub struct Servers {
    shared: Arc<Shared>,
    /// The servers' tasks on the process's runtime, ended by [`Servers::stop`].
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl Shared {
    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn tell(&self, line: String) {
        if let Ok(mut news) = self.news.lock() {
            news.push(line);
        }
    }

    fn set(&self, index: usize, update: impl FnOnce(&mut Entry)) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(entry) = entries.get_mut(index)
        {
            update(entry);
        }
        self.bump();
    }

    /// A server did not start: report it once and stop what it left.
    fn failed(&self, index: usize, why: String, tail: &connect::Tail, group: &Mutex<Option<i32>>) {
        let why = with_stderr(why, tail);
        let name = self.entries.lock().ok().and_then(|e| e.get(index).map(|e| e.server.name.clone()));
        // Told before the state changes: whoever sees no server starting
        // any more ([`Servers::ready`]) finds every failure in the news.
        if let Some(name) = name
            && !self.stopping.load(Ordering::SeqCst)
        {
            self.tell(format!("MCP server {name} failed to start: {why}"));
        }
        self.set(index, |e| e.state = State::Failed(why));
        stop_group(group);
    }

    /// A running server's connection ended.
    fn ended(&self, index: usize, why: String, tail: &connect::Tail, group: &Mutex<Option<i32>>) {
        let stopping = self.stopping.load(Ordering::SeqCst);
        let why = if stopping { "stopped with the chat".to_string() } else { with_stderr(why, tail) };
        let mut name = String::new();
        let mut told = false;
        self.set(index, |e| {
            name = e.server.name.clone();
            // Found dead already ([`Shared::lost`]), and reported then.
            told = matches!(e.state, State::Stopped(_));
            if !told {
                e.state = State::Stopped(why.clone());
            }
            e.peer = None;
            e.cancel = None;
        });
        if !stopping && !told {
            self.tell(format!("MCP server {name} stopped: {why}; calls to its tools are errors now"));
        }
        stop_group(group);
    }

    /// A running server was found unreachable (a call or a listing failed
    /// on its transport): stop it, and report it once.
    fn lost(&self, index: usize, why: String) {
        let mut name = None;
        self.set(index, |e| {
            if e.state == State::Running {
                name = Some(e.server.name.clone());
                e.state = State::Stopped(why.clone());
                e.peer = None;
                if let Some(cancel) = e.cancel.take() {
                    cancel.cancel();
                }
            }
        });
        if let Some(name) = name
            && !self.stopping.load(Ordering::SeqCst)
        {
            self.tell(format!("MCP server {name} stopped: {why}; calls to its tools are errors now"));
        }
    }

    /// `listed` as offered, each tool once: a name that clashes once
    /// shortened is left out, and reported the first time.
    fn offer(&self, index: usize, listed: Vec<rmcp::model::Tool>) -> Vec<ServerTool> {
        let (server, mut reported) = match self.entries.lock() {
            Ok(entries) => match entries.get(index) {
                Some(e) => (e.server.name.clone(), e.left_out.clone()),
                None => return Vec::new(),
            },
            Err(_) => return Vec::new(),
        };
        let mut tools = Vec::new();
        let mut taken: Vec<String> = Vec::new();
        for t in listed {
            let spec = tool::spec(&server, &t);
            if taken.contains(&spec.name) {
                if !reported.contains(&t.name.to_string()) {
                    reported.push(t.name.to_string());
                    self.tell(format!(
                        "MCP server {server}: tool {:?} left out: its name is the same as another's once shortened to {}",
                        t.name, spec.name
                    ));
                }
                continue;
            }
            taken.push(spec.name.clone());
            tools.push(ServerTool { name: t.name.to_string(), spec });
        }
        self.set(index, |e| e.left_out = reported);
        tools
    }
}

fn with_stderr(why: String, tail: &connect::Tail) -> String {
    match tail.last() {
        Some(line) => format!("{why} (its stderr: {line})"),
        None => why,
    }
}

fn stop_group(group: &Mutex<Option<i32>>) {
    let taken = group.lock().ok().and_then(|mut g| g.take());
    if let Some(group) = taken {
        crate::process::servers::kill(group);
    }
}

/// Start one server and watch it until it ends.
async fn run_server(shared: Arc<Shared>, index: usize, server: Server, cwd: PathBuf) {
    let (tail, group, refresh, oversized) = match shared.entries.lock() {
        Ok(entries) => match entries.get(index) {
            Some(e) => (e.tail.clone(), e.group.clone(), e.refresh.clone(), e.oversized.clone()),
            None => return,
        },
        Err(_) => return,
    };
    // A list-changed notification during start-up is handled once this
    // first listing is in place.
    let first = refresh.one_at_a_time.lock().await;
    let listener = changes::Listener { shared: shared.clone(), index };
    let started = tokio::time::timeout(server.startup_timeout, async {
        let client = connect::connect(&server, &cwd, &tail, &group, listener, refresh.clone(), &oversized).await?;
        let has_tools = client.peer_info().is_none_or(|info| info.capabilities.tools.is_some());
        let tools = if has_tools {
            client.list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?
        } else {
            Vec::new()
        };
        Ok::<_, String>((client, tools))
    })
    .await;
    let (client, listed) = match started {
        Ok(Ok(started)) => started,
        Ok(Err(why)) => {
            tail.settle().await;
            return shared.failed(index, why, &tail, &group);
        }
        Err(_) => {
            let why = format!(
                "it did not start within {} s (mcpServers.{}.startupTimeoutSec)",
                server.startup_timeout.as_secs_f64(),
                server.name
            );
            return shared.failed(index, why, &tail, &group);
        }
    };
    let tools = shared.offer(index, listed);
    let peer = client.peer().clone();
    let cancel = client.cancellation_token();
    shared.set(index, |e| {
        e.state = State::Running;
        e.tools = tools;
        e.peer = Some(peer);
        e.cancel = Some(cancel);
    });
    drop(first);
    // What it started outside its group while starting.
    crate::process::escaped::sweep();
    if shared.stopping.load(Ordering::SeqCst) {
        let _ = client.cancel().await;
        return shared.ended(index, String::new(), &tail, &group);
    }
    let why = match client.waiting().await {
        Ok(rmcp::service::QuitReason::Cancelled) => "the connection was closed".to_string(),
        Ok(rmcp::service::QuitReason::Closed) => "the server closed the connection (it exited)".to_string(),
        Ok(rmcp::service::QuitReason::JoinError(e)) | Err(e) => format!("its connection failed: {e}"),
        Ok(other) => format!("its connection ended ({other:?})"),
    };
    tail.settle().await;
    shared.ended(index, why, &tail, &group);
}

impl Servers {
    /// Start `servers` in the background, each in `cwd` unless it names
    /// its own. Returns at once.
    pub fn start(servers: Vec<Server>, cwd: PathBuf) -> std::io::Result<Arc<Servers>> {
        let entries = servers
            .iter()
            .map(|server| Entry {
                server: server.clone(),
                state: State::Starting,
                tools: Vec::new(),
                peer: None,
                cancel: None,
                group: Arc::default(),
                tail: connect::Tail::default(),
                refresh: Arc::default(),
                oversized: stdio::Oversized::default(),
                left_out: Vec::new(),
            })
            .collect();
        let shared = Arc::new(Shared {
            entries: Mutex::new(entries),
            news: Mutex::default(),
            changed: tokio::sync::watch::Sender::new(0),
            stopping: AtomicBool::new(false),
        });
        let this = Arc::new(Servers { shared: shared.clone(), tasks: Mutex::default() });
        if servers.is_empty() {
            return Ok(this);
        }
        // Tasks on the process's one runtime (crate::runtime), which has
        // worker threads: they run while the chat waits at its prompt.
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let tasks = servers.into_iter().enumerate().map(|(index, server)| {
            runtime.spawn(run_server(shared.clone(), index, server, cwd.clone())).abort_handle()
        });
        if let Ok(mut running) = this.tasks.lock() {
            running.extend(tasks);
        }
        Ok(this)
    }

    /// No servers at all.
    pub fn none() -> Arc<Servers> {
        Arc::new(Servers {
            shared: Arc::new(Shared {
                entries: Mutex::default(),
                news: Mutex::default(),
                changed: tokio::sync::watch::Sender::new(0),
                stopping: AtomicBool::new(false),
            }),
            tasks: Mutex::default(),
        })
    }

    /// What each server's refreshes have reached: a wait that begins now
    /// waits for these, not for changes announced later.
    fn heard_now(&self) -> Vec<u64> {
        self.shared.entries.lock().map(|e| e.iter().map(|e| e.refresh.heard()).collect()).unwrap_or_default()
    }

    /// A server is still starting, or listing the changes it had announced
    /// when the wait began (`targets`, from [`Servers::heard_now`]).
    fn busy(&self, targets: &[u64]) -> bool {
        self.shared.entries.lock().is_ok_and(|e| {
            e.iter().enumerate().any(|(i, e)| {
                let pending = targets.get(i).is_some_and(|t| e.refresh.pending_until(*t));
                e.state == State::Starting || (e.state == State::Running && pending)
            })
        })
    }

    /// How long [`Servers::ready`] may wait: the longest start-up (a
    /// listing is bounded by it too), and a little.
    fn ready_bound(&self) -> Duration {
        let longest = self.shared.entries.lock().ok().and_then(|e| e.iter().map(|e| e.server.startup_timeout).max());
        longest.unwrap_or(START_TIMEOUT) + Duration::from_secs(5)
    }

    /// Wait until no server is still starting or listing its changed tools
    /// (each bounded by its `startupTimeoutSec`).
    pub async fn ready(&self) {
        let mut changed = self.shared.changed.subscribe();
        let targets = self.heard_now();
        let wait = async {
            while self.busy(&targets) {
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(self.ready_bound(), wait).await.is_err() {
            self.give_up_refreshes();
        }
    }

    /// A refresh outlived every bound (its handler never ran): stop
    /// waiting for it, so later requests do not wait again.
    fn give_up_refreshes(&self) {
        if let Ok(entries) = self.shared.entries.lock() {
            for e in entries.iter() {
                e.refresh.caught_up(e.refresh.heard());
            }
        }
    }

    /// The tools of the running servers (and of servers that stopped since:
    /// calls to those are error results).
    pub fn tools(&self) -> Vec<Arc<dyn crate::tools::Tool>> {
        let Ok(entries) = self.shared.entries.lock() else { return Vec::new() };
        let mut out: Vec<Arc<dyn crate::tools::Tool>> = Vec::new();
        for entry in entries.iter() {
            for t in &entry.tools {
                out.push(Arc::new(McpTool::new(self.clone_handle(), &entry.server.name, &t.name, t.spec.clone())));
            }
        }
        out
    }

    /// Whether `name` is the name of one of these servers' tools (offered
    /// now or not).
    pub fn owns(&self, name: &str) -> bool {
        let Ok(entries) = self.shared.entries.lock() else { return false };
        entries.iter().any(|e| name.starts_with(&tool_name(&e.server.name, "")))
    }

    fn clone_handle(&self) -> Handle {
        Handle(self.shared.clone())
    }

    /// What happened since the last call, each thing once: servers that
    /// failed to start or stopped.
    pub fn news(&self) -> Vec<String> {
        self.shared.news.lock().map(|mut n| std::mem::take(&mut *n)).unwrap_or_default()
    }

    /// Each server, its state and its tools, for `/mcp`.
    pub fn listing(&self) -> Vec<Listed> {
        let Ok(entries) = self.shared.entries.lock() else { return Vec::new() };
        entries
            .iter()
            .map(|e| Listed {
                name: e.server.name.clone(),
                state: e.state.clone(),
                tools: e.tools.iter().map(|t| (t.spec.name.clone(), t.spec.description.clone())).collect(),
            })
            .collect()
    }

    /// Stop every server and everything it started; waits at most about a
    /// second. Safe to call more than once.
    pub fn stop(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let mut groups = Vec::new();
        if let Ok(mut entries) = self.shared.entries.lock() {
            for entry in entries.iter_mut() {
                if let Some(cancel) = entry.cancel.take() {
                    cancel.cancel();
                }
                entry.peer = None;
                if let Some(g) = entry.group.lock().ok().and_then(|mut g| g.take()) {
                    groups.push(g);
                }
                if matches!(entry.state, State::Running | State::Starting) {
                    entry.state = State::Stopped("stopped with the chat".into());
                }
            }
        }
        crate::process::servers::stop(&groups);
        for task in self.tasks.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default() {
            task.abort();
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What an [`McpTool`] calls through.
#[derive(Clone)]
pub struct Handle(Arc<Shared>);

impl Handle {
    /// The peer of `server` if it is running, else why not.
    fn peer(&self, server: &str) -> Result<Peer<RoleClient>, String> {
        let entries = self.0.entries.lock().map_err(|_| "the MCP servers' state is unreadable".to_string())?;
        let Some(entry) = entries.iter().find(|e| e.server.name == server) else {
            return Err(format!("there is no MCP server {server}"));
        };
        match (&entry.state, &entry.peer) {
            (State::Running, Some(peer)) => Ok(peer.clone()),
            (state, _) => Err(format!("the MCP server {server} is not running ({state})")),
        }
    }

    /// Whether `server` is still running.
    fn running(&self, server: &str) -> bool {
        self.0.entries.lock().is_ok_and(|e| e.iter().any(|e| e.server.name == server && e.state == State::Running))
    }

    /// What sees `server`'s next message past the SDK's line limit.
    fn oversized(&self, server: &str) -> Option<tokio::sync::watch::Receiver<u64>> {
        let entries = self.0.entries.lock().ok()?;
        entries.iter().find(|e| e.server.name == server).map(|e| e.oversized.watch())
    }

    /// How long one call to `server` may take.
    fn tool_timeout(&self, server: &str) -> Duration {
        let entries = self.0.entries.lock().ok();
        let found = entries.as_ref().and_then(|e| e.iter().find(|e| e.server.name == server));
        found.map_or(CALL_TIMEOUT, |e| e.server.tool_timeout)
    }

    /// A call to `server` failed on its transport: a streamable HTTP
    /// server, which has no process to watch, is then taken for dead
    /// (a stdio server's end is seen when its process exits).
    fn unreachable(&self, server: &str, why: String) {
        let index = self.0.entries.lock().ok().and_then(|e| {
            e.iter().position(|e| e.server.name == server && matches!(e.server.transport, Transport::Http { .. }))
        });
        if let Some(index) = index {
            self.0.lost(index, why);
        }
    }
}

/// The registry offers the servers' tools through [`crate::tools::ToolSource`].
impl crate::tools::ToolSource for Servers {
    fn ready(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(Servers::ready(self))
    }
    fn tools(&self) -> Vec<Arc<dyn crate::tools::Tool>> {
        Servers::tools(self)
    }
    fn owns(&self, name: &str) -> bool {
        Servers::owns(self, name)
    }
    fn news(&self) -> Vec<String> {
        Servers::news(self)
    }
    fn listing(&self) -> Vec<crate::tools::SourceListing> {
        let listed = Servers::listing(self).into_iter();
        listed
            .map(|l| crate::tools::SourceListing { name: l.name, state: l.state.to_string(), tools: l.tools })
            .collect()
    }
}

#[cfg(test)]
mod tests;
