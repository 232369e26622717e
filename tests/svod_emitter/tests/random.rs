//! One test whose program comes from SVOD_EMITTER_SEED (the random-scenario test runs this binary directly, many
//! times; tests/svod_emitter.py `bench_log` with SVOD_EMITTER_KERNELS): how many kernels, the backend, two programs
//! or one, and how it fails (not at all, in the optimizer, or in an `assert_eq!` of the test body).
use svod_emitter::pipeline::{Rng, POST};
use svod_emitter::{program, realize, run_test, scenario, test_name, Backend};

mod seeded {
    use super::*;
    #[test]
    fn program_under_test() {
        run_test(&test_name(module_path!(), "program_under_test"), |test| {
            let seed = scenario::seed();
            let mut rng = Rng(seed ^ 0x5eed);
            let backend = if rng.chance(0.5) { Backend::Llvm } else { Backend::Clang };
            let programs = 1 + rng.below(2) as usize;
            // SVOD_EMITTER_KERNELS: a fixed kernel count and no failure (the bench's logs of real size)
            let fixed: Option<usize> = std::env::var("SVOD_EMITTER_KERNELS").ok().and_then(|v| v.parse().ok());
            let failure = if fixed.is_some() { 9 } else { rng.below(10) };
            for schedule in 0..programs {
                let count = fixed.unwrap_or(1 + rng.below(6) as usize);
                let mut p = program(seed.wrapping_mul(31).wrapping_add(schedule as u64), count, backend);
                if failure < 2 && schedule + 1 == programs {
                    let label = POST[rng.below(POST.len() as u64) as usize].0;
                    p.panic_at = Some((rng.below(count as u64) as usize, label.to_owned()));
                }
                let names = realize(Some(test), &p, schedule);
                if failure == 2 && schedule + 1 == programs {
                    assert_eq!(names.len(), count + 1);
                }
            }
        })
    }
}
