//! The knobs a scenario sets beside Svod's own (RUST_LOG, SVOD_THREADS, SVOD_PER_STAGE_UOPS, SVOD_DUMP_STAGE):
//! `SVOD_EMITTER_SEED` (the program), `SVOD_EMITTER_STALL` (stop forever inside the N-th `[per-stage]` line, after
//! `node_count=`, for a scenario that kills the process there).

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
