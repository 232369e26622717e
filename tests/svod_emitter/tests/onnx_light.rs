//! Svod's ONNX light-model tests (onnx/build.rs `generate_light_tests`).
use svod_emitter::{onnx_light_tests, program, realize, scenario};

onnx_light_tests! {
    fn light_model(backend, test) {
        let p = program(scenario::seed() + 5, 4, backend);
        realize(Some(test), &p, 0);
    }
}
