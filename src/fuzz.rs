//! The property-test harness shared by the parsers' fuzz tests (the
//! session file, artifact front matter, the SSE stream): a small seeded
//! generator and a loop that runs a property for a bounded time and names
//! the seed that replays a failure. Test-only; a leaf module, so any layer
//! may use it.
//!
//! `GLRS_FUZZ_SECS` sets how long each property runs (default 2 s; CI runs
//! the default), `GLRS_FUZZ_SEED` replays a failing seed (printed on
//! failure).

use std::time::{Duration, Instant};

/// xorshift64*: enough randomness for generating inputs, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Run `case` with fresh seeds until the time budget is spent; a failure
/// names the seed that replays it.
pub(crate) fn for_a_while(name: &str, case: impl Fn(&mut Rng)) {
    let secs = std::env::var("GLRS_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let budget = Duration::from_secs_f64(secs);
    let mut seed = std::env::var("GLRS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        (nanos as u64) | 1
    });
    let start = Instant::now();
    let mut runs = 0u64;
    while runs == 0 || start.elapsed() < budget {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&mut Rng(seed))));
        if let Err(e) = result {
            panic!("{name}: failed with GLRS_FUZZ_SEED={seed} after {runs} runs: {e:?}");
        }
        seed = Rng(seed).next() | 1;
        runs += 1;
    }
    eprintln!("{name}: {runs} runs in {:.1} s without a failure", start.elapsed().as_secs_f64());
}
