//! Issue 33 item 9: a model server that is down is tried by the turn (with
//! its retries) and then left alone: a resumed turn that would also flush
//! and compact does not try it again for each. Counted in connections to a
//! listener that accepts and drops every one, never timed.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use crate::support::*;
use glrs::store::{Append, Entry};

/// A server that is up but answers nothing: every connection is accepted
/// and dropped at once. Counts them; stopped (and its thread joined) on drop.
struct Dead {
    port: u16,
    count: Arc<AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Dead {
    fn start() -> Dead {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, s) = (count.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                c.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Dead { port, count, stop, thread: Some(thread) }
    }

    /// Connections since the last call.
    fn take(&self) -> usize {
        self.count.swap(0, Ordering::SeqCst)
    }
}

impl Drop for Dead {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // One more connection wakes the accept loop, which then ends.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_dead_server_is_tried_once_by_a_turn_that_would_also_flush_and_compact() {
    let ts = TestStore::new();
    let dead = Dead::start();
    let project = ts.dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    // A 4,000-token window: the trigger at 3,000, the flush from 2,000.
    ts.config(json!({
        "keepRecentTokens": 100,
        "tools": {"enabled": false},
        "memoryFlush": {"enabled": true, "softThresholdTokens": 1000},
        "providers": {"openai": {"baseUrl": format!("http://127.0.0.1:{}/v1", dead.port),
                                 "models": {"gpt-4.1": {"metadata": {"context": 4000}}}}},
        "retry": {"attempts": 3, "baseDelayMs": 10},
    }));
    let plain = ts.chat().current_dir(&project).args(["-m", "openai/gpt-4.1", "-p", "hello"]).output().unwrap();
    assert_eq!(plain.status.code(), Some(1), "{}", stderr_of(&plain));
    let plain_tries = dead.take();
    assert_eq!(plain_tries, 3, "the turn's own retries: {}", stderr_of(&plain));
    // A session over the trigger, with turns enough for a cut.
    let id = ts.store.create(project.to_str().unwrap()).unwrap();
    let mut change = Append::new();
    for n in 0..4 {
        change = change.entry(&user(&long(&format!("turn {n}")))).unwrap();
        let reply = Entry::Assistant {
            at: "2026-11-01T10:00:03.000Z".into(),
            text: long("answer").into(),
            model: "openai/gpt-4.1".into(),
            tool_calls: vec![],
            stop_reason: glrs::store::StopReason::Stop,
        };
        change = change.entry(&reply).unwrap();
    }
    ts.store.append(&id, change.set("model", "openai/gpt-4.1").set("contextTokens", 3_500)).unwrap();
    let resumed = ts.chat().current_dir(&project).args(["--resume", id.as_str(), "-p", "again"]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(1), "{}", stderr_of(&resumed));
    let resumed_tries = dead.take();
    let err = stderr_of(&resumed);
    assert!(
        resumed_tries * 2 <= plain_tries * 3,
        "{resumed_tries} connections for a resumed turn, {plain_tries} for a plain one: {err}"
    );
    assert!(err.contains("did not answer") || err.contains("cannot reach"), "{err}");
}
