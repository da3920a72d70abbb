//! Reaching one MCP server with `rmcp`: a child process speaking on its
//! stdin and stdout (in a process group of its own, so everything it
//! starts can be stopped together, and so a Ctrl-C typed in the terminal
//! reaches glrs and not the servers), or streamable HTTP. The server's
//! stderr is kept, its last lines only, to say why it failed. Either
//! transport counts the server's list-changed notifications
//! ([`super::changes`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::changes::{Counted, Listener, Refresh};
use super::stdio::{Oversized, StdioProcess};
use crate::config::mcp::{Server, Transport};

/// A connected client.
pub(super) type Client = RunningService<RoleClient, Listener>;

/// How many lines of a server's stderr are kept.
const TAIL_LINES: usize = 20;
/// How long a kept stderr line may be.
const TAIL_LINE_CHARS: usize = 300;

/// The last lines a server wrote to its stderr.
#[derive(Debug, Default, Clone)]
pub struct Tail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// True while its stderr is still being read: [`Tail::settle`] waits
    /// for it to turn false.
    reading: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Tail {
    /// Wait a little for a server that failed to finish writing why.
    pub async fn settle(&self) {
        let mut reading = self.reading.subscribe();
        let done = reading.wait_for(|still| !*still);
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), done).await;
    }

    fn push(&self, line: &str) {
        let line = line.trim_end();
        if line.trim().is_empty() {
            return;
        }
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            // Shown in a terminal later: control sequences made visible.
            let line: String = line.chars().take(TAIL_LINE_CHARS).collect();
            lines.push_back(crate::output::terminal_safe(&line).into_owned());
        }
    }

    /// The last line, if any: what a failure message adds.
    pub fn last(&self) -> Option<String> {
        self.lines.lock().ok().and_then(|lines| lines.back().cloned())
    }
}

pub(super) fn client_config() -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("glrs", env!("CARGO_PKG_VERSION")))
}

/// Start or reach `server` and complete the MCP handshake. `group` is set
/// as soon as a child process exists, so it can be stopped even if the
/// handshake never ends. `listener` hears the server's notifications.
/// Must run inside the tokio runtime that will keep the client's tasks.
pub(super) async fn connect(
    server: &Server,
    cwd: &Path,
    tail: &Tail,
    group: &Mutex<Option<i32>>,
    listener: Listener,
    refresh: Arc<Refresh>,
    oversized: &Oversized,
) -> Result<Client, String> {
    let server = server.expanded(&|name| std::env::var(name).ok())?;
    match &server.transport {
        Transport::Stdio { command, args, env, cwd: dir } => {
            let dir = crate::paths::own_program_cwd(cwd, dir.as_deref());
            let process = stdio(command, args, env, &dir, tail, group, oversized)?;
            let transport = Counted { inner: process, refresh };
            listener.serve(transport).await.map_err(|e| format!("the MCP handshake failed: {e}"))
        }
        Transport::Http { url, headers } => {
            let transport = Counted { inner: http(url, headers)?, refresh };
            listener.serve(transport).await.map_err(|e| format!("cannot reach {url}: {e}"))
        }
    }
}

/// Start a stdio server's process.
fn stdio(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    dir: &Path,
    tail: &Tail,
    group: &Mutex<Option<i32>>,
    oversized: &Oversized,
) -> Result<StdioProcess, String> {
    let mut cmd = tokio::process::Command::new(command);
    // No key of ours: the variables the MCP SDKs pass, and its own `env`.
    crate::process::env::minimal(cmd.as_std_mut());
    cmd.args(args).envs(env).current_dir(dir).process_group(0);
    // A server in its own group escapes every signal but our own stops, so
    // the kernel kills it if glrs-chat is SIGKILLed. The fork happens here,
    // on the thread running this future: a worker of the process's runtime
    // (`crate::runtime`), which runs until the runtime shuts down at the
    // chat's end (when the servers are killed anyway), so its exit kills
    // nothing early. Never a `spawn_blocking` thread, whose exit after 10 s
    // idle would take the server with it.
    crate::process::die_with_parent(cmd.as_std_mut());
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {command:?} in {}: {e}", dir.display()))?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let stderr = child.stderr.take();
    if let Ok(mut slot) = group.lock() {
        *slot = pid;
    }
    if let Some(pid) = pid {
        crate::process::servers::remember(pid);
    }
    if let Some(stderr) = stderr {
        tail.reading.send_replace(true);
        let tail = tail.clone();
        tokio::spawn(async move {
            keep_tail(stderr, &tail).await;
            tail.reading.send_replace(false);
        });
    }
    StdioProcess::new(child, oversized.clone()).map_err(|e| format!("cannot talk to {command:?}: {e}"))
}

/// The most of one stderr line held while its end has not come: past it,
/// the rest of the line is read and dropped, so a server writing without
/// newlines costs a bounded amount of memory, however much it writes.
const MAX_PENDING_LINE: usize = 4 * TAIL_LINE_CHARS;

/// Read `stderr` to its end in bounded chunks, keeping its last lines in
/// `tail` (each cut to [`MAX_PENDING_LINE`] bytes before it is kept).
async fn keep_tail(mut stderr: impl tokio::io::AsyncRead + Unpin, tail: &Tail) {
    use tokio::io::AsyncReadExt;
    let mut chunk = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &chunk[..n];
        while let Some(at) = rest.iter().position(|b| *b == b'\n') {
            take_bounded(&mut line, &rest[..at]);
            tail.push(&String::from_utf8_lossy(&line));
            line.clear();
            rest = &rest[at + 1..];
        }
        take_bounded(&mut line, rest);
    }
    if !line.is_empty() {
        tail.push(&String::from_utf8_lossy(&line));
    }
}

/// Append to `line` what fits under [`MAX_PENDING_LINE`].
fn take_bounded(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_PENDING_LINE.saturating_sub(line.len());
    line.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// A streamable HTTP transport to `url`.
fn http(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        // Checked when the config loaded.
        let name =
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header {name}: {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        custom.insert(name, value);
    }
    // rmcp builds its own client: it finds the TLS provider installed.
    crate::provider::install_tls();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    Ok(StreamableHttpClientTransport::from_config(config))
}
