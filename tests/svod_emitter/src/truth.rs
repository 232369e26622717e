//! The truth beside the log: one JSON object a line (to the file named by `SVOD_EMITTER_TRUTH`), written as the
//! program prints, for each thing it printed (which test, kernel, stage label, node count, thread), each kernel's
//! name, each test's end and each panic, as the program knew them. Written at once (unbuffered), so a killed
//! process leaves the truth of what it printed.
//!
//! Order: a record of something printed is written while the program holds the lock of the stream it printed to
//! (std's stdout/stderr locks are reentrant, so the print inside takes it again), so the records of one stream are
//! in that stream's order: the k-th event in stdout is the k-th `event` record, the k-th `[per-stage]` in stderr the
//! k-th `per-stage` record.

use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

static SEQ: AtomicU64 = AtomicU64::new(0);

fn file() -> &'static Option<Mutex<File>> {
    static FILE: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::var_os("SVOD_EMITTER_TRUTH")?;
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("truth file");
        Some(Mutex::new(file))
    })
}

/// What the current thread is working on: the test, the kernel (schedule index) and the last stage it printed.
#[derive(Clone, Default)]
pub struct Context {
    pub test: Option<String>,
    pub kernel: Option<usize>,
    pub schedule: usize,
    pub last_stage: Option<String>,
}

thread_local! {
    pub static CURRENT: RefCell<Context> = RefCell::new(Context::default());
}

pub fn current() -> Context {
    CURRENT.with(|c| c.borrow().clone())
}

pub fn set_current(context: Context) {
    CURRENT.with(|c| *c.borrow_mut() = context);
}

pub fn thread_name() -> String {
    std::thread::current().name().unwrap_or("<unnamed>").to_owned()
}

/// Write one record: `kind`, the fields given, and the writing thread and sequence number.
pub fn record(kind: &str, fields: Value) {
    let Some(file) = file() else { return };
    let mut object = Map::new();
    object.insert("kind".into(), json!(kind));
    object.insert("seq".into(), json!(SEQ.fetch_add(1, Ordering::SeqCst)));
    object.insert("thread".into(), json!(thread_name()));
    object.insert("pid".into(), json!(std::process::id()));
    if let Value::Object(more) = fields {
        object.extend(more);
    }
    let mut line = serde_json::to_string(&Value::Object(object)).unwrap();
    line.push('\n');
    let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = file.write_all(line.as_bytes());
}

/// Record each panic (thread, FILE:LINE:COL, message, and the test/kernel/stage the thread was in), then print it
/// with Rust's own hook, unchanged.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let location = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned());
            let context = current();
            // the `(TID)` Rust 1.95 prints: the OS thread id (Linux: /proc/thread-self -> PID/task/TID)
            let tid = std::fs::read_link("/proc/thread-self")
                .ok()
                .and_then(|p| p.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<u64>().ok()));
            record(
                "panic",
                json!({"test": context.test, "kernel": context.kernel, "schedule": context.schedule, "last_stage": context.last_stage,
                       "location": location, "message": message, "tid": tid}),
            );
            default(info)
        }));
    });
}
