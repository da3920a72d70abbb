//! Reading a model's answer: a Server-Sent Events stream parsed by the
//! `eventsource-stream` crate and fed event by event to the protocol's
//! decoder, or a plain JSON body when a server answers a streaming request
//! without streaming. A stream that breaks, or ends before the protocol's
//! end marker, keeps what arrived.

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use super::{CallError, Cancel, Delta, Protocol, Response, anthropic, openai};

/// A protocol's incremental decoder.
pub trait Decoder: Send {
    /// Take one SSE event. `Ok(true)` once the stream says it is over; an
    /// error event from the server is `Err(message)`.
    fn event(&mut self, name: &str, data: &str, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<bool, String>;
    /// True when the answer is whole (a stop reason or end marker arrived).
    fn complete(&self) -> bool;
    /// The answer so far.
    fn response(&self) -> Response;
}

pub async fn read_response(
    protocol: Protocol,
    response: reqwest::Response,
    on_delta: &mut (dyn FnMut(Delta) + Send),
    cancel: &Cancel,
) -> Result<Response, CallError> {
    let is_json = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json") && !t.contains("event-stream"));
    if is_json {
        let body = tokio::select! {
            b = response.text() => b.map_err(|e| CallError::Failed(format!("cannot read the answer: {e}")))?,
            () = cancel.cancelled() => return Err(CallError::Cancelled { partial: Response::default() }),
        };
        let value: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| CallError::Failed(format!("the answer is not JSON: {e}")))?;
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
    let mut events = response.bytes_stream().eventsource();
    loop {
        let next = tokio::select! {
            n = events.next() => n,
            () = cancel.cancelled() => return Err(CallError::Cancelled { partial: decoder.response() }),
        };
        match next {
            None => break,
            Some(Ok(event)) => match decoder.event(&event.event, &event.data, on_delta) {
                Ok(true) => break,
                Ok(false) => {}
                Err(message) => return Err(CallError::Cut { partial: decoder.response(), message }),
            },
            Some(Err(e)) => {
                let message = format!("the connection broke: {e}");
                return Err(CallError::Cut { partial: decoder.response(), message });
            }
        }
    }
    if decoder.complete() {
        Ok(decoder.response())
    } else {
        let message = "the stream ended before the answer was complete".to_string();
        Err(CallError::Cut { partial: decoder.response(), message })
    }
}
