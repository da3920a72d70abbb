//! A stdio server's transport: `rmcp`'s line transport over the child's
//! pipes, with its stdout read through [`Watched`], which notices a message
//! longer than the SDK's line limit (16 MB). The SDK drops such a message
//! and reads on, so without this the call it answered would wait out its
//! whole `toolTimeoutSec`; with it, the calls waiting on that server fail at
//! once, saying why ([`Oversized`]).

use std::borrow::Cow;
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How many messages a server sent past the line limit: calls watch it.
#[derive(Debug, Clone)]
pub struct Oversized(tokio::sync::watch::Sender<u64>);

impl Default for Oversized {
    fn default() -> Self {
        Oversized(tokio::sync::watch::Sender::new(0))
    }
}

impl Oversized {
    /// A receiver that sees the next message past the limit.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }

    fn seen(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// The most bytes of one message the SDK reads (the limit it drops past).
pub const MAX_MESSAGE: usize = DEFAULT_MAX_LINE_LENGTH;

/// A reader that counts the length of the current line and tells
/// [`Oversized`] once a line passes [`MAX_MESSAGE`] bytes.
pub struct Watched<R> {
    inner: R,
    line: usize,
    oversized: Oversized,
}

impl<R> Watched<R> {
    /// Watch `inner`.
    pub fn new(inner: R, oversized: Oversized) -> Self {
        Watched { inner, line: 0, oversized }
    }

    fn scan(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        loop {
            let (part, ended) = match rest.iter().position(|b| *b == b'\n') {
                Some(at) => (&rest[..at], Some(at)),
                None => (rest, None),
            };
            let before = self.line;
            self.line = self.line.saturating_add(part.len());
            if before <= MAX_MESSAGE && self.line > MAX_MESSAGE {
                self.oversized.seen();
            }
            match ended {
                Some(at) => {
                    self.line = 0;
                    rest = &rest[at + 1..];
                }
                None => return,
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let start = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            self.scan(&buf.filled()[start..]);
        }
        polled
    }
}

/// A running stdio server: the child, and the transport over its pipes.
pub struct StdioProcess {
    transport: AsyncRwTransport<RoleClient, Watched<ChildStdout>, ChildStdin>,
    /// Held so it is killed if this is dropped (`kill_on_drop`); its group
    /// is stopped by the caller.
    _child: Child,
}

impl StdioProcess {
    /// Talk to `child` over its stdin and stdout (both piped).
    pub fn new(mut child: Child, oversized: Oversized) -> std::io::Result<Self> {
        let missing = || std::io::Error::other("the server's stdin or stdout is not a pipe");
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let transport = AsyncRwTransport::new_client(Watched::new(stdout, oversized), stdin);
        Ok(StdioProcess { transport, _child: child })
    }
}

impl Transport<RoleClient> for StdioProcess {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.transport.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn a_line_past_the_limit_is_seen_once_and_the_next_one_is_not() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let mut text = vec![b'x'; MAX_MESSAGE + 10];
            text.extend_from_slice(b"\n{\"short\": 1}\n");
            text.extend(std::iter::repeat_n(b'y', MAX_MESSAGE));
            text.push(b'\n');
            let oversized = Oversized::default();
            let mut watch = oversized.watch();
            let mut reader = Watched::new(&text[..], oversized);
            let mut sink = Vec::new();
            reader.read_to_end(&mut sink).await.unwrap();
            assert_eq!(sink, text, "the bytes pass through unchanged");
            assert!(watch.has_changed().unwrap());
            assert_eq!(*watch.borrow_and_update(), 1, "one line past the limit; one exactly at it is not");
        });
    }
}
