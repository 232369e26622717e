//! Tests that fail as Svod's do: an `assert_eq!` in the test body after the kernels ran, and a panic inside the
//! optimizer (`assert_target_renderer_boundary`'s "mixed STACK/vector ALU survived devectorize: TREE"), which runs
//! on a rayon worker under SVOD_THREADS > 1 and on the test's thread under SVOD_THREADS=1.
use svod_emitter::{program, realize, run_test, scenario, test_name, Backend};

mod assert_body {
    use super::*;
    #[test]
    fn llvm() {
        run_test(&test_name(module_path!(), "llvm"), |test| {
            let p = program(scenario::seed() + 21, 2, Backend::Llvm);
            let names = realize(Some(test), &p, 0);
            assert_eq!(names.len(), 3);
        })
    }
}

mod optimizer_panic {
    use super::*;
    #[test]
    fn llvm() {
        run_test(&test_name(module_path!(), "llvm"), |test| {
            let mut p = program(scenario::seed() + 31, 3, Backend::Llvm);
            p.panic_at = Some((1, "20-final_rewrite".to_owned()));
            realize(Some(test), &p, 0);
        })
    }
}

mod passes {
    use super::*;
    #[test]
    fn llvm() {
        run_test(&test_name(module_path!(), "llvm"), |test| {
            let p = program(scenario::seed() + 41, 2, Backend::Llvm);
            realize(Some(test), &p, 0);
        })
    }
}
