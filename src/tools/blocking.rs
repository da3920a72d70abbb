//! File work off the async runtime (issue 26: no blocking call on it). A
//! file tool's I/O runs on tokio's blocking pool, so a slow disk, a huge
//! tree or anything else that stalls it never holds the runtime thread:
//! Esc, Ctrl-C and signals still get through, and the call is dropped.
//! The work gets a flag that is set when the call is dropped, for loops
//! (the walkers) to stop early.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::ToolOutput;

/// Sets its flag when dropped: the work stops when the call is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Run `work` on a blocking thread; it gets a flag set if the call is dropped.
pub async fn blocking(work: impl FnOnce(&AtomicBool) -> ToolOutput + Send + 'static) -> ToolOutput {
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(stop.clone());
    match tokio::task::spawn_blocking(move || work(&stop)).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("the tool failed: {e}")),
    }
}
