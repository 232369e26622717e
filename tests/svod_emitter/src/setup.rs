//! The subscribers Svod configures. Tests: `schedule/src/testing.rs` `setup_test_tracing` (npatsakula/morok
//! 8752e8fd; the same in svod): `fmt().json().with_current_span(false).with_span_list(false)
//! .with_env_filter(EnvFilter::from_default_env()).with_test_writer().init()`. Examples: `tracing_subscriber::
//! fmt::init()` (Full text format on stdout, ANSI on). `SVOD_EMITTER_FORMAT` picks another of tracing's formats for
//! the corpus: `json`, `full` or `compact`, then any of `+ids` (thread ids), `+names` (thread names), `-ansi`.

use tracing_subscriber::EnvFilter;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Json,
    Full,
    Compact,
}

pub struct Format {
    pub kind: Kind,
    pub ids: bool,
    pub names: bool,
    pub ansi: bool,
}

impl Format {
    pub fn from_env() -> Option<Format> {
        let spec = std::env::var("SVOD_EMITTER_FORMAT").ok();
        let spec = spec.as_deref().filter(|s| !s.is_empty())?;
        let kind = match spec.split(['+', '-']).next().unwrap_or("") {
            "json" => Kind::Json,
            "full" => Kind::Full,
            "compact" => Kind::Compact,
            other => panic!("SVOD_EMITTER_FORMAT: unknown format {other:?}"),
        };
        Some(Format { kind, ids: spec.contains("+ids"), names: spec.contains("+names"), ansi: !spec.contains("-ansi") })
    }
}

/// `setup_test_tracing`, or the format `SVOD_EMITTER_FORMAT` names (on the test writer).
pub fn setup_test_tracing() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| match Format::from_env() {
        None => tracing_subscriber::fmt()
            .json()
            .with_current_span(false)
            .with_span_list(false)
            .with_env_filter(EnvFilter::from_default_env())
            .with_test_writer()
            .init(),
        Some(f) => {
            let b = tracing_subscriber::fmt()
                .with_env_filter(EnvFilter::from_default_env())
                .with_test_writer()
                .with_thread_ids(f.ids)
                .with_thread_names(f.names)
                .with_ansi(f.ansi);
            match f.kind {
                Kind::Json => b.json().with_current_span(false).with_span_list(false).init(),
                Kind::Full => b.init(),
                Kind::Compact => b.compact().init(),
            }
        }
    });
    crate::truth::install_panic_hook();
}

/// An example's `tracing_subscriber::fmt::init()`, or the format `SVOD_EMITTER_FORMAT` names (on stdout).
pub fn example_tracing() {
    match Format::from_env() {
        None => tracing_subscriber::fmt::init(),
        Some(f) => {
            let b = tracing_subscriber::fmt()
                .with_env_filter(EnvFilter::from_default_env())
                .with_thread_ids(f.ids)
                .with_thread_names(f.names)
                .with_ansi(f.ansi);
            match f.kind {
                Kind::Json => b.json().init(),
                Kind::Full => b.init(),
                Kind::Compact => b.compact().init(),
            }
        }
    }
    crate::truth::install_panic_hook();
}
