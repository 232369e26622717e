//! A realize as Svod's `compile_missing_kernels` runs it (npatsakula/svod 3e06443b, `tensor/src/realize.rs`): every
//! distinct kernel is optimized (`map_on_threads`: inline when `SVOD_THREADS` is 1, else rayon's global pool), then
//! named in schedule order from the process-wide `KERNEL_NAME_COUNTS` (`schedule/src/optimizer/scheduler.rs`: the
//! n-th kernel of a name gets `n{n-1}`), then compiled on the threads again. The kernels are reduce kernels as
//! rangeify cuts them; a pass changes the graph or keeps it (hash-consing keeps the nodes it did not touch).

use crate::emit::{self, Field};
use crate::ir::{uop, UOp};
use crate::truth::{self, record, Context};
use rayon::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub const PRE: [&str; 5] = [
    "pre-opt: movement ops complete",
    "pre-opt: load collapse complete",
    "pre-opt: split ranges complete",
    "pre-opt: symbolic + flatten complete",
    "pre-opt: simplify ranges complete",
];

/// Post-optimization stages in `apply_post_optimization_configured_with_capture`'s order: (label, message).
pub const POST: [(&str, &str); 19] = [
    ("08-post_opt_sym", "Stage 8: after post-opt symbolic"),
    ("09-pre_expand", "Stage 9: after pre_expand"),
    ("10-pm_reduce", "after pm_reduce"),
    ("11-local_buffers", "after add local buffers"),
    ("12-pm_add_gpudims", "after pm_add_gpudims"),
    ("13-pm_add_loads", "after pm_add_loads"),
    ("14-devectorize", "after devectorize"),
    ("15-early_symbolic", "after early symbolic"),
    ("16-memory_coalescing", "after memory coalescing"),
    ("17-bottom_up_ew_image", "after bottom-up elementwise/image pass"),
    ("16-extra_symbolic", "after extra symbolic"),
    ("17-pm_lower_index_dtype", "after pm_lower_index_dtype"),
    ("18-final_symbolic", "after post-index symbolic"),
    ("19-cast_float_alu", "after cast float ALU operands"),
    ("19b-early_decompositions", "after early decompositions"),
    ("19c-dtype_decompositions", "after dtype decompositions"),
    ("19d-late_decompositions", "Stage 18: after late decompositions"),
    ("19e-move_gates_from_index", "Stage 19: after move gates from index"),
    ("20-final_rewrite", "Stage 20: after final rewrite"),
];

const SHAPES: [(i64, i64); 4] = [(8, 64), (16, 32), (4, 16), (8, 8)];
const ALU: [&str; 3] = ["Add", "Mul", "Max"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Llvm,
    Clang,
}

/// splitmix64: the crate's only randomness, from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub m: i64,
    pub n: i64,
    pub alu: &'static str,
    pub c: i64,
    pub seed: u64,
}

impl KernelSpec {
    pub fn bare(&self) -> String {
        format!("r_{}_{}_4", self.m, self.n / 4)
    }
}

#[derive(Clone, Debug)]
pub struct Program {
    pub kernels: Vec<KernelSpec>,
    pub backend: Backend,
    /// Panic while optimizing kernel K, before stage LABEL prints (as Svod's `assert_target_renderer_boundary`).
    pub panic_at: Option<(usize, String)>,
}

/// `count` distinct kernels (distinct ASTs, as `compile_missing_kernels` deduplicates), some of one shape.
pub fn program(seed: u64, count: usize, backend: Backend) -> Program {
    let mut rng = Rng(seed);
    let mut combos = Vec::new();
    for shape in SHAPES {
        for alu in ALU {
            for c in 1..=(3 + count as i64 / 12) {
                combos.push((shape, alu, c));
            }
        }
    }
    let mut kernels = Vec::new();
    for _ in 0..count {
        let ((m, n), alu, c) = combos.swap_remove(rng.below(combos.len() as u64) as usize);
        kernels.push(KernelSpec { m, n, alu, c, seed: rng.next() });
    }
    Program { kernels, backend, panic_at: None }
}

fn int(value: i64, dtype: &'static str) -> Arc<UOp> {
    uop(format!("CONST(Int({value}))"), dtype, Some("[]"), vec![])
}

const WEAK: &str = "Scalar(WeakInt)";
const F32: &str = "Scalar(Float32)";
const VOID: &str = "Scalar(Void)";

/// One kernel's graph builders: the nodes every stage shares, and the sink of a stage.
struct Kernel {
    out: Arc<UOp>,
    value: Arc<UOp>,
    value_opt: Arc<UOp>,
    r0: Arc<UOp>,
    r0a: Arc<UOp>,
    r1: Arc<UOp>,
    r2: Arc<UOp>,
}

impl Kernel {
    fn new(spec: &KernelSpec) -> Kernel {
        let (m, n) = (spec.m, spec.n);
        let p0 = uop("PARAM(slot=0)", F32, Some(&format!("[Const({m})]")), vec![int(m, WEAK)]);
        let p1 = uop("PARAM(slot=1)", F32, Some(&format!("[Const({})]", m * n)), vec![int(m * n, WEAK)]);
        let r1 = uop("RANGE(R1, Weak)", WEAK, Some("[]"), vec![int(m, WEAK)]);
        let r0 = uop("RANGE(R0, Reduce)", WEAK, Some("[]"), vec![int(n, WEAK)]);
        let r0a = uop("RANGE(R0, Reduce)", WEAK, Some("[]"), vec![int(n / 4, WEAK)]);
        let r2 = uop("RANGE(R2, Unroll)", WEAK, Some("[]"), vec![int(4, WEAK)]);
        let loaded = |index: Arc<UOp>| {
            let row = uop("Mul", WEAK, Some("[]"), vec![r1.clone(), int(n, WEAK)]);
            let at = uop("Add", WEAK, Some("[]"), vec![row, index]);
            let load = uop("INDEX", F32, Some("[]"), vec![p1.clone(), at]);
            let c = uop(format!("CONST(Float({}.0))", spec.c), F32, Some("[]"), vec![]);
            uop(spec.alu, F32, Some("[]"), vec![load, c])
        };
        let value = loaded(r0.clone());
        // the optimizer's UNROLL of the reduce axis by 4: R0 becomes R0' * 4 + R2
        let split = uop("Mul", WEAK, Some("[]"), vec![r0a.clone(), int(4, WEAK)]);
        let value_opt = loaded(uop("Add", WEAK, Some("[]"), vec![split, r2.clone()]));
        let out = uop("INDEX", F32, Some("[]"), vec![p0, r1.clone()]);
        Kernel { out, value, value_opt, r0, r0a, r1, r2 }
    }

    fn sink(&self, optimized: bool, marks: &[(&'static str, i64)]) -> Arc<UOp> {
        let (value, ranges) = if optimized {
            (self.value_opt.clone(), vec![self.r0a.clone(), self.r2.clone()])
        } else {
            (self.value.clone(), vec![self.r0.clone()])
        };
        let ids: Vec<String> = ranges.iter().map(|r| r.id.to_string()).collect();
        let head = format!("REDUCE(Add, num_axes={}, ranges=[{}])", ranges.len() - 1, ids.join(", "));
        let mut src = vec![value];
        src.extend(ranges);
        let mut top = uop(head, F32, Some("[]"), src);
        for (op, v) in marks {
            top = uop(*op, F32, Some("[]"), vec![top, int(*v, "Scalar(Int32)")]);
        }
        let store = uop("STORE", VOID, Some("[]"), vec![self.out.clone(), top]);
        let end = uop("END", VOID, Some("[]"), vec![store, self.r1.clone()]);
        uop("SINK[KERNEL]", VOID, None, vec![end])
    }
}

fn elapsed(t: std::time::Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

/// `optimize_kernel_with_config_impl` for one kernel: pre-optimization in its span, then post-optimization.
fn optimize(index: usize, spec: &KernelSpec, panic_at: &Option<(usize, String)>) -> Arc<UOp> {
    let kernel = Kernel::new(spec);
    let mut rng = Rng(spec.seed);
    let mut marks: Vec<(&'static str, i64)> = vec![];
    let mut graph = kernel.sink(false, &marks);
    {
        // `#[tracing::instrument(skip_all)]` on `apply_pre_optimization`: an INFO span named after the function
        let span = tracing::info_span!(target: emit::OPT, "apply_pre_optimization");
        let _entered = span.enter();
        emit::stage_event(Field::Initial, "kernel initial", "kernel-initial-pre", graph.tree(), graph.node_count(), 0);
        for (step, message) in PRE.iter().enumerate() {
            let t = std::time::Instant::now();
            if rng.chance(0.4) {
                marks = vec![(ALU[step % 3], 100 + step as i64)];
                graph = kernel.sink(false, &marks);
            }
            emit::stage_event(Field::Pre, message, &format!("pre-{step}"), graph.tree(), graph.node_count(),
                              elapsed(t));
        }
    }
    graph = kernel.sink(true, &marks);
    let bare = spec.bare();
    // PADTO is in the same optimizer transaction: `optimized` and `postrange` are one boundary
    emit::dump_canonical("optimized", &graph, Some(&bare));
    emit::dump_canonical("postrange", &graph, Some(&bare));
    emit::stage_event(Field::Initial, "kernel initial", "kernel-initial-post", graph.tree(), graph.node_count(), 0);
    emit::print_stage("00-initial", &graph, &bare);
    for (step, (label, message)) in POST.iter().enumerate() {
        let t = std::time::Instant::now();
        if rng.chance(0.5) {
            marks = vec![(ALU[step % 3], 200 + step as i64)];
            graph = kernel.sink(true, &marks);
        }
        if let Some((k, at)) = panic_at {
            if *k == index && at == label {
                panic!("mixed STACK/vector ALU survived devectorize: {}", graph.tree());
            }
        }
        emit::stage_event(Field::Optimized, message, label, graph.tree(), graph.node_count(), elapsed(t));
        emit::print_stage(label, &graph, &bare);
        if let Some(after) = match *label {
            "09-pre_expand" => Some("expanded"),
            "17-bottom_up_ew_image" => Some("coalesced"),
            "19e-move_gates_from_index" => Some("gated"),
            _ => None,
        } {
            emit::dump_canonical(after, &graph, Some(&bare));
        }
    }
    emit::dump_canonical("final_rewrite", &graph, Some(&bare));
    graph
}

fn kernel_name_counts() -> &'static Mutex<HashMap<String, usize>> {
    static COUNTS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// `finalize_kernel_name`: the bare name, or `{bare}n{k}` for the k+1-th kernel of that name in the process.
pub fn finalize_kernel_name(bare: &str) -> String {
    let mut counts = kernel_name_counts().lock().unwrap();
    let seen = counts.entry(bare.to_owned()).or_insert(0);
    let name = if *seen == 0 { bare.to_owned() } else { format!("{bare}n{seen}") };
    *seen += 1;
    name
}

fn render(backend: Backend, name: &str, spec: &KernelSpec) -> String {
    match backend {
        Backend::Llvm => format!(
            "; ModuleID = '{name}'\nsource_filename = \"{name}\"\n\n\n\ndefine void @{name}(ptr noalias align 32 %data0, \
             ptr noalias align 32 %data1) #0 {{\nentry:\n  br label %loop_0\nloop_0:\n  %ridx0 = phi i32 [ 0, %entry ]\n  \
             ret void\n}}\n\nattributes #0 = {{ nounwind \"no-builtins\" \"no-trapping-math\"=\"true\" }}\n"
        ),
        Backend::Clang => format!(
            "void {name}(float* restrict data0, const float* restrict data1) {{\n  for (int ridx0 = 0; ridx0 < {}; \
             ridx0++) {{\n    *(data0+ridx0) = 0.0f;\n  }}\n}}\n",
            spec.m
        ),
    }
}

/// SVOD_THREADS, else the machine's cores (`thread_budget()`).
pub fn thread_budget() -> usize {
    std::env::var("SVOD_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn map_on_threads<T: Send, R: Send>(threads: usize, items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if threads == 1 {
        items.into_iter().map(f).collect()
    } else {
        static POOL: OnceLock<()> = OnceLock::new();
        POOL.get_or_init(|| {
            let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
        });
        items.into_par_iter().map(f).collect()
    }
}

/// One realize of `program` in test `test` (None: a program outside a test harness); `schedule` counts the
/// realizes of the run. Returns the kernels' final names in schedule order.
pub fn realize(test: Option<&str>, program: &Program, schedule: usize) -> Vec<String> {
    let test = test.map(str::to_owned);
    let threads = thread_budget();
    truth::set_current(Context { test: test.clone(), kernel: None, schedule, last_stage: None });
    record("realize", json!({"test": test, "schedule": schedule, "threads": threads,
                             "kernels": program.kernels.len()}));
    let asts: Vec<Arc<UOp>> = program.kernels.iter().map(|s| Kernel::new(s).sink(false, &[])).collect();
    let whole = uop("SINK", VOID, None, asts.clone());
    emit::dump_canonical("tensor", &whole, None);
    for message in ["earliest rewrites complete", "Stage 0: range assignment + apply rangeify complete"] {
        emit::rangeify_event(message, whole.tree(), whole.node_count());
    }
    emit::dump_canonical("rangeified", &whole, None);
    emit::dump_canonical("kernel_ast", &whole, None);
    let jobs: Vec<(usize, KernelSpec)> = program.kernels.iter().cloned().enumerate().collect();
    let panic_at = &program.panic_at;
    let within = |index: usize, work: &dyn Fn() -> Arc<UOp>| {
        let before = truth::current();
        truth::set_current(Context { test: test.clone(), kernel: Some(index), schedule, last_stage: None });
        let result = work();
        truth::set_current(before);
        result
    };
    let turns = crate::scenario::Turns::new(program.kernels.len(), threads);
    let optimized: Vec<Arc<UOp>> = if turns.on() {
        let slots: Vec<std::sync::Mutex<Option<Arc<UOp>>>> = jobs.iter().map(|_| Default::default()).collect();
        map_on_threads(threads, jobs, |_job| {
            turns.next(|index| {
                let result = within(index, &|| optimize(index, &program.kernels[index], panic_at));
                *slots[index].lock().unwrap() = Some(result);
            })
        });
        slots.into_iter().map(|slot| slot.into_inner().unwrap().expect("every kernel optimized")).collect()
    } else {
        map_on_threads(threads, jobs, |(index, spec)| within(index, &|| optimize(index, &spec, panic_at)))
    };
    let names: Vec<String> = program
        .kernels
        .iter()
        .enumerate()
        .map(|(index, spec)| {
            let name = finalize_kernel_name(&spec.bare());
            record("kernel", json!({"test": test, "index": index, "bare": spec.bare(), "name": name,
                                    "schedule": schedule}));
            name
        })
        .collect();
    let compile: Vec<(usize, String)> = names.iter().cloned().enumerate().collect();
    map_on_threads(if turns.on() { 1 } else { threads }, compile, |(index, name)| {
        within(index, &|| {
            // `program_from_sink` and `do_linearize` (codegen/src/program_pipeline.rs), named finally
            emit::dump_canonical("program", &optimized[index], Some(&name));
            emit::dump_canonical("linearized", &optimized[index], Some(&name));
            emit::code_event(program.backend, &name, render(program.backend, &name, &program.kernels[index]));
            optimized[index].clone()
        })
    });
    drop(asts);
    names
}
