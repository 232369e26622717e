//! A Svod example program: `tracing_subscriber::fmt::init()` and one realize, outside any test harness.
//! `SVOD_EMITTER_PANIC=main` panics on the main thread after it (an example's failed check);
//! `SVOD_EMITTER_PANIC=optimizer` panics in the optimizer (a rayon worker under SVOD_THREADS > 1).
use svod_emitter::{program, realize, scenario, setup, truth, Backend};

fn main() {
    setup::example_tracing();
    truth::record("program-start", serde_json::json!({"program": "realize"}));
    let mut p = program(scenario::seed(), 4, Backend::Llvm);
    let panic = std::env::var("SVOD_EMITTER_PANIC").unwrap_or_default();
    if panic == "optimizer" {
        p.panic_at = Some((2, "14-devectorize".to_owned()));
    }
    let names = realize(None, &p, 0);
    if panic == "main" {
        panic!("realized {} kernels, expected {}", names.len(), names.len() + 1);
    }
    truth::record("program-end", serde_json::json!({"program": "realize", "outcome": "ok"}));
}
