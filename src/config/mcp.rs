//! `mcpServers.<name>` in `config.json` (SPEC 15): a stdio server
//! (`command`, `args`, `env`, `cwd`) or a streamable HTTP server (`url`,
//! `headers`), the shape other agents use (their optional `type` is
//! accepted too, and so are their `${VAR}` and `${VAR:-default}`
//! references to the environment, filled in when the server starts, so a
//! token need not be written in the file), with two limits of either kind:
//! `startupTimeoutSec` and `toolTimeoutSec`. Checked when the config
//! loads: a bad entry is an error naming its key (`mcpServers.fs.url`),
//! never a server that fails later.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::Deserialize;

/// Headers the MCP transport sets itself: a server's `headers` may not.
const RESERVED_HEADERS: &[&str] = &["accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

/// How long a server may take to start and list its tools, unless its
/// `startupTimeoutSec` says otherwise.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take, unless `toolTimeoutSec` says otherwise.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// The most `startupTimeoutSec` may be: a chat's first request waits that long.
const MAX_START_SECS: f64 = 600.0;
/// The most `toolTimeoutSec` may be (an hour; Esc still stops a call).
const MAX_CALL_SECS: f64 = 3600.0;

/// One `mcpServers.<name>` entry, as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerConfig {
    /// `type`: `"stdio"` or `"http"` (also `"streamable-http"`); else
    /// implied by `command` or `url`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `command`: the program of a stdio server (looked up on PATH).
    pub command: Option<String>,
    /// `args`: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// `env`: variables added to its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `cwd`: the folder it runs in (`~` expanded, a relative one from the
    /// chat's cwd); else `/`, never the workspace ([`crate::paths::OWN_PROGRAMS_CWD`]).
    pub cwd: Option<String>,
    /// `url`: the endpoint of a streamable HTTP server.
    pub url: Option<String>,
    /// `headers`: sent with every HTTP request (`Authorization`, …).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `startupTimeoutSec`: how long it may take to start and list its
    /// tools (default 30).
    pub startup_timeout_sec: Option<f64>,
    /// `toolTimeoutSec`: how long one of its tool calls may take (default 600).
    pub tool_timeout_sec: Option<f64>,
}

/// How glrs reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// The folder it runs in; `None`: `/` ([`crate::paths::OWN_PROGRAMS_CWD`]).
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra headers.
        headers: BTreeMap<String, String>,
    },
}

/// A checked server: its name and how to reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// The name under `mcpServers` (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long it may take to start and list its tools.
    pub startup_timeout: Duration,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
}

/// `value` of `key` as a duration: seconds, more than 0 and at most `max`.
fn seconds(key: &str, value: Option<f64>, default: Duration, max: f64) -> Result<Duration> {
    match value {
        None => Ok(default),
        Some(secs) if secs > 0.0 && secs <= max => Ok(Duration::from_secs_f64(secs)),
        Some(secs) => bail!("{key}: must be a number of seconds more than 0 and at most {max}, got {secs}"),
    }
}

/// Whether `name` can be a server name: it becomes part of tool names,
/// which providers limit to letters, digits, `_` and `-`.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl ServerConfig {
    /// Check the entry named `name`; errors name the key.
    pub fn check(&self, name: &str) -> Result<Server> {
        let key = format!("mcpServers.{name}");
        if !valid_name(name) {
            bail!("{key}: a server name is 1 to 32 letters, digits, _ or - (it becomes part of tool names)");
        }
        let startup_timeout =
            seconds(&format!("{key}.startupTimeoutSec"), self.startup_timeout_sec, START_TIMEOUT, MAX_START_SECS)?;
        let tool_timeout =
            seconds(&format!("{key}.toolTimeoutSec"), self.tool_timeout_sec, CALL_TIMEOUT, MAX_CALL_SECS)?;
        let http = match (self.kind.as_deref(), &self.command, &self.url) {
            (Some("stdio"), _, _) => false,
            (Some("http" | "streamable-http" | "streamableHttp"), _, _) => true,
            (Some("sse"), _, _) => {
                bail!("{key}.type: the legacy SSE transport is not supported; use the server's streamable HTTP URL")
            }
            (Some(other), _, _) => bail!("{key}.type: must be \"stdio\" or \"http\", got {other:?}"),
            (None, Some(_), None) => false,
            (None, None, Some(_)) => true,
            (None, Some(_), Some(_)) => bail!("{key}: give \"command\" (a stdio server) or \"url\" (HTTP), not both"),
            (None, None, None) => {
                bail!("{key}: needs \"command\" (a stdio server) or \"url\" (a streamable HTTP server)")
            }
        };
        if http {
            let Some(url) = &self.url else { bail!("{key}.url: required for an HTTP server") };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("{key}.url: must be an http:// or https:// URL, got {url:?}");
            }
            for (field, set) in [
                ("command", self.command.is_some()),
                ("args", !self.args.is_empty()),
                ("env", !self.env.is_empty()),
                ("cwd", self.cwd.is_some()),
            ] {
                if set {
                    bail!("{key}.{field}: belongs to a stdio server, and this one has a \"url\"");
                }
            }
            for (header, value) in &self.headers {
                let at = format!("{key}.headers.{header}");
                let name = reqwest::header::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| anyhow::anyhow!("{at}: not a valid header name"))?;
                if RESERVED_HEADERS.contains(&name.as_str()) {
                    bail!("{at}: set by the MCP transport itself");
                }
                reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| anyhow::anyhow!("{at}: not a valid header value"))?;
            }
            return Ok(Server {
                name: name.to_string(),
                transport: Transport::Http { url: url.clone(), headers: self.headers.clone() },
                startup_timeout,
                tool_timeout,
            });
        }
        let Some(command) = &self.command else { bail!("{key}.command: required for a stdio server") };
        if command.trim().is_empty() {
            bail!("{key}.command: must not be empty");
        }
        for (field, set) in [("url", self.url.is_some()), ("headers", !self.headers.is_empty())] {
            if set {
                bail!("{key}.{field}: belongs to an HTTP server, and this one has a \"command\"");
            }
        }
        for var in self.env.keys() {
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                bail!("{key}.env.{var}: not a valid variable name");
            }
        }
        Ok(Server {
            name: name.to_string(),
            transport: Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            },
            startup_timeout,
            tool_timeout,
        })
    }
}

/// `text` with each `${VAR}` (or `${VAR:-default}`) replaced through
/// `lookup`; an unset variable without a default, or a reference that is
/// not one, is an error naming `key`.
fn expand(text: &str, key: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else { return Err(format!("{key}: \"${{\" without its \"}}\"")) };
        let (name, default) = match after[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("{key}: \"${{{}}}\" is not a variable reference", &after[..end]));
        }
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("{key}: the variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Server {
    /// The server with its `${VAR}` references filled in from `lookup`.
    pub fn expanded(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Server, String> {
        let key = format!("mcpServers.{}", self.name);
        let one = |field: &str, text: &str| expand(text, &format!("{key}.{field}"), lookup);
        let map = |field: &str, map: &BTreeMap<String, String>| {
            map.iter().map(|(k, v)| Ok((k.clone(), one(&format!("{field}.{k}"), v)?))).collect::<Result<_, String>>()
        };
        let transport = match &self.transport {
            Transport::Stdio { command, args, env, cwd } => Transport::Stdio {
                command: one("command", command)?,
                args: args.iter().enumerate().map(|(i, a)| one(&format!("args[{i}]"), a)).collect::<Result<_, _>>()?,
                env: map("env", env)?,
                cwd: cwd.as_deref().map(|c| one("cwd", c)).transpose()?,
            },
            Transport::Http { url, headers } => {
                Transport::Http { url: one("url", url)?, headers: map("headers", headers)? }
            }
        };
        Ok(Server { transport, ..self.clone() })
    }
}

/// Check every entry of `mcpServers`, in name order.
pub fn check_all(servers: &BTreeMap<String, ServerConfig>) -> Result<Vec<Server>> {
    servers.iter().map(|(name, config)| config.check(name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Server>> {
        let servers: BTreeMap<String, ServerConfig> = serde_json::from_str(text)?;
        check_all(&servers)
    }

    #[test]
    fn stdio_and_http_servers_parse() {
        let servers = parse(
            r#"{"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                       "env": {"DEBUG": "1"}, "cwd": "~/src"},
                "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                "typed": {"type": "stdio", "command": "srv"}}"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 3);
        assert!(matches!(&servers[0].transport, Transport::Stdio { command, args, .. }
            if command == "npx" && args.len() == 3));
        assert_eq!(servers[1].name, "typed");
        assert!(matches!(&servers[2].transport, Transport::Http { url, headers }
            if url == "https://example.com/mcp" && headers.len() == 1));
    }

    #[test]
    fn limits_default_and_are_set_per_server() {
        let servers = parse(
            r#"{"a": {"command": "x"},
                "b": {"url": "http://h", "startupTimeoutSec": 2.5, "toolTimeoutSec": 3600}}"#,
        )
        .unwrap();
        assert_eq!((servers[0].startup_timeout, servers[0].tool_timeout), (START_TIMEOUT, CALL_TIMEOUT));
        assert_eq!(servers[1].startup_timeout, Duration::from_millis(2500));
        assert_eq!(servers[1].tool_timeout, Duration::from_secs(3600));
        let expanded = servers[1].expanded(&|_| None).unwrap();
        assert_eq!(expanded.startup_timeout, Duration::from_millis(2500), "kept when variables are filled in");
    }

    #[test]
    fn variables_are_filled_in_when_a_server_starts() {
        let servers = parse(
            r#"{"web": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "fs": {"command": "srv", "args": ["${DIR:-/tmp}", "$HOME", "a${X}b"], "env": {"K": "${TOKEN}"}}}"#,
        )
        .unwrap();
        let lookup = |name: &str| match name {
            "HOST" => Some("example.com".to_string()),
            "TOKEN" => Some("s3cret".to_string()),
            "X" => Some("-".to_string()),
            _ => None,
        };
        let fs = servers[0].expanded(&lookup).unwrap();
        assert!(matches!(&fs.transport, Transport::Stdio { args, env, .. }
            if args == &["/tmp", "$HOME", "a-b"] && env["K"] == "s3cret"));
        let web = servers[1].expanded(&lookup).unwrap();
        assert!(matches!(&web.transport, Transport::Http { url, headers }
            if url == "https://example.com/mcp" && headers["Authorization"] == "Bearer s3cret"));
        let none = |_: &str| None;
        assert_eq!(servers[1].expanded(&none).unwrap_err(), "mcpServers.web.url: the variable HOST is not set");
        let bad = parse(r#"{"x": {"command": "a${B", "args": ["${1X}"]}}"#).unwrap();
        assert!(bad[0].expanded(&lookup).unwrap_err().contains("mcpServers.x.command: \"${\" without"));
    }

    #[test]
    fn config_json_errors_name_the_key() {
        for (text, expected) in [
            (r#"{"mcpServers": {"fs": {"comand": "x"}}}"#, "mcpServers.fs.comand: unknown field"),
            (r#"{"mcpServers": {"fs": {"command": "x", "args": "-y"}}}"#, "mcpServers.fs.args: invalid type"),
            (r#"{"mcpServers": {"fs": {"url": "h"}}}"#, "mcpServers.fs.url: must be an http"),
            (
                r#"{"mcpServers": {"fs": {"command": "x", "toolTimeoutSec": "5"}}}"#,
                "mcpServers.fs.toolTimeoutSec: invalid",
            ),
            (
                r#"{"mcpServers": {"fs": {"command": "x", "toolTimeoutSec": 0}}}"#,
                "mcpServers.fs.toolTimeoutSec: must be",
            ),
        ] {
            let err = format!("{:#}", crate::config::Config::parse(text).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (r#"{"fs": {}}"#, "mcpServers.fs: needs \"command\""),
            (r#"{"fs": {"command": "a", "url": "http://h"}}"#, "mcpServers.fs: give \"command\""),
            (r#"{"fs": {"url": "ftp://h"}}"#, "mcpServers.fs.url: must be an http"),
            (r#"{"fs": {"url": "http://h", "args": ["x"]}}"#, "mcpServers.fs.args: belongs to a stdio server"),
            (r#"{"fs": {"command": "x", "headers": {"a": "b"}}}"#, "mcpServers.fs.headers: belongs to an HTTP"),
            (r#"{"fs": {"url": "http://h", "headers": {"Accept": "x"}}}"#, "mcpServers.fs.headers.Accept: set by"),
            (r#"{"fs": {"url": "http://h", "headers": {"a b": "x"}}}"#, "mcpServers.fs.headers.a b: not a valid"),
            (r#"{"fs": {"type": "sse", "url": "http://h"}}"#, "mcpServers.fs.type: the legacy SSE"),
            (r#"{"fs": {"type": "ws", "url": "http://h"}}"#, "mcpServers.fs.type: must be"),
            (r#"{"fs": {"type": "http", "command": "x"}}"#, "mcpServers.fs.url: required"),
            (r#"{"fs": {"command": " "}}"#, "mcpServers.fs.command: must not be empty"),
            (r#"{"my fs": {"command": "x"}}"#, "mcpServers.my fs: a server name"),
            (r#"{"fs": {"command": "x", "env": {"A=B": "c"}}}"#, "mcpServers.fs.env.A=B"),
            (r#"{"fs": {"command": "x", "toolTimeoutSec": 0}}"#, "mcpServers.fs.toolTimeoutSec: must be a number"),
            (r#"{"fs": {"command": "x", "toolTimeoutSec": 3601}}"#, "mcpServers.fs.toolTimeoutSec: must be"),
            (r#"{"fs": {"url": "http://h", "startupTimeoutSec": -1}}"#, "mcpServers.fs.startupTimeoutSec: must"),
            (r#"{"fs": {"url": "http://h", "startupTimeoutSec": 601}}"#, "mcpServers.fs.startupTimeoutSec: must"),
        ];
        for (text, expected) in cases {
            let err = format!("{:#}", parse(text).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
