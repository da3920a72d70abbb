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
//!
//! A server announcing changes without end must not hold the chat: a
//! notification whose refresh an earlier listing already covered lists
//! nothing (they coalesce), a model request waits only for the refreshes
//! under way when it began (at most once, never for the next ones), and a
//! server announcing more than [`STORM_COUNT`] changes within
//! [`STORM_WINDOW`] is stopped and reported.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{ClientConfig, JsonRpcMessage, ServerNotification};
use rmcp::service::{NotificationContext, RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, Peer};

use super::{Shared, State};

/// More list-changed notifications than this within [`STORM_WINDOW`] make
/// a storm.
pub const STORM_COUNT: u64 = 50;
/// The window [`STORM_COUNT`] is counted over.
pub const STORM_WINDOW: Duration = Duration::from_secs(1);

/// The list-changed notifications of one server: heard and handled.
#[derive(Debug, Default)]
pub(super) struct Refresh {
    /// When the current storm window began, and what it has counted.
    window: Mutex<Option<(Instant, u64)>>,
    /// It announced a storm.
    stormed: AtomicBool,
    /// Counted by the transport as they arrive.
    heard: AtomicU64,
    /// The count the last finished refresh had seen.
    done: AtomicU64,
    /// One refresh (or the first listing) at a time, so an older listing
    /// never replaces a newer one.
    pub(super) one_at_a_time: tokio::sync::Mutex<()>,
}

impl Refresh {
    /// The refreshes heard so far have not all finished: `target` is what
    /// [`Refresh::heard`] said when the waiting began.
    pub(super) fn pending_until(&self, target: u64) -> bool {
        self.done.load(Ordering::SeqCst) < target
    }

    /// Count one notification as it arrives, and notice a storm.
    fn count(&self) {
        self.heard.fetch_add(1, Ordering::SeqCst);
        let now = Instant::now();
        if let Ok(mut window) = self.window.lock() {
            let (start, n) = match *window {
                Some((start, n)) if now.duration_since(start) <= STORM_WINDOW => (start, n + 1),
                _ => (now, 1),
            };
            *window = Some((start, n));
            if n > STORM_COUNT {
                self.stormed.store(true, Ordering::SeqCst);
            }
        }
    }

    /// It announced more than [`STORM_COUNT`] changes within [`STORM_WINDOW`].
    pub(super) fn stormed(&self) -> bool {
        self.stormed.load(Ordering::SeqCst)
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
        // What this notification asks for: counted before it was handed on.
        let target = refresh.heard();
        if refresh.stormed() {
            let why = format!(
                "it announced tools/list_changed more than {STORM_COUNT} times within {} s",
                STORM_WINDOW.as_secs_f64()
            );
            self.lost(index, why);
            refresh.caught_up(target);
            return self.bump();
        }
        let _one = refresh.one_at_a_time.lock().await;
        if !refresh.pending_until(target) {
            // A listing since it arrived has covered it.
            return;
        }
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
            self.refresh.count();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
