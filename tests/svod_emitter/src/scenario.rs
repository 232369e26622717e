//! The knobs a scenario sets beside Svod's own (RUST_LOG, SVOD_THREADS, SVOD_PER_STAGE_UOPS, SVOD_DUMP_STAGE):
//! `SVOD_EMITTER_SEED` (the program), `SVOD_EMITTER_STALL` (stop forever inside the N-th `[per-stage]` line, after
//! `node_count=`, for a scenario that kills the process there), `SVOD_EMITTER_KERNEL_0_AFTER_1` (Turns, below).

use std::sync::atomic::{AtomicU64, Ordering};

pub fn seed() -> u64 {
    std::env::var("SVOD_EMITTER_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

static COUNTS_SHOWN: AtomicU64 = AtomicU64::new(0);

pub fn maybe_stall() {
    let Some(at) = std::env::var("SVOD_EMITTER_STALL").ok().and_then(|v| v.parse::<u64>().ok()) else { return };
    if COUNTS_SHOWN.fetch_add(1, Ordering::SeqCst) + 1 == at {
        crate::truth::record("stall", serde_json::json!({"test": crate::truth::current().test}));
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

/// `SVOD_EMITTER_KERNEL_0_AFTER_1=1` (with SVOD_THREADS > 1 and several kernels): the pool optimizes one kernel at
/// a time, in the order 1, 0, 2, 3, ... (as a loaded machine sometimes runs it: the worker that took kernel 0
/// descheduled while another ran kernel 1), and the compile phase runs in schedule order. What it prints is what one
/// thread prints, in an order that is not the schedule's, and a JSON log without thread ids cannot tell the two
/// apart. Each pool job takes the next turn's kernel (not its own), so no worker waits for another's.
pub struct Turns {
    on: bool,
    next: std::sync::Mutex<usize>,
}

impl Turns {
    pub fn new(kernels: usize, threads: usize) -> Turns {
        let on = threads > 1 && kernels > 1 && std::env::var("SVOD_EMITTER_KERNEL_0_AFTER_1").is_ok_and(|v| v == "1");
        Turns { on, next: Default::default() }
    }

    pub fn on(&self) -> bool {
        self.on
    }

    /// Run `work` on the next turn's kernel (1, 0, 2, 3, ...), one kernel at a time.
    pub fn next<R>(&self, work: impl FnOnce(usize) -> R) -> R {
        let mut next = self.next.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let turn = *next;
        *next += 1;
        work(match turn {
            0 => 1,
            1 => 0,
            n => n,
        }) // under the lock: one kernel at a time
    }
}
