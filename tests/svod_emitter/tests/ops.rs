//! Svod's `codegen_tests!` family (tensor/src/test/unit/*.rs): each test realizes programs and checks them.
use svod_emitter::{codegen_tests, program, realize, scenario};

codegen_tests! {
    fn sum_rows(backend, test) {
        let p = program(scenario::seed(), 3, backend);
        assert_eq!(realize(Some(test), &p, 0).len(), 3);
    }
    fn two_programs(backend, test) {
        let first = program(scenario::seed() + 11, 2, backend);
        let second = program(scenario::seed() + 12, 2, backend);
        realize(Some(test), &first, 0);
        realize(Some(test), &second, 1);
    }
}
