//! The one tokio runtime of a process, built here and nowhere else.
//!
//! A program's edge (`cli`) builds it once and runs its work in
//! [`tokio::runtime::Runtime::block_on`]; everything that runs beside that
//! work is a task on it: the MCP servers, the signal listener, the REPL's
//! key reader and spinner. The runtime has worker threads of its own, so
//! those tasks keep running while the main future waits on something, and a
//! blocking call that cannot be avoided goes through one of the two
//! helpers here, so Esc and signals always get through:
//! - [`blocking`]: work that borrows what it works on (an fsync of the
//!   session, a lock wait, a child program the REPL runs) runs in place,
//!   after the worker's other tasks are handed to another thread;
//! - [`off_thread`]: work that owns what it needs (a file tool's I/O, a
//!   walk of a huge tree) runs on the blocking pool, and the await can be
//!   dropped (Esc) without waiting for it; the work is told, so loops stop
//!   early.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How many worker threads run the tasks beside the main future.
const WORKERS: usize = 2;

/// How long the tasks still running at the end get to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

/// Build the process's runtime.
pub fn build() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(WORKERS).thread_name("glrs-runtime").enable_all().build()
}

/// Run `work`, which may block, without stalling the runtime's other tasks
/// (outside a multi-threaded runtime it simply runs).
pub fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Sets its flag when dropped: the work stops when its await is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Work run by [`off_thread`] that panicked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Panicked(String);

/// Run `work`, which may block, on the runtime's blocking pool; it gets a
/// flag that is set when the await is dropped (then its result is
/// thrown away), for loops to stop early.
pub async fn off_thread<T: Send + 'static>(
    work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
) -> Result<T, Panicked> {
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(stop.clone());
    tokio::task::spawn_blocking(move || work(&stop)).await.map_err(|e| Panicked(e.to_string()))
}

/// End the runtime: what is still running gets [`SHUTDOWN_GRACE`] to stop.
/// Dropping a runtime would wait without bound for its blocking threads.
pub fn shut_down(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocking_work_runs_inside_and_outside_the_runtime() {
        assert_eq!(super::blocking(|| 1), 1, "outside any runtime");
        let runtime = super::build().unwrap();
        let out = runtime.block_on(async {
            let beside = tokio::spawn(async { 2 });
            // The task beside runs while the main future blocks.
            let blocked = super::blocking(|| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                1
            });
            (blocked, beside.await.unwrap())
        });
        assert_eq!(out, (1, 2));
        super::shut_down(runtime);
    }

    #[test]
    fn work_off_the_thread_is_told_when_its_await_is_dropped() {
        use std::sync::atomic::Ordering;
        let runtime = super::build().unwrap();
        let (told, saw) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        runtime.block_on(async {
            assert_eq!(super::off_thread(|_| 1).await.unwrap(), 1);
            let (started, running) = tokio::sync::oneshot::channel();
            let work = super::off_thread(move |stop| {
                let _ = started.send(());
                // Until the test has dropped the await (bounded: the test
                // fails rather than hangs).
                let _ = released.recv_timeout(std::time::Duration::from_secs(10));
                let _ = told.send(stop.load(Ordering::SeqCst));
            });
            tokio::select! {
                _ = work => panic!("the work ended by itself"),
                _ = running => {}
            }
            let _ = release.send(());
            let panicked = super::off_thread(|_| -> u8 { panic!("boom") }).await;
            assert!(panicked.is_err());
        });
        let told = saw.recv_timeout(std::time::Duration::from_secs(20)).expect("the work ended");
        assert!(told, "the work saw its flag set");
        super::shut_down(runtime);
    }
}
