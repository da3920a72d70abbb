//! A mock model server on 127.0.0.1, started by each test. It answers
//! scripted replies in order, streams SSE with chunked transfer encoding
//! (one chunk an event, with an optional delay), can cut a stream by
//! closing the connection mid-body, and captures every request.
//!
//! It fails loudly: a request with no reply scripted, a request that sends
//! a tool call without its result (or a result without its call, in either
//! protocol's shape), and a scripted reply that was never asked for are
//! each recorded and reported when the server is dropped, which fails the
//! test. The bad request itself gets a 400, as a real provider would answer
//! an invalid request, so glrs stops instead of retrying it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long `wait_for_*` waits before failing the test.
const WAIT: Duration = Duration::from_secs(20);

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream`: each string is written as one chunk.
    Sse { events: Vec<String>, delay_ms: u64, cut_after: Option<usize> },
    /// Any status with a body (errors, or JSON to a streaming request).
    Body { status: u16, content_type: &'static str, body: String, headers: Vec<(String, String)> },
}

impl Reply {
    pub fn sse(events: Vec<String>) -> Reply {
        Reply::Sse { events, delay_ms: 0, cut_after: None }
    }

    pub fn slow_sse(events: Vec<String>, delay_ms: u64) -> Reply {
        Reply::Sse { events, delay_ms, cut_after: None }
    }

    /// The stream breaks (connection closed) after `n` events.
    pub fn cut_sse(events: Vec<String>, n: usize) -> Reply {
        Reply::Sse { events, delay_ms: 0, cut_after: Some(n) }
    }

    pub fn json(status: u16, body: &str) -> Reply {
        Reply::Body { status, content_type: "application/json", body: body.to_string(), headers: Vec::new() }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Body { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// A short description for the harness's report.
    fn describe(&self) -> String {
        match self {
            Reply::Sse { events, .. } => {
                // The text it would stream, else its first event.
                let text: String = events.iter().filter_map(|e| streamed_text(e)).collect();
                let shown = if text.is_empty() { events.first().cloned().unwrap_or_default() } else { text };
                let shown: String = shown.trim().chars().take(100).collect();
                format!("SSE of {} events: {shown:?}", events.len())
            }
            Reply::Body { status, body, .. } => {
                let body: String = body.chars().take(100).collect();
                format!("{status} {body}")
            }
        }
    }
}

/// The text or tool input one SSE event streams, in either protocol.
fn streamed_text(event: &str) -> Option<String> {
    let data = event.lines().find_map(|l| l.strip_prefix("data:"))?;
    let v: Value = serde_json::from_str(data.trim()).ok()?;
    let delta = &v["choices"][0]["delta"];
    let piece = delta["content"]
        .as_str()
        .or(delta["tool_calls"][0]["function"]["arguments"].as_str())
        .or(v["delta"]["text"].as_str())
        .or(v["delta"]["partial_json"].as_str())?;
    Some(piece.to_string())
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Inner {
    /// Replies not yet used, each with its number in push order (from 1)
    /// and, for a routed reply, what the request's first user message holds.
    script: VecDeque<(usize, Option<String>, Reply)>,
    pushed: usize,
    captured: Vec<Captured>,
    /// Scripted replies written out in full.
    answered: usize,
    /// Unscripted and invalid requests, described.
    problems: Vec<String>,
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    /// Signalled on every captured request and every reply written, for
    /// `wait_for_*`.
    arrived: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere must not hide this server's report.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub struct MockServer {
    pub port: u16,
    shared: Arc<Shared>,
}

impl MockServer {
    pub fn start() -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let shared: Arc<Shared> = Arc::default();
        let for_thread = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = for_thread.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        MockServer { port, shared }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn push(&self, reply: Reply) {
        self.push_routed(None, reply);
    }

    /// A reply only for a request whose first user message contains
    /// `first_user`: several conversations at once (a parent and its
    /// subagents) each get their own script, in order.
    pub fn push_for(&self, first_user: &str, reply: Reply) {
        self.push_routed(Some(first_user.to_string()), reply);
    }

    fn push_routed(&self, route: Option<String>, reply: Reply) {
        let mut inner = self.shared.lock();
        inner.pushed += 1;
        let n = inner.pushed;
        inner.script.push_back((n, route, reply));
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.shared.lock().captured.clone()
    }

    /// Requests to model endpoints only (not the Ollama probe).
    pub fn model_requests(&self) -> Vec<Captured> {
        self.requests().into_iter().filter(|r| r.method == "POST").collect()
    }

    /// Wait until `n` model requests have arrived; fails the test naming
    /// `what` after 20 s.
    pub fn wait_for_model_requests(&self, n: usize, what: &str) {
        self.wait_until(what, |inner| {
            let seen = inner.captured.iter().filter(|r| r.method == "POST").count();
            (seen >= n).then_some(()).ok_or(format!("{seen} of {n} model requests arrived"))
        });
    }

    /// Wait until `n` scripted replies have been written out in full (the
    /// client has them, or is reading them); fails the test naming `what`.
    pub fn wait_for_answered(&self, n: usize, what: &str) {
        self.wait_until(what, |inner| {
            (inner.answered >= n).then_some(()).ok_or(format!("{} of {n} replies were sent", inner.answered))
        });
    }

    fn wait_until(&self, what: &str, done: impl Fn(&Inner) -> Result<(), String>) {
        let deadline = Instant::now() + WAIT;
        let mut inner = self.shared.lock();
        loop {
            let status = match done(&inner) {
                Ok(()) => return,
                Err(status) => status,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "waited {WAIT:?} for {what}: {status}");
            inner = self.shared.arrived.wait_timeout(inner, left).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Everything wrong so far: unscripted or invalid requests, and
    /// scripted replies never used. Taking the report clears it, so a test
    /// of the harness itself can check it without failing on drop.
    pub fn take_report(&self) -> Vec<String> {
        let mut inner = self.shared.lock();
        let mut report = std::mem::take(&mut inner.problems);
        for (n, _, reply) in std::mem::take(&mut inner.script) {
            report.push(format!("scripted reply {n} was never used: {}", reply.describe()));
        }
        report
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let report = self.take_report();
        if report.is_empty() {
            return;
        }
        let text = format!("the mock model server saw problems:\n  {}", report.join("\n  "));
        if std::thread::panicking() {
            // The test already failed; say this too, without aborting.
            eprintln!("{text}");
        } else {
            panic!("{text}");
        }
    }
}

/// The text of a request's first user message, in either protocol ("" if none).
pub fn first_user_text(body: &Value) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else { return String::new() };
    let Some(first) = messages.iter().find(|m| m["role"] == "user") else { return String::new() };
    match &first["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// Why a request is one no real provider would accept because of its tool
/// calls and results (SPEC section 3), or `None`. The protocol is told by
/// the path: Anthropic's `…/messages`, else OpenAI's chat completions.
pub fn pairing_problem(path: &str, body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with("/messages") { anthropic_pairing(messages) } else { openai_pairing(messages) }
}

fn openai_pairing(messages: &[Value]) -> Option<String> {
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m["role"].as_str() {
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Some(format!("message {i}: tool result {id:?} without its call"));
                };
                open.remove(at);
            }
            role => {
                if !open.is_empty() {
                    return Some(format!("message {i} ({role:?}): tool calls without results before it: {open:?}"));
                }
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    open.push(c["id"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    (!open.is_empty()).then(|| format!("tool calls without results at the end: {open:?}"))
}

fn anthropic_pairing(messages: &[Value]) -> Option<String> {
    let blocks = |m: &Value, kind: &str, field: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == kind)
            .map(|b| b[field].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // Anthropic wants every tool_use answered by a tool_result in the very
    // next (user) message, and no tool_result without a tool_use just before.
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let results = blocks(m, "tool_result", "tool_use_id");
        for id in &results {
            let Some(at) = open.iter().position(|o| o == id) else {
                return Some(format!("message {i}: tool_result {id:?} without its tool_use in the message before"));
            };
            open.remove(at);
        }
        if !open.is_empty() {
            return Some(format!("message {i}: tool_use without tool_result: {open:?}"));
        }
        open = blocks(m, "tool_use", "id");
        if !open.is_empty() && m["role"] != "assistant" {
            return Some(format!("message {i}: tool_use in a {} message", m["role"]));
        }
    }
    (!open.is_empty()).then(|| format!("tool_use without tool_result at the end: {open:?}"))
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let scripted = answer(stream, shared)?;
    if scripted {
        shared.lock().answered += 1;
        shared.arrived.notify_all();
    }
    Ok(())
}

/// Read one request and write its answer; `true` when that was a scripted
/// reply written in full.
fn answer(stream: TcpStream, shared: &Shared) -> std::io::Result<bool> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut inner = shared.lock();
        let n = inner.captured.len() + 1;
        let what = format!("request {n} ({method} {path})");
        let invalid = pairing_problem(&path, &body);
        let first = first_user_text(&body);
        inner.captured.push(Captured { method, path, headers, body });
        shared.arrived.notify_all();
        // An invalid request uses no reply: a real provider refuses it.
        let reply = match invalid {
            Some(problem) => Err(format!("{what} is invalid: {problem}")),
            None => {
                let at = inner.script.iter().position(|(_, route, _)| route.as_ref().is_none_or(|r| first.contains(r)));
                at.and_then(|at| inner.script.remove(at)).map(|(_, _, r)| r).ok_or(format!(
                    "{what} has no reply scripted (its first user message: {:?})",
                    first.chars().take(100).collect::<String>()
                ))
            }
        };
        if let Err(problem) = &reply {
            inner.problems.push(problem.clone());
        }
        reply
    };
    let mut out = stream;
    match reply {
        Err(problem) => {
            // 400: glrs does not retry it, so the test stops here.
            let body = serde_json::json!({"error": {"type": "invalid_request_error", "message": format!("mock server: {problem}")}})
                .to_string();
            write!(
                out,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )?;
            out.flush()?;
            return Ok(false);
        }
        Ok(Reply::Body { status, content_type, body, headers }) => {
            write!(
                out,
                "HTTP/1.1 {status} Status\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            )?;
            for (k, v) in headers {
                write!(out, "{k}: {v}\r\n")?;
            }
            write!(out, "\r\n{body}")?;
        }
        Ok(Reply::Sse { events, delay_ms, cut_after }) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            )?;
            out.flush()?;
            for (i, event) in events.iter().enumerate() {
                if cut_after == Some(i) {
                    // Close mid-body: no final chunk, a broken stream.
                    out.shutdown(std::net::Shutdown::Both)?;
                    return Ok(true);
                }
                if delay_ms > 0 {
                    std::thread::sleep(Duration::from_millis(delay_ms));
                }
                write!(out, "{:x}\r\n{event}\r\n", event.len())?;
                out.flush()?;
            }
            write!(out, "0\r\n\r\n")?;
        }
    }
    out.flush()?;
    Ok(true)
}
