"""A Svod test log with rule activity, as Svod prints it under
`RUST_LOG=svod_ir::pattern::simplified=trace,svod_schedule::rangeify=debug,svod_schedule::optimizer=trace,
svod_codegen=trace SVOD_THREADS=1 cargo test -p svod-tensor --lib NAME::llvm -- --nocapture --test-threads=1`
(npatsakula/svod, read Dec 2026; facts, not code):

* ir/src/pattern/simplified.rs:252 (`SimplifiedPatternMatcher::rewrite`): `tracing::trace!(op_key = ?key,
  "pattern matched")` once per rewrite, target `svod_ir::pattern::simplified`; the only field is the OpKey's Debug
  (`Binary(Add)`, `Load`, ...; `#[derive(Debug)]` on the generated enum, macros' pattern_enum codegen). No rule name,
  no pass. The svod-debug skill (.claude/skills/svod-debug/SKILL.md) lists `svod_ir::pattern::simplified=trace` as
  "one `pattern matched` event per rewrite (matches only, not attempts)".
* schedule/src/rangeify/kernel.rs (target `svod_schedule::rangeify::kernel`), in `kernel_graph_pre_cut`: DEBUG
  `kernel split: pm_add_buffers complete` (:539), TRACE `after pm_add_buffers` (field `tree`, :541), DEBUG `kernel
  split: pm_flatten_range pre-pass complete` (:550); then in `try_get_kernel_graph`, per kernel TRACE `split_store:
  entering` (:269) and DEBUG `split_store: created call` (:348; call_id, num_sources, map_size, vars_size), DEBUG
  `kernel split: split_all_stores complete` (:487) and `kernel split: fix_assign complete` (:493); the `kernel split`
  events carry `elapsed_ms`.
* schedule/src/optimizer/mod.rs: each post-opt pass is `graph_rewrite(...)` then its DEBUG event, so a pass's
  matches are printed before its event.

The trees are Svod's documented worked example (tests/fixtures/svod/docs); stages the docs print no tree for carry
the nearest documented one (rule parity does not read trees). The op keys per pass are chosen against tinygrad
0.14's real rewrite steps for `sum_rows` on LLVM (tests/test_svod_rules.py asserts both): most passes match op for
op, three differ on purpose (RESHAPE and EXPAND only in tinygrad, `Cast` only in Svod).
"""

from __future__ import annotations

from svod_fixtures import OPT, RANGEIFY, Clock, cargo_preamble, doc, event, node_count

CODEGEN = "svod_codegen::llvm::text"
PATTERN = "svod_ir::pattern::simplified"
KERNEL = "svod_schedule::rangeify::kernel"
TEST = "ops::sum_rows::llvm"

# (Svod stage label, its tracing message, the documented tree it carries, op keys matched before its event)
POST_OPT = [
    ("08-post_opt_sym", "Stage 8: after post-opt symbolic", "worked-example-3.txt", {"Binary(Add)": 1}),
    ("09-pre_expand", "Stage 9: after pre_expand", "worked-example-4.txt", {"Range": 1, "Reduce": 1}),
    ("10-pm_reduce", "after pm_reduce", "worked-example-4.txt", {"Reduce": 2, "Index": 4}),
    ("11-local_buffers", "after add local buffers", "worked-example-4.txt", {}),
    ("12-pm_add_gpudims", "after pm_add_gpudims", "worked-example-4.txt", {}),
    ("13-pm_add_loads", "after pm_add_loads", "worked-example-4.txt", {"Binary(Add)": 7, "Store": 3}),
    ("14-devectorize", "after devectorize", "worked-example-4.txt",
     {"Binary(Add)": 4, "Index": 4, "Store": 3, "Load": 2}),
    ("15-early_symbolic", "after early symbolic", "worked-example-4.txt", {"Binary(Add)": 3}),
    ("16-memory_coalescing", "after memory coalescing", "worked-example-4.txt", {"Store": 1, "Load": 4}),
    ("17-bottom_up_ew_image", "after bottom-up elementwise/image pass", "worked-example-4.txt",
     {"Ternary(Where)": 2, "Binary(Add)": 2}),
    ("16-extra_symbolic", "after extra symbolic", "worked-example-4.txt", {}),
    ("17-pm_lower_index_dtype", "after pm_lower_index_dtype", "worked-example-9.txt",
     {"Param": 2, "Buffer": 1, "Shrink": 1, "Index": 8, "After": 2, "Store": 1, "End": 2}),
    ("18-final_symbolic", "after post-index symbolic", "worked-example-9.txt", {}),
    ("19-cast_float_alu", "after cast float ALU operands", "worked-example-9.txt", {}),
    ("19b-early_decompositions", "after early decompositions", "worked-example-9.txt", {}),
    ("19c-dtype_decompositions", "after dtype decompositions", "worked-example-9.txt", {}),
    ("19d-late_decompositions", "Stage 18: after late decompositions", "worked-example-9.txt", {"Binary(Mul)": 2}),
    ("19e-move_gates_from_index", "Stage 19: after move gates from index", "worked-example-9.txt", {}),
    ("20-final_rewrite", "Stage 20: after final rewrite", "worked-example-9.txt",
     {"Binary(Shl)": 2, "End": 1, "Cast": 1}),
]
PRE_OPT = [("pre-opt: movement ops complete", {}), ("pre-opt: load collapse complete", {}),
           ("pre-opt: split ranges complete", {}), ("pre-opt: symbolic + flatten complete", {}),
           ("pre-opt: simplify ranges complete", {})]
RANGEIFY_KEYS = {"After": 1, "Permute": 1, "Reduce": 1, "Reshape": 2, "Store": 1}  # rangeify, before Stage 7b
KERNEL_SPLIT = [("kernel split: pm_add_buffers complete", {"Param": 2, "Range": 2}),
                ("kernel split: pm_flatten_range pre-pass complete", {}),
                ("kernel split: split_all_stores complete", {"End": 1, "Param": 2, "Range": 2}),
                ("kernel split: fix_assign complete", {})]
CODEGEN_KEYS = {"Const": 10, "Range": 1}  # program_from_sink, linearize, render: before the generated code


def matches(clock: Clock, keys: dict[str, int]) -> list[str]:
    return [event(clock, "TRACE", PATTERN, "pattern matched", op_key=key) for key, n in keys.items()
            for _ in range(n)]


def rules_log(*, patterns: bool = True, test: str = TEST) -> str:
    """One test, one kernel (`r_8_16_4`), SVOD_THREADS=1; without `patterns`, the same log with RUST_LOG lacking
    svod_ir::pattern::simplified."""
    clock = Clock()
    fire = (lambda keys: matches(clock, keys)) if patterns else (lambda keys: [])
    initial, optimized = doc("worked-example-2.txt"), doc("worked-example-3.txt")
    rangeified = doc("rangeify-1.txt")
    lines = fire(RANGEIFY_KEYS) + [event(clock, "DEBUG", RANGEIFY, "Stage 7b: buffer limit enforcement complete",
                   **{"uop.tree": rangeified}, node_count=node_count(rangeified), elapsed_ms=0)]
    for message, keys in KERNEL_SPLIT:
        lines += fire(keys)
        lines.append(event(clock, "DEBUG", KERNEL, message, elapsed_ms=0))
        if message.endswith("split_all_stores complete"):  # its one kernel, logged inside the split
            lines.insert(len(lines) - 1, event(clock, "DEBUG", KERNEL, "split_store: created call", call_id=131,
                                               num_sources=2, map_size=2, vars_size=0))
    lines.append(event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": initial},
                       node_count=node_count(initial)))
    for message, keys in PRE_OPT:
        lines += fire(keys)
        lines.append(event(clock, "DEBUG", OPT, message, **{"ast.pre": initial}, node_count=node_count(initial),
                           elapsed_ms=0))
    lines.append(event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": optimized},
                       node_count=node_count(optimized)))
    for _label, message, tree_file, keys in POST_OPT:
        tree = doc(tree_file)
        lines += fire(keys)
        lines.append(event(clock, "DEBUG", OPT, message, **{"ast.optimized": tree}, node_count=node_count(tree),
                           elapsed_ms=0))
    lines += fire(CODEGEN_KEYS)
    lines.append(event(clock, "TRACE", CODEGEN, "llvm codegen: final generated code",
                       generated_code=doc("r_8_16_4.ll")))
    out = cargo_preamble(test) + [f"test {test} ... {lines[0]}", *lines[1:], "ok", "",
                                  "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 811 filtered out; "
                                  "finished in 0.31s", ""]
    return "\n".join(out)
