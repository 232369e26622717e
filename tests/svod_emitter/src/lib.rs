//! A real-emitter corpus for tgstore's Svod readers (issue 44): prints what Svod prints (emit.rs, pipeline.rs, from
//! Svod's source) through the crates Svod prints through, and writes the truth of what it printed (truth.rs).
//! The integration tests (tests/*.rs) are Svod's test families; examples/realize.rs is a Svod example program.

pub mod emit;
pub mod ir;
pub mod pipeline;
pub mod scenario;
pub mod setup;
pub mod truth;

pub use pipeline::{program, realize, Backend, Program};
use serde_json::json;

/// The libtest name of a test in module `module_path` (the integration test crate's name first): `ops::sum_rows`
/// and `llvm` -> `sum_rows::llvm`.
pub fn test_name(module_path: &str, variant: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::{variant}"),
        None => variant.to_owned(),
    }
}

/// A test body as Svod's tests run one: tracing set up, the test recorded as started and, if it returns, ended ok.
pub fn run_test(name: &str, body: impl FnOnce(&str)) {
    setup::setup_test_tracing();
    truth::set_current(truth::Context { test: Some(name.to_owned()), kernel: None, schedule: 0, last_stage: None });
    truth::record("test-start", json!({"test": name}));
    body(name);
    truth::record("test-end", json!({"test": name, "outcome": "ok"}));
}

/// A GPU variant without its device: Svod's skip line on stderr, and the test passes.
pub fn skip_test(name: &str, line: &str) {
    setup::setup_test_tracing();
    truth::set_current(truth::Context { test: Some(name.to_owned()), kernel: None, schedule: 0, last_stage: None });
    truth::record("test-start", json!({"test": name}));
    emit::skip_line(line);
    truth::record("test-end", json!({"test": name, "outcome": "skipped", "skip_line": line}));
}

/// `codegen_tests!` (npatsakula/svod 3e06443b, `tensor/src/config.rs`): one module per test with `clang`, `llvm`,
/// and `amd`, `metal`, `cuda` variants that print their skip line when the device is missing (always, here).
#[macro_export]
macro_rules! codegen_tests {
    ($(fn $name:ident($backend:ident, $test:ident) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn clang() {
                $crate::run_test(&$crate::test_name(module_path!(), "clang"), |$test: &str| {
                    let $backend = $crate::Backend::Clang;
                    $body
                })
            }
            #[test]
            fn llvm() {
                $crate::run_test(&$crate::test_name(module_path!(), "llvm"), |$test: &str| {
                    let $backend = $crate::Backend::Llvm;
                    $body
                })
            }
            #[test]
            fn amd() {
                $crate::skip_test(&$crate::test_name(module_path!(), "amd"),
                                  "amd codegen_tests variant: skipped (no supported AMD GPU)")
            }
            #[test]
            fn metal() {
                $crate::skip_test(&$crate::test_name(module_path!(), "metal"),
                                  "metal codegen_tests variant: skipped (no Metal device)")
            }
            #[test]
            fn cuda() {
                $crate::skip_test(&$crate::test_name(module_path!(), "cuda"),
                                  "cuda codegen_tests variant: skipped (no CUDA device)")
            }
        }
    )*};
}

/// The ONNX light-model tests `onnx/build.rs` generates (npatsakula/svod 3e06443b, `write_backend_test`): `clang`,
/// `llvm`, and `amd`, `cuda` variants whose skip lines differ from `codegen_tests!`'s.
#[macro_export]
macro_rules! onnx_light_tests {
    ($(fn $name:ident($backend:ident, $test:ident) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn clang() {
                $crate::run_test(&$crate::test_name(module_path!(), "clang"), |$test: &str| {
                    let $backend = $crate::Backend::Clang;
                    $body
                })
            }
            #[test]
            fn llvm() {
                $crate::run_test(&$crate::test_name(module_path!(), "llvm"), |$test: &str| {
                    let $backend = $crate::Backend::Llvm;
                    $body
                })
            }
            #[test]
            fn amd() {
                $crate::skip_test(&$crate::test_name(module_path!(), "amd"),
                                  "AMD ONNX variant skipped: no active supported AMD device")
            }
            #[test]
            fn cuda() {
                $crate::skip_test(&$crate::test_name(module_path!(), "cuda"),
                                  "CUDA ONNX variant skipped: no active CUDA device")
            }
        }
    )*};
}
