//! Model providers (SPEC section 4): one file per wire protocol
//! (`openai`: Chat Completions, also Azure, Ollama and compatible servers;
//! `anthropic`: Messages), sharing the SSE driver in `sse`, the retry and
//! error rules here, key resolution in `key`, and provider-neutral types in
//! `types`.
//!
//! Keys come from the environment or a configured command and live only in
//! a [`Secret`], in request headers marked sensitive; every error text that
//! leaves this module is scrubbed of the key.

pub mod anthropic;
pub mod cache;
pub mod catalogue;
mod key;
pub mod openai;
pub mod secret;
pub mod select;
pub mod sse;
pub mod sse_parse;
mod tls;
pub mod types;
mod wire;
#[cfg(test)]
mod wire_reference;
#[cfg(test)]
mod wire_tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::header::{HeaderMap, HeaderValue};

use crate::config::{Config, ProviderType};
pub use types::{Delta, Message, Reasoning, Response, Retrying, StopReason, ToolSpec, Usage};

/// The built-in provider ids (the config decides which ids need a `type`,
/// so the list lives there; config must not depend on this module).
pub use crate::config::{BUILTIN_PROVIDERS as BUILTIN, is_builtin_provider as is_builtin};

pub use key::KEY_COMMAND_TIMEOUT;
use key::resolve_key;
pub use secret::Secret;

/// How long a server may stay silent (no answer, no data, or no line
/// ended) before the call is given up.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest wait between attempts, whatever the server asks.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(120);

/// How much of an error answer is read (its start is all that is shown).
const MAX_ERROR_BODY: usize = 64 << 10;

/// Cancels a model call or a retry wait (Ctrl-C, Esc).
#[derive(Debug, Default)]
pub struct Cancel {
    flag: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Cancel {
    /// Stop the call or the wait.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether it was stopped.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Make it usable again for the next call.
    pub fn reset(&self) {
        self.flag.store(false, Ordering::SeqCst);
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Why a model call ended without a whole answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The request is larger than the model's context window.
    #[error("context overflow: {0}")]
    Overflow(String),
    /// The provider could not be reached, or its answer could not be read
    /// (after retries).
    #[error("{0}")]
    Failed(String),
    /// The provider answered with an HTTP error (a 4xx, or a 429 or 5xx
    /// still there after the retries): its status, for callers that branch
    /// on it, and the message shown.
    #[error("{message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// `HTTP {status}: {the provider's words}`, scrubbed of secrets.
        message: String,
    },
    /// The stream broke mid-answer; `partial` is what arrived.
    #[error("the answer was cut off: {message}")]
    Cut {
        /// What arrived before the break.
        partial: Response,
        /// Why the stream broke.
        message: String,
    },
    /// The user stopped it; `partial` is what arrived.
    #[error("stopped")]
    Cancelled {
        /// What arrived before the stop.
        partial: Response,
    },
}

impl CallError {
    /// True when the server did not answer, or answered only with errors of
    /// its own (429, 5xx), through every retry: asking it again at once
    /// would go the same way.
    pub fn server_down(&self) -> bool {
        match self {
            CallError::Failed(_) => true,
            CallError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// The `kind` of the `error` entry this becomes.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Overflow(_) => "overflow",
            _ => "provider",
        }
    }
}

/// A model call's input.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The model id without the provider (`gpt-4.1`).
    pub model: &'a str,
    /// The system prompt, if any.
    pub system: Option<&'a str>,
    /// The conversation.
    pub messages: &'a [Message],
    /// The tools offered.
    pub tools: &'a [ToolSpec],
    /// The thinking level (SPEC 16); `Off` sends no thinking parameter.
    pub thinking: cache::Thinking,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The wire protocol a provider speaks.
pub enum Protocol {
    /// OpenAI's chat completions (OpenAI, Azure, Ollama, compatible servers).
    OpenAi,
    /// Anthropic's Messages.
    Anthropic,
}

/// A configured provider, ready to call.
#[derive(Debug, Clone)]
pub struct Provider {
    /// The provider id (`openai`, or a configured one).
    pub id: String,
    /// The protocol it speaks.
    pub protocol: Protocol,
    base_url: String,
    azure_version: Option<String>,
    key: Option<Secret>,
    client: reqwest::Client,
    attempts: u32,
    base_delay: Duration,
    /// See [`STREAM_TIMEOUT`]; shorter in tests.
    timeout: Duration,
    costs: std::collections::BTreeMap<String, (Option<f64>, Option<f64>)>,
    /// `providers.<id>.cache`: prompt caching for Claude models.
    pub cache: cache::CacheTtl,
}

impl Provider {
    /// The provider `id` as built in and/or configured.
    pub fn from_config(config: &Config, id: &str) -> Result<Provider> {
        let pc = config.providers.get(id).cloned().unwrap_or_default();
        let (protocol, default_base, default_env) = protocol_of(id, pc.kind)?;
        let (base_url, azure_version) = if id == "azure" && pc.kind.is_none() {
            let endpoint = pc.endpoint.clone().or(pc.base_url.clone()).with_context(
                || "azure: set providers.azure.endpoint (https://NAME.openai.azure.com) and apiVersion in config",
            )?;
            (endpoint, Some(pc.api_version.clone().unwrap_or_else(|| "2024-10-21".to_string())))
        } else {
            let base = pc.base_url.clone().or(pc.endpoint.clone()).or(default_base.map(str::to_string));
            (base.with_context(|| format!("providers.{id}.baseUrl is required"))?, None)
        };
        let key = resolve_key(id, pc.api_key_command.as_deref(), pc.api_key_env.as_deref().or(default_env))?;
        let client =
            http_client().connect_timeout(Duration::from_secs(10)).build().context("cannot start the HTTP client")?;
        let costs = pc
            .models
            .iter()
            .map(|(m, c)| (m.clone(), (c.metadata.cost_per_m_tok_in, c.metadata.cost_per_m_tok_out)))
            .collect();
        Ok(Provider {
            id: id.to_string(),
            protocol,
            base_url: base_url.trim_end_matches('/').to_string(),
            azure_version,
            key,
            client,
            attempts: config.retry.attempts.unwrap_or(4),
            base_delay: Duration::from_millis(config.retry.base_delay_ms.unwrap_or(500)),
            timeout: STREAM_TIMEOUT,
            costs,
            cache: pc.cache.unwrap_or_default(),
        })
    }

    fn url(&self, model: &str) -> String {
        match (self.protocol, &self.azure_version) {
            (Protocol::OpenAi, Some(version)) => {
                format!("{}/openai/deployments/{model}/chat/completions?api-version={version}", self.base_url)
            }
            (Protocol::OpenAi, None) => format!("{}/chat/completions", self.base_url),
            (Protocol::Anthropic, _) if self.base_url.ends_with("/v1") => format!("{}/messages", self.base_url),
            (Protocol::Anthropic, _) => format!("{}/v1/messages", self.base_url),
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let mut secret = |name: &'static str, value: String| {
            if let Ok(mut v) = HeaderValue::from_str(&value) {
                v.set_sensitive(true);
                headers.insert(name, v);
            }
        };
        if let Some(key) = self.key.as_ref().map(Secret::expose) {
            match (self.protocol, self.azure_version.is_some()) {
                (Protocol::Anthropic, _) => secret("x-api-key", key.to_string()),
                (Protocol::OpenAi, true) => secret("api-key", key.to_string()),
                (Protocol::OpenAi, false) => secret("authorization", format!("Bearer {key}")),
            }
        }
        if self.protocol == Protocol::Anthropic {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        headers.insert("accept", HeaderValue::from_static("text/event-stream, application/json"));
        headers
    }

    /// Any text that may be shown or recorded: without the key (in any
    /// form a server echoes it), at most [`secret::MAX_MESSAGE_CHARS`].
    /// Control characters are shown in caret notation: the text reaches
    /// terminals (stderr, the REPL) and a server chose it.
    pub fn scrub(&self, text: &str) -> String {
        let cut = match &self.key {
            Some(key) => key.scrub_and_cut(text, secret::MAX_MESSAGE_CHARS),
            None => text.chars().take(secret::MAX_MESSAGE_CHARS).collect(),
        };
        crate::output::terminal_safe(&cut).into_owned()
    }

    /// `text` without the key, whole (nothing cut).
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.scrub(text),
            None => text.to_string(),
        }
    }

    /// The same provider, giving up on a silent server after `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Provider {
        self.timeout = timeout;
        self
    }

    /// One model call, streamed: `on_delta` sees text and reasoning as they
    /// arrive. Connection errors, 429 and 5xx are retried with backoff,
    /// honouring `Retry-After`; `cancel` stops the call or the wait.
    pub async fn complete(
        &self,
        request: &Request<'_>,
        on_delta: &mut (dyn FnMut(Delta) + Send),
        cancel: &Cancel,
    ) -> Result<Response, CallError> {
        let body = self
            .request_body(request)
            .map_err(|e| CallError::Failed(format!("cannot write the request to {}: {e}", self.id)))?;
        // The body is written once: each attempt sends the same buffer (a
        // clone of the request shares it, nothing is copied).
        let post = self
            .client
            .post(self.url(request.model))
            .headers(self.headers())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .build();
        let mut attempt = 0;
        let response = loop {
            attempt += 1;
            let sent = async {
                match &post {
                    Ok(post) => match post.try_clone() {
                        Some(post) => self.client.execute(post).await.map_err(|e| error_chain(&e)),
                        None => Err("the request cannot be sent twice".to_string()),
                    },
                    Err(e) => Err(error_chain(e)),
                }
            };
            let result = tokio::select! {
                r = sent => Some(r),
                () = tokio::time::sleep(self.timeout) => None,
                () = cancel.cancelled() => return Err(CallError::Cancelled { partial: Response::default() }),
            };
            let (retry_after, status, message) = match result {
                Some(Ok(resp)) if resp.status().is_success() => break resp,
                Some(Ok(resp)) => {
                    let status = resp.status();
                    let wait = retry_after(resp.headers());
                    // Only the start of an error body is read: it is all that is shown.
                    let text = match sse::read_capped(resp, MAX_ERROR_BODY, self.timeout, cancel).await {
                        Ok((bytes, _whole)) => String::from_utf8_lossy(&bytes).into_owned(),
                        Err(sse::ReadStop::Cancelled) => {
                            return Err(CallError::Cancelled { partial: Response::default() });
                        }
                        Err(sse::ReadStop::Failed(m)) => m,
                    };
                    // Scrubbed whole (escaped forms included) before JSON
                    // decoding, again after it, and only then cut.
                    let message = format!("HTTP {}: {}", status.as_u16(), self.scrub(&error_text(&self.redact(&text))));
                    if is_overflow(status.as_u16(), &text) {
                        return Err(CallError::Overflow(message));
                    }
                    if !(status.as_u16() == 429 || status.is_server_error()) {
                        return Err(CallError::Http { status: status.as_u16(), message });
                    }
                    (wait, Some(status.as_u16()), message)
                }
                Some(Err(chain)) => (None, None, self.scrub(&format!("cannot reach {}: {chain}", self.id))),
                None => (None, None, format!("{} sent no answer for {} s", self.id, self.timeout.as_secs_f64())),
            };
            if attempt >= self.attempts {
                let message = format!(
                    "{message} (gave up after {})",
                    crate::output::count(attempt.into(), "attempt", "attempts")
                );
                return Err(match status {
                    Some(status) => CallError::Http { status, message },
                    None => CallError::Failed(message),
                });
            }
            let backoff = 2u32
                .checked_pow(attempt - 1)
                .and_then(|factor| self.base_delay.checked_mul(factor))
                .unwrap_or(MAX_RETRY_WAIT);
            let wait = retry_after.unwrap_or(backoff).min(MAX_RETRY_WAIT);
            on_delta(Delta::Retrying(Retrying { why: message, wait, attempt: attempt + 1, attempts: self.attempts }));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancel.cancelled() => return Err(CallError::Cancelled { partial: Response::default() }),
            }
        };
        let mut result = sse::read_response(self.protocol, response, self.timeout, on_delta, cancel).await;
        if let Err(CallError::Cut { message, .. }) | Err(CallError::Failed(message)) = &mut result {
            *message = self.scrub(message);
        }
        if let Ok(r) = &mut result {
            self.price(request.model, r);
        }
        result
    }

    /// The body of a call as sent: the protocol's own, thinking and cache
    /// breakpoints included (SPEC 16), written straight from the borrowed
    /// messages into one buffer.
    pub fn request_body(&self, request: &Request<'_>) -> serde_json::Result<Vec<u8>> {
        match self.protocol {
            Protocol::OpenAi => wire::write(request, &openai::request_body(request).cached(self.cache)),
            Protocol::Anthropic => wire::write(request, &anthropic::request_body(request).cached(self.cache)),
        }
    }

    /// Fill in the cost from configured prices when the provider gave none.
    fn price(&self, model: &str, response: &mut Response) {
        let Some(usage) = response.usage.as_mut() else { return };
        if usage.cost_usd.is_some() {
            return;
        }
        if let Some((Some(input), Some(output))) = self.costs.get(model) {
            // Claude bills cache reads at a tenth of the input price and
            // writes at 1.25 times (2 times for the 1-hour cache); other
            // providers' cached tokens are counted at the full price, an
            // upper bound.
            let (read, write) = match (cache::is_claude(model), self.cache) {
                (true, cache::CacheTtl::OneHour) => (0.1, 2.0),
                (true, _) => (0.1, 1.25),
                (false, _) => (1.0, 1.0),
            };
            let tokens_in = usage.input_tokens as f64
                + usage.cache_read_tokens as f64 * read
                + usage.cache_write_tokens as f64 * write;
            usage.cost_usd = Some((tokens_in * input + usage.output_tokens as f64 * output) / 1e6);
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `Retry-After` as seconds or an HTTP date, at most [`MAX_RETRY_WAIT`]
/// (`inf` and `1e30` included: clamped before any conversion).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = text.parse::<f64>() {
        if secs.is_nan() {
            return None;
        }
        return Some(Duration::from_secs_f64(secs.clamp(0.0, MAX_RETRY_WAIT.as_secs_f64())));
    }
    let when = jiff::fmt::rfc2822::parse(text).ok()?.timestamp();
    let millis = when.as_millisecond().saturating_sub(jiff::Timestamp::now().as_millisecond()).max(0);
    Some(Duration::from_millis(millis.unsigned_abs()).min(MAX_RETRY_WAIT))
}

/// Phrases providers use for "the request is larger than the window".
const OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "exceeds the context window",
    "context window",
    "too many tokens",
    "request_too_large",
    "input is too long",
];

/// True when an error answer means a context overflow.
pub fn is_overflow(status: u16, body: &str) -> bool {
    if !(status == 400 || status == 413) {
        return false;
    }
    let lower = body.to_lowercase();
    status == 413 || OVERFLOW_PHRASES.iter().any(|p| lower.contains(p))
}

/// The words of an error answer: the provider's own `message` when the
/// body is JSON, else the body (cut by the caller, after scrubbing).
fn error_text(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")))
        .and_then(|m| m.as_str().map(str::to_string))
        .unwrap_or_else(|| body.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_is_told_apart() {
        assert!(is_overflow(400, r#"{"error":{"code":"context_length_exceeded"}}"#));
        assert!(is_overflow(
            400,
            r#"{"type":"error","error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
        ));
        assert!(is_overflow(413, "too big"));
        assert!(!is_overflow(400, r#"{"error":{"message":"bad tool schema"}}"#));
        assert!(!is_overflow(500, "maximum context length"));
    }

    #[test]
    fn error_messages_prefer_the_providers_words() {
        assert_eq!(error_text(r#"{"error":{"message":"bad key"}}"#), "bad key");
        assert_eq!(error_text("<html>gateway</html>\n"), "<html>gateway</html>");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        // Values that would panic a conversion are clamped first.
        for huge in ["inf", "1e30", "18446744073709551616", "Fri, 31 Dec 2100 23:59:59 GMT"] {
            h.insert("retry-after", HeaderValue::from_static(huge));
            assert_eq!(retry_after(&h), Some(MAX_RETRY_WAIT), "{huge}");
        }
        for odd in ["-inf", "-5"] {
            h.insert("retry-after", HeaderValue::from_static(odd));
            assert_eq!(retry_after(&h), Some(Duration::ZERO), "{odd}");
        }
        h.insert("retry-after", HeaderValue::from_static("NaN"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn claude_cache_tokens_are_priced_as_billed() {
        let config = Config::parse(
            r#"{"providers": {"x": {"type": "anthropic", "baseUrl": "http://127.0.0.1:9",
                "models": {"claude-a": {"metadata": {"costPerMTokIn": 3, "costPerMTokOut": 15}}}}}}"#,
        )
        .unwrap();
        let provider = Provider::from_config(&config, "x").unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
            cost_usd: None,
        };
        let mut r = Response { usage: Some(usage), ..Response::default() };
        provider.price("claude-a", &mut r);
        // $3 input + $0.30 of reads + $3.75 of writes.
        assert!((r.usage.unwrap().cost_usd.unwrap() - 7.05).abs() < 1e-9);
    }
}

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod sse_fuzz;

/// The protocol of provider `id` (configured as `kind`), its default base
/// URL and key variable; an error naming it when glrs does not know it.
fn protocol_of(id: &str, kind: Option<ProviderType>) -> Result<(Protocol, Option<&'static str>, Option<&'static str>)> {
    Ok(match (id, kind) {
        (_, Some(ProviderType::Anthropic)) => (Protocol::Anthropic, None, None),
        (_, Some(ProviderType::Openai)) if !is_builtin(id) => (Protocol::OpenAi, None, None),
        ("openai", _) => (Protocol::OpenAi, Some("https://api.openai.com/v1"), Some("OPENAI_API_KEY")),
        ("anthropic", _) => (Protocol::Anthropic, Some("https://api.anthropic.com"), Some("ANTHROPIC_API_KEY")),
        ("azure", _) => (Protocol::OpenAi, None, Some("AZURE_OPENAI_API_KEY")),
        ("ollama", _) => (Protocol::OpenAi, Some("http://localhost:11434/v1"), None),
        _ => bail!(
            "unknown provider {id:?}: use one of {} or configure providers.{id} with \"type\" and \"baseUrl\"",
            BUILTIN.join(", ")
        ),
    })
}

/// Whether glrs knows provider `id` (built in, or configured with a type),
/// without resolving its key: a model named on the command line is checked
/// before there is anything to do with it (issue 24).
pub fn check_known(config: &Config, id: &str) -> Result<()> {
    protocol_of(id, config.providers.get(id).and_then(|p| p.kind)).map(drop)
}

/// The builder of every HTTP client (the providers', the MCP servers'):
/// rustls with ring's cryptography, installed once as the process's
/// provider first (reqwest is built without one of its own, see
/// Cargo.toml), and the system's roots read only at the first TLS
/// handshake (see [`tls`]).
pub fn http_client() -> reqwest::ClientBuilder {
    install_tls();
    let builder = reqwest::Client::builder();
    match tls::client_config() {
        Some(config) => builder.tls_backend_preconfigured(config),
        None => builder,
    }
}

/// Make ring's cryptography the process's rustls provider, once; a client
/// that reqwest or rmcp builds itself finds it there.
pub fn install_tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // Fails only when a provider is installed already: that one stays.
    ONCE.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
}
