"""Svod runs under every combination of its switches, printed in the order Svod's source emits them.

Built from the format strings and call order in npatsakula/svod (read with the search tools; facts, not code):
* `schedule/src/testing.rs` `setup_test_tracing`: tracing-subscriber's JSON formatter, no span fields; keys
  timestamp, level, fields (`message` first), target; one compact object per line.
* `tensor/src/realize.rs` `schedule_result_from_sink_with_cache`: `dump_canonical_stage("tensor")` first, then
  rangeify (`schedule/src/rangeify/transforms.rs` `rangeify_with_map`: DEBUG `earliest rewrites complete`,
  `Stage 0: range assignment + apply rangeify complete` with `uop.tree`; `dump_canonical_stage("rangeified")`), then
  the kernel cut (`schedule/src/rangeify/kernel.rs` `try_get_kernel_graph`: `dump_canonical_stage("kernel_ast")`
  once for the whole kernel graph after `fix_assign`).
* `tensor/src/realize.rs` `compile_missing_kernels`: every kernel is optimized (`map_on_threads`, in order with
  SVOD_THREADS=1), then named, then compiled, in schedule order.
* `schedule/src/optimizer/mod.rs` `optimize_kernel_with_config_impl` per kernel: `apply_pre_optimization` (TRACE
  `kernel initial` {ast.initial, node_count}; DEBUG `pre-opt: ...` {ast.pre, node_count, elapsed_ms} x5);
  `dump_canonical_stage("optimized")`, `("postrange")`; `apply_post_optimization_configured_with_capture`: TRACE
  `kernel initial` {ast.initial, node_count}, `print_stage("00-initial")`, then per stage DEBUG {ast.optimized,
  node_count, elapsed_ms} and `print_stage(label)`; `print_stage` writes `[per-stage] {} : node_count={}`
  (SVOD_PER_STAGE_UOPS), `[dump-stage] {} :` / tree / `[dump-stage] {} : end` (SVOD_DUMP_STAGE prefix), then
  `dump_canonical_stage(label)`; extra canonical dumps `expanded` (after 09), `coalesced` (after 17-bottom_up),
  `gated` (after 19e), `final_rewrite` (last).
* `ir/src/uop/canonical.rs` `dump_canonical_stage`: prefix match on SVOD_DUMP_CANONICAL_STAGE (the empty prefix
  matches every stage); `[dump-canonical] {stage} :`, serde_json pretty JSON, `[dump-canonical] {stage} : end`.
* `codegen/src/program_pipeline.rs` `program_from_sink` (`dump_canonical_stage("program")`), `do_linearize`
  (SVOD_DUMP_LINEAR files `tree_<id>.txt`/`linear_<id>.txt`, then `dump_canonical_stage("linearized")`);
  `codegen/src/llvm/text/mod.rs` `render`: TRACE `llvm codegen: final generated code` {generated_code} on target
  `svod_codegen::llvm::text`; `runtime/src/llvm.rs`: SVOD_DUMP_LLVM_IR file `<kernel>.ll`.
* libtest with `--nocapture --test-threads=1`: `test NAME ... ` and the first output line on one line.

Trees are Svod's own (tests/fixtures/svod/docs); kernel k's ids are shifted by 1000*k so a tree filed under the
wrong kernel is seen. Canonical documents of kernel k hold k+1 nodes for the same reason.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from svod_fixtures import (
    OPT,
    POST,
    PRE,
    RANGEIFY,
    Clock,
    cargo_preamble,
    doc,
    event,
    linear_dump,
    node_count,
    shift_ids,
)

AFTER = {"09-pre_expand": "expanded", "17-bottom_up_ew_image": "coalesced", "19e-move_gates_from_index": "gated",
         "20-final_rewrite": "final_rewrite"}
CODEGEN = "svod_codegen::llvm::text"
# RUST_LOG settings a user would run: target -> level (optimizer, rangeify, codegen)
RUST_LOGS = {
    None: {},
    "svod_schedule::optimizer=debug": {"opt": "debug"},
    "svod_schedule::optimizer=trace": {"opt": "trace"},
    "svod_schedule=trace": {"opt": "trace", "rangeify": "trace"},
    "svod_schedule=debug,svod_codegen=trace": {"opt": "debug", "rangeify": "debug", "codegen": "trace"},
    "svod_schedule=trace,svod_codegen=trace": {"opt": "trace", "rangeify": "trace", "codegen": "trace"},
}
NAMES = ["r_8_16_4", "r_8_16_4n1"]


def kernel_name(k: int) -> str:
    """Kernel k's name as Svod's process-wide counter suffixes it (`n1`, `n2`, ... after the first)."""
    return "r_8_16_4" if k == 0 else f"r_8_16_4n{k}"


@dataclass(frozen=True)
class Switches:
    rust_log: str | None = None
    per_stage: bool = False
    dump_stage: str | None = None  # SVOD_DUMP_STAGE prefix
    canonical: str | None = None  # SVOD_DUMP_CANONICAL_STAGE prefix ("" = every stage)
    linear: bool = False
    llvm_ir: bool = False

    @property
    def levels(self) -> dict[str, str]:
        return RUST_LOGS[self.rust_log]

    def describe(self) -> str:
        parts = [f"RUST_LOG={self.rust_log}" if self.rust_log else ""]
        parts += ["SVOD_PER_STAGE_UOPS=1" if self.per_stage else ""]
        parts += [f"SVOD_DUMP_STAGE={self.dump_stage}" if self.dump_stage is not None else ""]
        parts += [f"SVOD_DUMP_CANONICAL_STAGE={self.canonical}" if self.canonical is not None else ""]
        parts += ["SVOD_DUMP_LINEAR=dir" if self.linear else "", "SVOD_DUMP_LLVM_IR=dir" if self.llvm_ir else ""]
        return " ".join(p for p in parts if p) or "(no switch)"


def every_switch_combination() -> list[Switches]:
    return [Switches(*combo) for combo in itertools.product(RUST_LOGS, (False, True), (None, "14", ""),
                                                             (None, "o", ""), (False, True), (False, True))]


def canonical_document(stage: str, kernel: int | None) -> dict:
    """A valid schema-7 document; kernel k's has k+1 nodes (the schedule's has 1)."""
    count = 1 if kernel is None else kernel + 1
    nodes = [{"id": i, "op": "CONST", "dtype": {"kind": "scalar", "name": "int32"}, "shape": None,
              "arg": {"kind": "const", "value": {"kind": "int", "value": i}}, "src": []} for i in range(count)]
    return {"schema_version": 7, "stage": stage, "roots": [count - 1], "nodes": nodes}


class Run:
    """One Svod test run of a program of `kernels` kernels under `switches`: the log and the dump files."""

    def __init__(self, switches: Switches, kernels: int, test: str = "test::reduce::sum_axis1::llvm") -> None:
        self.s, self.kernels, self.test = switches, kernels, test
        self.clock = Clock()
        self.lines: list[str] = []
        self.files: dict[str, str] = {}
        self.expected: list[set[tuple[str, str]]] = [set() for _ in range(kernels)]
        self.expected_schedule: set[tuple[str, str]] = set()

    def level(self, target: str, wanted: str) -> bool:
        have = self.s.levels.get(target)
        return have == "trace" or (have == "debug" and wanted == "debug")

    def canonical(self, stage: str, kernel: int | None) -> None:
        if self.s.canonical is None or not stage.startswith(self.s.canonical):
            return
        body = json.dumps(canonical_document(stage, kernel), indent=2, ensure_ascii=False)
        self.lines += [f"[dump-canonical] {stage} :", *body.split("\n"), f"[dump-canonical] {stage} : end"]
        (self.expected_schedule if kernel is None else self.expected[kernel]).add((stage, "dump-canonical"))

    def print_stage(self, label: str, tree: str, k: int) -> None:
        if self.s.per_stage:
            self.lines.append(f"[per-stage] {label} : node_count={node_count(tree)}")
            self.expected[k].add((label, "per-stage"))
        if self.s.dump_stage is not None and label.startswith(self.s.dump_stage):
            self.lines += [f"[dump-stage] {label} :", *tree.rstrip("\n").split("\n"), f"[dump-stage] {label} : end"]
            self.expected[k].add((label, "dump-stage"))
        self.canonical(label, k)

    def optimize(self, k: int) -> None:
        shift = 1000 * k
        initial, optimized = shift_ids(doc("worked-example-2.txt"), shift), shift_ids(doc("worked-example-3.txt"),
                                                                                      shift)
        later = {"09-pre_expand": shift_ids(doc("worked-example-4.txt"), shift),
                 "20-final_rewrite": shift_ids(doc("worked-example-9.txt"), shift)}
        if self.level("opt", "trace"):
            self.lines.append(event(self.clock, "TRACE", OPT, "kernel initial", **{"ast.initial": initial},
                                    node_count=node_count(initial)))
            self.expected[k].add(("kernel-initial", "event"))
        if self.level("opt", "debug"):
            for message, label in zip(PRE, ("pre-movement", "pre-load-collapse", "pre-split-ranges", "pre-symbolic",
                                            "pre-simplify-ranges"), strict=True):
                self.lines.append(event(self.clock, "DEBUG", OPT, message, **{"ast.pre": initial},
                                        node_count=node_count(initial), elapsed_ms=0))
                self.expected[k].add((label, "event"))
        self.canonical("optimized", k)
        self.canonical("postrange", k)
        if self.level("opt", "trace"):
            self.lines.append(event(self.clock, "TRACE", OPT, "kernel initial", **{"ast.initial": optimized},
                                    node_count=node_count(optimized)))
            self.expected[k].add(("00-initial", "event"))
        self.print_stage("00-initial", optimized, k)
        tree = optimized
        for label, message in POST:
            tree = later.get(label, tree)
            if self.level("opt", "debug"):
                self.lines.append(event(self.clock, "DEBUG", OPT, message, **{"ast.optimized": tree},
                                        node_count=node_count(tree), elapsed_ms=1))
                self.expected[k].add((label, "event"))
            self.print_stage(label, tree, k)
            if label in AFTER:
                self.canonical(AFTER[label], k)

    def compile(self, k: int) -> None:
        self.canonical("program", k)
        final = shift_ids(doc("worked-example-9.txt"), 1000 * k)
        if self.s.linear:
            sink = 455 + 1000 * k
            self.files[f"tree_{sink}.txt"] = self.files[f"linear_{sink}.txt"] = linear_dump(final)
            self.expected[k] |= {("linear", "linear"), ("linear-tree", "linear")}
        self.canonical("linearized", k)
        code = doc("r_8_16_4.ll").replace("@r_8_16_4(", f"@{kernel_name(k)}(")
        if self.level("codegen", "trace"):
            self.lines.append(event(self.clock, "TRACE", CODEGEN, "llvm codegen: final generated code",
                                    generated_code=code))
        if self.s.llvm_ir:
            self.files[f"{kernel_name(k)}.ll"] = code

    def build(self) -> tuple[str, dict[str, str]]:
        self.canonical("tensor", None)
        if self.level("rangeify", "debug"):
            rangeified = doc("rangeify-1.txt")
            for message in ("earliest rewrites complete", "Stage 0: range assignment + apply rangeify complete"):
                self.lines.append(event(self.clock, "DEBUG", RANGEIFY, message, **{"uop.tree": rangeified},
                                        node_count=node_count(rangeified), elapsed_ms=0))
            self.expected_schedule |= {("rangeify-earliest", "event"), ("rangeify-apply", "event")}
        self.canonical("rangeified", None)
        self.canonical("kernel_ast", None)
        for k in range(self.kernels):
            self.optimize(k)
        for k in range(self.kernels):
            self.compile(k)
        out = cargo_preamble(self.test)
        body = self.lines or [""]
        out.append(f"test {self.test} ... {body[0]}")
        out += body[1:] + ["ok", "", "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 811 filtered out; "
                           "finished in 0.21s", ""]
        return "\n".join(out) + "\n", self.files

    @property
    def names_known(self) -> bool:
        """Whether the run names its kernels: generated code in the log, or LLVM IR files alone."""
        return self.level("codegen", "trace")
