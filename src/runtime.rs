//! The one tokio runtime of a process, built here and nowhere else.
//!
//! A program's edge (`cli`) builds it once and runs its work in
//! [`tokio::runtime::Runtime::block_on`]; everything that runs beside that
//! work is a task on it: the MCP servers, the signal listener, the REPL's
//! key reader and spinner. The runtime has worker threads of its own, so
//! those tasks keep running while the main future waits on something, and a
//! blocking call that cannot be avoided (an fsync, a lock wait, a child
//! program the REPL runs) goes through [`blocking`], which hands the
//! worker's other tasks to another thread first: Esc and signals always
//! get through.

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
}
