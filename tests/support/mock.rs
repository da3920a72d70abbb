//! A mock model server on 127.0.0.1, started by each test. It answers
//! scripted replies in order, streams SSE with chunked transfer encoding
//! (one chunk an event, with an optional delay), can cut a stream by
//! closing the connection mid-body, and captures every request.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub struct MockServer {
    pub port: u16,
    script: Arc<Mutex<VecDeque<Reply>>>,
    captured: Arc<Mutex<Vec<Captured>>>,
}

impl MockServer {
    pub fn start() -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("addr").port();
        let script: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let captured: Arc<Mutex<Vec<Captured>>> = Arc::default();
        let (s, c) = (script.clone(), captured.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, c) = (s.clone(), c.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &s, &c);
                });
            }
        });
        MockServer { port, script, captured }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn push(&self, reply: Reply) {
        self.script.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }

    /// Requests to model endpoints only (not the Ollama probe).
    pub fn model_requests(&self) -> Vec<Captured> {
        self.requests().into_iter().filter(|r| r.method == "POST").collect()
    }
}

fn serve(stream: TcpStream, script: &Mutex<VecDeque<Reply>>, captured: &Mutex<Vec<Captured>>) -> std::io::Result<()> {
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
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    captured.lock().unwrap().push(Captured { method, path, headers, body });
    let reply = script.lock().unwrap().pop_front();
    let mut out = stream;
    match reply {
        None => {
            let body = r#"{"error":{"message":"the mock server has no reply scripted"}}"#;
            write!(
                out,
                "HTTP/1.1 599 No Script\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )?;
        }
        Some(Reply::Body { status, content_type, body, headers }) => {
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
        Some(Reply::Sse { events, delay_ms, cut_after }) => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            )?;
            out.flush()?;
            for (i, event) in events.iter().enumerate() {
                if cut_after == Some(i) {
                    // Close mid-body: no final chunk, a broken stream.
                    return out.shutdown(std::net::Shutdown::Both);
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
    out.flush()
}
