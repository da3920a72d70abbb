//! A server's `notifications/tools/list_changed` (SPEC 15): glrs's client
//! handler hears it and lists the server's tools again, so what the model
//! is offered follows tools the server adds or removes.
//!
//! rmcp runs notification handlers in tasks of their own, so a call's
//! result can reach the chat before the handler has even begun. The
//! transport therefore counts each notification as it arrives, before any
//! later message (the call's result) is read, and the handler records
//! which count it has caught up with: while the two differ a refresh is
//! under way, and the next model request waits for it (bounded), so it
//! sees the new tools.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{ClientConfig, JsonRpcMessage, ServerNotification};
use rmcp::service::{NotificationContext, RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, Peer};

use super::{Shared, State};

/// The list-changed notifications of one server: heard and handled.
#[derive(Debug, Default)]
pub(super) struct Refresh {
    /// Counted by the transport as they arrive.
    heard: AtomicU64,
    /// The count the last finished refresh had seen.
    done: AtomicU64,
    /// One refresh (or the first listing) at a time, so an older listing
    /// never replaces a newer one.
    pub(super) one_at_a_time: tokio::sync::Mutex<()>,
}

impl Refresh {
    /// A notification was heard and its refresh has not finished.
    pub(super) fn pending(&self) -> bool {
        self.done.load(Ordering::SeqCst) < self.heard.load(Ordering::SeqCst)
    }

    /// Where the refresh starting now will have caught up to.
    pub(super) fn heard(&self) -> u64 {
        self.heard.load(Ordering::SeqCst)
    }

    /// A refresh that began at `heard` has finished.
    pub(super) fn caught_up(&self, heard: u64) {
        self.done.fetch_max(heard, Ordering::SeqCst);
    }
}

impl Shared {
    /// The server said its tools changed: list them again, and offer the
    /// new list from the next model request on.
    pub(super) async fn relist(&self, index: usize, peer: &Peer<RoleClient>) {
        let found =
            self.entries.lock().ok().and_then(|e| e.get(index).map(|e| (e.refresh.clone(), e.server.startup_timeout)));
        let Some((refresh, timeout)) = found else { return };
        let _one = refresh.one_at_a_time.lock().await;
        let heard = refresh.heard();
        let running = self.entries.lock().is_ok_and(|e| e.get(index).is_some_and(|e| e.state == State::Running));
        if running {
            match tokio::time::timeout(timeout, peer.list_all_tools()).await {
                Ok(Ok(listed)) => {
                    let tools = self.offer(index, listed);
                    self.set(index, |e| e.tools = tools);
                }
                Ok(Err(e)) => self.lost(index, format!("listing its changed tools failed: {e}")),
                Err(_) => {
                    self.lost(index, format!("it did not list its changed tools within {} s", timeout.as_secs_f64()))
                }
            }
        }
        refresh.caught_up(heard);
        self.bump();
    }
}

/// The client side of one server's connection.
pub(super) struct Listener {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        super::connect::client_config()
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let peer: Peer<RoleClient> = context.peer;
        self.shared.relist(self.index, &peer).await;
    }
}

/// A transport that counts list-changed notifications as they arrive.
pub(super) struct Counted<T> {
    pub(super) inner: T,
    pub(super) refresh: Arc<Refresh>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(note)) = &message
            && matches!(note.notification, ServerNotification::ToolListChangedNotification(_))
        {
            self.refresh.heard.fetch_add(1, Ordering::SeqCst);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
