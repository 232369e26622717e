//! What Svod prints, with the same macros, targets, messages and fields (npatsakula/svod 3e06443b):
//! * `schedule/src/optimizer/mod.rs`: TRACE `kernel initial` {ast.initial, node_count} (twice per kernel), DEBUG
//!   `pre-opt: ...` {ast.pre, node_count, elapsed_ms} inside `apply_pre_optimization`'s span
//!   (`#[tracing::instrument(skip_all)]`), DEBUG post-opt stages {ast.optimized, node_count, elapsed_ms}, and
//!   `print_stage`: `eprintln!("[per-stage] {} : node_count={}")`, `eprintln!("[dump-stage] {} :")`,
//!   `eprintln!("{}", node.tree())`, `eprintln!("[dump-stage] {} : end")`.
//! * `schedule/src/rangeify/transforms.rs`: DEBUG `earliest rewrites complete` and `Stage 0: range assignment +
//!   apply rangeify complete` {uop.tree, node_count, elapsed_ms}, once per schedule.
//! * `codegen/src/llvm/text/mod.rs`: TRACE `llvm codegen: final generated code` {generated_code} on
//!   `svod_codegen::llvm::text`; `codegen/src/c/mod.rs`: TRACE `c codegen: final generated code` {generated_c} on
//!   `svod_codegen::c`.
//!
//! Each print is recorded in the truth while the stream's lock is held (see truth.rs).

use crate::truth::{self, current, record};
use serde_json::json;
use std::fmt;
use std::io::Write;

pub const OPT: &str = "svod_schedule::optimizer";
pub const RANGEIFY: &str = "svod_schedule::rangeify::transforms";
pub const LLVM: &str = "svod_codegen::llvm::text";
pub const C: &str = "svod_codegen::c";

/// Which tree field a stage event carries.
#[derive(Clone, Copy)]
pub enum Field {
    Initial,
    Pre,
    Optimized,
}

fn stage_record(source: &str, label: &str, message: Option<&str>, node_count: usize, level: &str) {
    let context = current();
    record(
        source,
        json!({"test": context.test, "kernel": context.kernel, "schedule": context.schedule, "label": label, "message": message,
               "node_count": node_count, "level": level}),
    );
    truth::CURRENT.with(|c| c.borrow_mut().last_stage = Some(label.to_owned()));
}

/// One optimizer stage event; `label` is the truth's name for the stage (the post-opt label, `pre-N`, or
/// `kernel-initial-pre` / `kernel-initial-post`).
pub fn stage_event(field: Field, message: &'static str, label: &str, tree: String, node_count: usize, elapsed_ms: u64) {
    let out = std::io::stdout().lock();
    let (enabled, level) = match field {
        Field::Initial => (tracing::enabled!(target: OPT, tracing::Level::TRACE), "TRACE"),
        _ => (tracing::enabled!(target: OPT, tracing::Level::DEBUG), "DEBUG"),
    };
    if !enabled {
        return;
    }
    match field {
        Field::Initial => tracing::trace!(target: OPT, { ast.initial = tree, node_count = node_count }, "kernel initial"),
        Field::Pre => tracing::debug!(target: OPT, { ast.pre = tree, node_count = node_count,
                                      elapsed_ms = elapsed_ms }, "{}", message),
        Field::Optimized => tracing::debug!(target: OPT, { ast.optimized = tree, node_count = node_count,
                                            elapsed_ms = elapsed_ms }, "{}", message),
    }
    stage_record("event", label, Some(message), node_count, level);
    drop(out);
}

/// Rangeify's schedule-level events (no kernel).
pub fn rangeify_event(message: &'static str, tree: String, node_count: usize) {
    let out = std::io::stdout().lock();
    if !tracing::enabled!(target: RANGEIFY, tracing::Level::DEBUG) {
        return;
    }
    tracing::debug!(target: RANGEIFY, { uop.tree = tree, node_count = node_count, elapsed_ms = 0u64 }, "{}", message);
    let context = current();
    record("schedule-event", json!({"test": context.test, "schedule": context.schedule, "message": message, "node_count": node_count}));
    drop(out);
}

/// The renderer's generated code, naming the kernel (its final name).
pub fn code_event(backend: crate::pipeline::Backend, name: &str, code: String) {
    let out = std::io::stdout().lock();
    let target = match backend {
        crate::pipeline::Backend::Llvm => LLVM,
        crate::pipeline::Backend::Clang => C,
    };
    let enabled = match backend {
        crate::pipeline::Backend::Llvm => tracing::enabled!(target: LLVM, tracing::Level::TRACE),
        crate::pipeline::Backend::Clang => tracing::enabled!(target: C, tracing::Level::TRACE),
    };
    if !enabled {
        return;
    }
    match backend {
        crate::pipeline::Backend::Llvm => {
            tracing::trace!(target: LLVM, generated_code = code, "llvm codegen: final generated code")
        }
        crate::pipeline::Backend::Clang => tracing::trace!(target: C, generated_c = code, "c codegen: final generated code"),
    }
    let context = current();
    record("code", json!({"test": context.test, "kernel": context.kernel, "schedule": context.schedule, "name": name,
                           "target": target}));
    drop(out);
}

/// A count whose `Display` may stop the process mid-line (the killed-job scenario): `eprintln!` has written
/// `[per-stage] LABEL : node_count=` by then.
struct Count(usize);

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::scenario::maybe_stall();
        write!(f, "{}", self.0)
    }
}

/// `print_stage`: the `[per-stage]` line and the `[dump-stage]` block, as the environment asks.
pub fn print_stage(label: &str, graph: &crate::ir::UOp, bare: &str) {
    let node_count = graph.node_count();
    let tree = || graph.tree();
    if std::env::var("SVOD_PER_STAGE_UOPS").is_ok() {
        let err = std::io::stderr().lock();
        eprintln!("[per-stage] {} : node_count={}", label, Count(node_count));
        stage_record("per-stage", label, None, node_count, "");
        drop(err);
    }
    if let Ok(prefix) = std::env::var("SVOD_DUMP_STAGE") {
        if label.starts_with(prefix.as_str()) {
            // three `eprintln!`s, as Svod's: another thread's line may land between them; only the header is
            // recorded under the lock (the order of headers is stderr's)
            let err = std::io::stderr().lock();
            eprintln!("[dump-stage] {} :", label);
            stage_record("dump-stage", label, None, node_count, "");
            drop(err);
            eprintln!("{}", tree());
            eprintln!("[dump-stage] {} : end", label);
        }
    }
    dump_canonical(label, graph, Some(bare));
}

/// `dump_canonical_stage`: `[dump-canonical] STAGE :`, the document, `[dump-canonical] STAGE : end`, three
/// `eprintln!`s (only the header recorded under the lock, as for `[dump-stage]`). `name`: the kernel's name as the
/// document knows it (bare in the optimize phase, final in `program`/`linearized`); None for schedule documents.
pub fn dump_canonical(stage: &str, graph: &crate::ir::UOp, name: Option<&str>) {
    let Ok(prefix) = std::env::var("SVOD_DUMP_CANONICAL_STAGE") else { return };
    if !stage.starts_with(prefix.as_str()) {
        return;
    }
    let err = std::io::stderr().lock();
    eprintln!("[dump-canonical] {stage} :");
    let context = current();
    record(
        "dump-canonical",
        json!({"test": context.test, "kernel": context.kernel, "schedule": context.schedule, "label": stage,
               "name": name, "node_count": graph.node_count()}),
    );
    // a document is a stage of the kernel as much as a [dump-stage] tree is (docs/svod.md: the last stage before a panic)
    truth::CURRENT.with(|c| c.borrow_mut().last_stage = Some(stage.to_owned()));
    drop(err);
    eprintln!("{}", crate::ir::canonical(stage, graph, name));
    eprintln!("[dump-canonical] {stage} : end");
}

/// A line on stderr that is not a stage (a skip line), recorded.
pub fn skip_line(text: &str) {
    let err = std::io::stderr().lock();
    eprintln!("{text}");
    let context = current();
    record("skip", json!({"test": context.test, "text": text}));
    drop(err);
    let _ = std::io::stderr().flush();
}
