"""Where each thing Svod prints sits in Svod's emission order: the table kernel boundaries are derived from.

Read from Svod's source (npatsakula/svod), not from the first event of a kind:

* schedule, once per realize (`tensor/src/realize.rs` `schedule_result_from_sink_with_cache`, then
  `schedule/src/rangeify/transforms.rs` and `rangeify/kernel.rs`): canonical `tensor`; the rangeify events
  (`uop.tree`); canonical `rangeified`; the kernel-split events; canonical `kernel_ast` (the whole kernel graph after
  `fix_assign`, emitted once, not per kernel).
* optimization, per kernel (`schedule/src/optimizer/mod.rs` `optimize_kernel_with_config_impl`):
  `apply_pre_optimization` (TRACE `kernel initial`, five DEBUG `pre-opt: ...` events), canonical `optimized` and
  `postrange`, then `apply_post_optimization_configured_with_capture`: TRACE `kernel initial` again, `print_stage`
  for `00-initial`, and for every later stage its DEBUG event then `print_stage` (`[per-stage]` line, `[dump-stage]`
  block, `[dump-canonical]` with the stage's label, each under its own switch), with canonical `expanded` after
  `09-pre_expand`, `coalesced` after `17-bottom_up_ew_image`, `gated` after `19e-move_gates_from_index` and
  `final_rewrite` at the end.
* code generation, per kernel, after *all* kernels were optimized (`tensor/src/realize.rs` `compile_missing_kernels`
  optimizes every kernel, names them in schedule order, then compiles each): canonical `program`
  (`program_from_sink`), `SVOD_DUMP_LINEAR` files and canonical `linearized` (`do_linearize`), TRACE generated code
  (`svod_codegen::llvm::text` / `svod_codegen::c`), the `SVOD_DUMP_LLVM_IR` file (`runtime/src/llvm.rs`).

Within one phase of one kernel the positions only grow, so a position that does not grow starts the next kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tgstore.spelling.svod import maps

# canonical dumps taken after a post-opt stage's print_stage, in optimizer/mod.rs
CANONICAL_AFTER = {"09-pre_expand": "expanded", "17-bottom_up_ew_image": "coalesced",
                   "19e-move_gates_from_index": "gated", "20-final_rewrite": "final_rewrite"}
SCHEDULE_CANONICAL = ("tensor", "pre_multi", "post_multi", "rangeified", "kernel_ast", "scheduled")
CODE_CANONICAL = ("program", "linearized")
SOURCE_OFFSET = {"event": 0, "extract-ir": 0, "per-stage": 1, "dump-stage": 2, "dump-canonical": 3, "capture": 3}
# `kernel initial` is printed twice per kernel: in `apply_pre_optimization` (position 0) and as the input of
# `apply_post_optimization_configured_with_capture`, right before `print_stage("00-initial")` (the 00-initial event)
KERNEL_INITIAL_FIRST = 0
KERNEL_INITIAL_SECOND = 100
# the canonical documents only `optimize_kernel_with_config_impl` dumps: BEAM's path (`beam_search_optimize` then
# `apply_post_optimization_with_config`, tensor/src/realize.rs) prints neither
HEURISTIC_ONLY = ("optimized", "postrange")


@dataclass(frozen=True)
class Place:
    phase: str  # schedule | opt | code
    position: int | None  # None: belongs to the phase but does not mark a boundary (an unknown schedule message)


@cache
def _tables() -> tuple[dict[str, int], dict[str, int], list[str], dict[str, int]]:
    stages = maps()["stages"]
    post = [s["label"] for s in stages if s["scope"] == "lower" and s["label"][:2].isdigit()]
    pre = [s["label"] for s in stages if s["label"].startswith("pre-")]
    opt: dict[str, int] = {"kernel-initial": 0, **{label: 1 + i for i, label in enumerate(pre)},
                           "canonical:optimized": 10, "canonical:postrange": 11, "00-initial:event": 12}
    for i, label in enumerate(post):
        base = 100 + 10 * i
        opt[f"{label}:event"] = base
        opt[f"{label}:per-stage"] = base + 1
        opt[f"{label}:dump-stage"] = base + 2
        opt[f"{label}:canonical"] = base + 3
        if label in CANONICAL_AFTER:
            opt[f"canonical:{CANONICAL_AFTER[label]}"] = base + 4
    schedule: dict[str, int] = {"canonical:tensor": 0, "canonical:pre_multi": 1, "canonical:post_multi": 2}
    for i, s in enumerate(s for s in stages if s["scope"] == "schedule" and s.get("messages")):
        schedule[s["label"]] = 10 + i
    schedule.update({"canonical:rangeified": 50, "canonical:kernel_ast": 60, "canonical:scheduled": 70})
    code = {"canonical:program": 0, "linear": 1, "canonical:linearized": 2, "code": 3, "llvm-ir": 4}
    return opt, schedule, post, code


@cache
def opt_kinds(label: str, source: str) -> tuple[int, ...]:
    """The emission positions an optimize-phase stage can have: two for `kernel initial` (first or second), one for
    any other; () when it is not an optimize-phase stage."""
    if label == "kernel-initial-or-00":
        return (KERNEL_INITIAL_FIRST, KERNEL_INITIAL_SECOND)
    where = place(label, source)
    return (where.position,) if where is not None and where.phase == "opt" and where.position is not None else ()


def post_labels() -> list[str]:
    return _tables()[2]


@cache
def place(label: str, source: str) -> Place | None:
    """Where a stage read from `source` (event, per-stage, dump-stage, dump-canonical, extract-ir, capture) with
    `label` sits; None when Svod's source emits no such label (the caller records a problem)."""
    opt, schedule, _post, code = _tables()
    canonical = source in ("dump-canonical", "capture")
    if canonical:
        if f"canonical:{label}" in schedule:
            return Place("schedule", schedule[f"canonical:{label}"])
        if f"canonical:{label}" in code:
            return Place("code", code[f"canonical:{label}"])
        if f"canonical:{label}" in opt:
            return Place("opt", opt[f"canonical:{label}"])
        if f"{label}:canonical" in opt:
            return Place("opt", opt[f"{label}:canonical"])
        return None
    if label in schedule:
        return Place("schedule", schedule[label])
    if label in opt:
        return Place("opt", opt[label])
    key = f"{label}:{'event' if source in ('event', 'extract-ir') else source}"
    if key in opt:
        return Place("opt", opt[key])
    if label == "00-initial" and source in ("event", "extract-ir"):
        return Place("opt", opt["00-initial:event"])
    return None


def code_place(kind: str) -> Place:
    """generated code (`code`), a SVOD_DUMP_LINEAR file (`linear`), an LLVM IR file (`llvm-ir`)."""
    return Place("code", _tables()[3][kind])


# What puts a stage in the log: shown by `parity` for a stage the log does not hold.
def switch_for(label: str, tree: bool = False) -> str:
    if tree and label in ("rangeified", "rangeify-earliest", "rangeify-apply"):
        return "RUST_LOG=svod_schedule::rangeify::transforms=debug"
    if label == "kernel-initial":
        return "RUST_LOG=svod_schedule::optimizer=trace"
    if label.startswith("pre-"):
        return "RUST_LOG=svod_schedule::optimizer=debug"
    if label in SCHEDULE_CANONICAL or label in CODE_CANONICAL or label in ("optimized", "postrange", "expanded",
                                                                             "coalesced", "gated", "final_rewrite"):
        return f"SVOD_DUMP_CANONICAL_STAGE={label}"
    if label == "00-initial":
        return "SVOD_DUMP_STAGE=00 (or RUST_LOG=svod_schedule::optimizer=trace)"
    if label[:2].isdigit():
        return f"SVOD_DUMP_STAGE={label.split('-')[0]} (or RUST_LOG=svod_schedule::optimizer=debug)"
    return "RUST_LOG=svod_schedule=trace"
