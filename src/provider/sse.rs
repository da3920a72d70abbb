//! Reading a model's answer: a Server-Sent Events stream parsed by
//! [`super::sse_parse`] and fed event by event to the protocol's decoder,
//! or a plain JSON body when a server answers a streaming request without
//! streaming. A stream that breaks, or ends before the protocol's end
//! marker, keeps what arrived.
//!
//! A server that goes silent, or that trickles bytes without ever ending a
//! line, is cut after the provider's timeout; a line or body past
//! [`MAX_EVENT_BYTES`] is an error rather than unbounded memory.

use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use super::sse_parse::{EventParser, MAX_EVENT_BYTES};
use super::{CallError, Cancel, Delta, Protocol, Response, anthropic, openai};

/// A protocol's incremental decoder.
pub trait Decoder: Send {
    /// Take one SSE event. `Ok(true)` once the stream says it is over; an
    /// error event from the server is `Err(message)`.
    fn event(&mut self, name: &str, data: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<bool, String>;
    /// True when the answer is whole (a stop reason or end marker arrived).
    fn complete(&self) -> bool;
    /// The answer so far, moved out (the decoder is done with).
    fn take_response(&mut self) -> Response;
}

/// Why reading a body stopped early.
#[derive(Debug)]
pub enum ReadStop {
    /// The user stopped it.
    Cancelled,
    /// The stream failed; why.
    Failed(String),
}

/// A body read chunk by chunk with a deadline: silence for `timeout` since
/// the last progress (a finished line, or the start) ends it.
pub struct Body<S> {
    stream: S,
    timeout: Duration,
    progress: Instant,
    last_data: Instant,
}

impl<S, B> Body<S>
where
    S: Stream<Item = reqwest::Result<B>> + Unpin,
    B: AsRef<[u8]>,
{
    /// A body that fails after `timeout` without data.
    pub fn new(stream: S, timeout: Duration) -> Body<S> {
        let now = Instant::now();
        Body { stream, timeout, progress: now, last_data: now }
    }

    /// The caller saw progress (a line ended).
    pub fn progressed(&mut self) {
        self.progress = Instant::now();
    }

    /// The next chunk; `Ok(None)` at the end. `pending` is how many bytes
    /// wait for a line end, for the message when the deadline passes.
    pub async fn next(&mut self, pending: usize, cancel: &Cancel) -> Result<Option<B>, ReadStop> {
        tokio::select! {
            next = self.stream.next() => match next {
                None => Ok(None),
                Some(Ok(bytes)) => {
                    self.last_data = Instant::now();
                    Ok(Some(bytes))
                }
                Some(Err(e)) => Err(ReadStop::Failed(format!("the connection broke: {}", super::error_chain(&e)))),
            },
            () = tokio::time::sleep_until(self.progress + self.timeout) => {
                let secs = self.timeout.as_secs_f64();
                Err(ReadStop::Failed(if self.last_data <= self.progress {
                    format!("no data for {secs} s")
                } else {
                    format!("no line ended for {secs} s ({pending} bytes arrived without a line end)")
                }))
            }
            () = cancel.cancelled() => Err(ReadStop::Cancelled),
        }
    }
}

/// A body's first `limit` bytes, each chunk due within `timeout`, and
/// whether that was the whole body (the rest is never read).
pub async fn read_capped(
    response: reqwest::Response,
    limit: usize,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<(Vec<u8>, bool), ReadStop> {
    let mut body = Body::new(response.bytes_stream(), timeout);
    let mut out = Vec::new();
    while let Some(chunk) = body.next(0, cancel).await? {
        body.progressed();
        let chunk = chunk.as_ref();
        let room = limit.saturating_sub(out.len());
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            return Ok((out, false));
        }
        out.extend_from_slice(chunk);
    }
    Ok((out, true))
}

/// Read a streamed answer in `protocol`, showing deltas as they arrive; `cancel` stops it.
pub async fn read_response(
    protocol: Protocol,
    response: reqwest::Response,
    timeout: Duration,
    on_delta: &mut (dyn FnMut(Delta) + Send),
    cancel: &Cancel,
) -> Result<Response, CallError> {
    let is_json = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json") && !t.contains("event-stream"));
    if is_json {
        let (body, whole) =
            read_capped(response, MAX_EVENT_BYTES, timeout, cancel).await.map_err(|stop| match stop {
                ReadStop::Cancelled => CallError::Cancelled { partial: Response::default() },
                ReadStop::Failed(m) => CallError::Failed(format!("cannot read the answer: {m}")),
            })?;
        if !whole {
            return Err(CallError::Failed(format!("the answer is longer than {} MB", MAX_EVENT_BYTES >> 20)));
        }
        let value: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| CallError::Failed(format!("the answer is not JSON: {e}")))?;
        let parsed = match protocol {
            Protocol::OpenAi => openai::parse_body(&value),
            Protocol::Anthropic => anthropic::parse_body(&value),
        }
        .map_err(CallError::Failed)?;
        if !parsed.text.is_empty() {
            on_delta(Delta::Text(parsed.text.clone()));
        }
        return Ok(parsed);
    }

    let mut decoder: Box<dyn Decoder> = match protocol {
        Protocol::OpenAi => Box::new(openai::StreamDecoder::default()),
        Protocol::Anthropic => Box::new(anthropic::StreamDecoder::default()),
    };
    let mut parser = EventParser::default();
    let mut body = Body::new(response.bytes_stream(), timeout);
    let mut events = Vec::new();
    'read: loop {
        let chunk = match body.next(parser.pending(), cancel).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(ReadStop::Cancelled) => return Err(CallError::Cancelled { partial: decoder.take_response() }),
            Err(ReadStop::Failed(message)) => return Err(CallError::Cut { partial: decoder.take_response(), message }),
        };
        match parser.feed(chunk.as_ref(), &mut events) {
            Ok(0) => {}
            Ok(_) => body.progressed(),
            Err(e) => return Err(CallError::Cut { partial: decoder.take_response(), message: e.to_string() }),
        }
        for event in events.drain(..) {
            match decoder.event(&event.event, &event.data, on_delta) {
                Ok(true) => break 'read,
                Ok(false) => {}
                Err(message) => return Err(CallError::Cut { partial: decoder.take_response(), message }),
            }
        }
    }
    if decoder.complete() {
        Ok(decoder.take_response())
    } else {
        let message = "the stream ended before the answer was complete".to_string();
        Err(CallError::Cut { partial: decoder.take_response(), message })
    }
}
