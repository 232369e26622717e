"""Svod output built from Svod's own trees (tests/fixtures/svod/docs), written exactly as Svod's Rust code prints it.

* JSON tracing events: tracing-subscriber 0.3's JSON formatter as `setup_test_tracing` configures it
  (`fmt().json().with_current_span(false).with_span_list(false)`): keys timestamp, level, fields, target; `message`
  first in `fields`, then the fields in macro order; serde_json's compact form, non-ASCII written raw.
* the optimizer's events (`schedule/src/optimizer/mod.rs`): TRACE `kernel initial` {ast.initial, node_count} twice
  per kernel, DEBUG `pre-opt: ...` {ast.pre, node_count, elapsed_ms}, DEBUG post-opt {ast.optimized, node_count,
  elapsed_ms}; rangeify's DEBUG {uop.tree, node_count, elapsed_ms}; codegen's TRACE {generated_code}; the runtime's
  DEBUG `Compiling LLVM IR` {kernel.name, ir.length}.
* stderr: `[per-stage] L : node_count=N`, and `[dump-stage] L :`, the tree, an empty line, `[dump-stage] L : end`.
* cargo's and libtest's own lines around them (cargo's coloured with ANSI codes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parent / "fixtures" / "svod" / "docs"
CASE = "sum_rows"  # x.sum(1) on an 8x64 float tensor: the worked example's program
CASE_SOURCE = "from tinygrad import Tensor\n\n\ndef case_sum_rows():\n    return Tensor.empty(8, 64).sum(1)\n"
OPT = "svod_schedule::optimizer"
RANGEIFY = "svod_schedule::rangeify::transforms"
# the optimizer's pre-optimization event messages, and post-optimization stages as (label, event message), in order
PRE = ["pre-opt: movement ops complete", "pre-opt: load collapse complete", "pre-opt: split ranges complete",
       "pre-opt: symbolic + flatten complete", "pre-opt: simplify ranges complete"]
POST = [("08-post_opt_sym", "Stage 8: after post-opt symbolic"), ("09-pre_expand", "Stage 9: after pre_expand"),
        ("10-pm_reduce", "after pm_reduce"), ("11-local_buffers", "after add local buffers"),
        ("12-pm_add_gpudims", "after pm_add_gpudims"), ("13-pm_add_loads", "after pm_add_loads"),
        ("14-devectorize", "after devectorize"), ("15-early_symbolic", "after early symbolic"),
        ("16-memory_coalescing", "after memory coalescing"),
        ("17-bottom_up_ew_image", "after bottom-up elementwise/image pass"),
        ("16-extra_symbolic", "after extra symbolic"), ("17-pm_lower_index_dtype", "after pm_lower_index_dtype"),
        ("18-final_symbolic", "after post-index symbolic"), ("19-cast_float_alu", "after cast float ALU operands"),
        ("19b-early_decompositions", "after early decompositions"),
        ("19c-dtype_decompositions", "after dtype decompositions"),
        ("19d-late_decompositions", "Stage 18: after late decompositions"),
        ("19e-move_gates_from_index", "Stage 19: after move gates from index"),
        ("20-final_rewrite", "Stage 20: after final rewrite")]
GREEN, RESET = "\x1b[1m\x1b[32m", "\x1b[0m"


def doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


LINE_ID = re.compile(r"^([│├└─ ]*)\[(\d+)\]", re.M)


def node_count(tree: str) -> int:
    """Distinct ids in a compact tree: what Svod's node_count() reports."""
    return len({m.group(2) for m in LINE_ID.finditer(tree)})


def shift_ids(tree: str, by: int) -> str:
    """The same tree as a second allocation would print it: every id (in args too) moved by `by`."""
    tree = LINE_ID.sub(lambda m: f"{m.group(1)}[{int(m.group(2)) + by}]", tree)
    return re.sub(r"ranges=\[([\d, ]*)\]", lambda m: "ranges=[" + ", ".join(
        str(int(x) + by) for x in m.group(1).split(", ") if x) + "]", tree)


class Clock:
    """Timestamps as tracing-subscriber writes them: UTC, microseconds, Z."""

    def __init__(self) -> None:
        self.micros = 0

    def __call__(self) -> str:
        self.micros += 137
        seconds, micros = divmod(self.micros, 1_000_000)
        return f"2026-05-07T18:07:{43 + seconds:02d}.{micros:06d}Z"


def event(clock: Clock, level: str, target: str, message: str, **fields: object) -> str:
    record = {"timestamp": clock(), "level": level, "fields": {"message": message, **fields}, "target": target}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def stage_lines(label: str, tree: str, per_stage: bool, dump: bool) -> list[str]:
    out = []
    if per_stage:
        out.append(f"[per-stage] {label} : node_count={node_count(tree)}")
    if dump:
        out += [f"[dump-stage] {label} :", *tree.rstrip("\n").split("\n"), "", f"[dump-stage] {label} : end"]
    return out


def kernel_lines(clock: Clock, *, trace: bool, per_stage: bool, dump: bool, shift: int = 0,
                 name: str = "r_8_16_4") -> list[str]:
    """One kernel of the worked example through the optimizer and the LLVM backend."""
    initial, optimized = shift_ids(doc("worked-example-2.txt"), shift), shift_ids(doc("worked-example-3.txt"), shift)
    pre_expand, final = shift_ids(doc("worked-example-4.txt"), shift), shift_ids(doc("worked-example-9.txt"), shift)
    code = doc("r_8_16_4.ll").replace("@r_8_16_4(", f"@{name}(")
    lines = []
    if trace:
        lines.append(event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": initial},
                           node_count=node_count(initial)))
    for message in ("pre-opt: movement ops complete", "pre-opt: load collapse complete",
                    "pre-opt: split ranges complete", "pre-opt: symbolic + flatten complete",
                    "pre-opt: simplify ranges complete"):
        lines.append(event(clock, "DEBUG", OPT, message, **{"ast.pre": initial}, node_count=node_count(initial),
                           elapsed_ms=0))
    if trace:
        lines.append(event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": optimized},
                           node_count=node_count(optimized)))
    lines += stage_lines("00-initial", optimized, per_stage, dump)
    for label, message, tree in (("09-pre_expand", "Stage 9: after pre_expand", pre_expand),
                                 ("20-final_rewrite", "Stage 20: after final rewrite", final)):
        lines.append(event(clock, "DEBUG", OPT, message, **{"ast.optimized": tree}, node_count=node_count(tree),
                           elapsed_ms=1))
        lines += stage_lines(label, tree, per_stage, dump)
    if trace:
        lines.append(event(clock, "TRACE", "svod_codegen::llvm::text", "llvm codegen: final generated code",
                           generated_code=code))
    lines.append(event(clock, "DEBUG", "svod_runtime::llvm", "Compiling LLVM IR", **{"kernel.name": name},
                       **{"ir.length": len(code)}))
    return lines


def cargo_preamble(test: str) -> list[str]:
    return [f"   {GREEN}Compiling{RESET} svod-tensor v0.9.0 (/src/svod/tensor)",
            f"    {GREEN}Finished{RESET} `test` profile [unoptimized + debuginfo] target(s) in 41.87s",
            f"     {GREEN}Running{RESET} unittests src/lib.rs (target/debug/deps/svod_tensor-5f1c0c4d9e2ab7aa)",
            "", "running 1 test"]


def worked_example_log(*, trace: bool = True, per_stage: bool = True, dump: bool = True, kernels: int = 1,
                       test: str = "test::reduce::sum_axis1::llvm") -> str:
    """A test log of the worked example (`--test-threads=1`: libtest names the test before its output) with
    SVOD_THREADS=1: kernels one after another in schedule order (read it with `threads_stated=1`)."""
    clock = Clock()
    rangeified = doc("rangeify-1.txt")
    lines = cargo_preamble(test)
    first = event(clock, "DEBUG", RANGEIFY, "Stage 0: range assignment + apply rangeify complete",
                  **{"uop.tree": rangeified}, node_count=node_count(rangeified), elapsed_ms=0)
    lines.append(f"test {test} ... {first}")
    for k in range(kernels):
        lines += kernel_lines(clock, trace=trace, per_stage=per_stage, dump=dump, shift=1000 * k,
                              name="r_8_16_4" if k == 0 else f"r_8_16_4n{k}")
    lines += ["ok", "", "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 811 filtered out; finished in "
              "0.21s", ""]
    return "\n".join(lines) + "\n"


def interleaved_log() -> str:
    """The clang and llvm variants of a codegen_tests! test run in parallel: results at the end, events mixed."""
    clock = Clock()
    lines = cargo_preamble("x")[:-1] + ["running 2 tests"]
    a = kernel_lines(clock, trace=True, per_stage=False, dump=False)
    b = kernel_lines(clock, trace=True, per_stage=False, dump=False, shift=5000)
    for i in range(max(len(a), len(b))):
        lines += ([a[i]] if i < len(a) else []) + ([b[i]] if i < len(b) else [])
    lines += ["test test::reduce::sum_axis1::clang ... ok", "test test::reduce::sum_axis1::llvm ... ok", "",
              "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 810 filtered out; finished in 0.40s"]
    return "\n".join(lines) + "\n"


def extract_ir_output(log: str) -> str:
    """What scripts/extract-ir.sh makes of a log: its jq fold over the DEBUG/TRACE JSON lines, done in Python."""
    def hdr(msg: str, ms: object, nc: object) -> str:
        return f"--- {msg}" + (f" [nodes={nc}]" if nc is not None else "") + (f" [{ms}ms]" if ms is not None
                                                                                 else "") + " ---"

    def section(title: str) -> str:
        return "=" * 60 + f"\n  {title}\n" + "=" * 60 + "\n"

    out, phase, kernel = "", "", 0
    for line in log.split("\n"):
        if not line.startswith("{"):
            continue
        e = json.loads(line)
        if e["level"] not in ("DEBUG", "TRACE"):
            continue
        f = e["fields"]
        msg, ms, nc = f.get("message", "?"), f.get("elapsed_ms"), f.get("node_count")
        if "uop.tree" in f:
            if phase != "rangeify":
                phase, out = "rangeify", out + section("RANGEIFY PHASE (single pass, pre-kernel-split)")
            out += f"{hdr(msg, ms, nc)}\n{f['uop.tree']}\n\n"
        elif "ast.initial" in f:
            kernel += 1
            phase = "initial"
            out += section(f"KERNEL {kernel}") + f"{hdr('INITIAL: kernel input', None, nc)}\n{f['ast.initial']}\n\n"
        elif "ast.pre" in f:
            phase = "pre"
            out += f"{hdr(msg, ms, nc)}\n{f['ast.pre']}\n\n"
        elif "ast.optimized" in f:
            if phase == "pre":
                out += "\n  --- post-optimization ---\n\n"
            phase = "post"
            out += f"{hdr(msg, ms, nc)}\n{f['ast.optimized']}\n\n"
        elif "generated_c" in f:
            out += f"--- C KERNEL CODE (kernel {kernel}) ---\n{f['generated_c']}\n\n"
        elif "generated_code" in f:
            out += f"--- GENERATED CODE (kernel {kernel}) ---\n{f['generated_code']}\n\n"
        elif ms is not None:
            out += f"{hdr(msg, ms, nc)}\n\n"
    return out + "\n"


OPS_IN_MATCH_ORDER = ["Const", "DefineVar", "Param", "Buffer", "Stage", "Load", "Store", "Index", "GetAddr", "Binary",
                      "Unary", "Ternary", "Cast", "BitCast", "Reduce", "ReduceAxis", "AllReduce", "Bind", "Range",
                      "End", "Sink"]


def linear_dump(tree: str) -> str:
    """A SVOD_DUMP_LINEAR file for a tree's nodes: `[{i:4}] id={id} {discriminant:?} scope={{..}}` per node.
    Svod's Op declaration order is not known here, so discriminants count op names in format_node's match order."""
    lines = []
    for i, m in enumerate(re.finditer(r"\[(\d+)\] ([A-Za-z_]+)", tree)):
        name = m.group(2)
        kind = {"Add": "Binary", "Mul": "Binary", "MulAcc": "Ternary", "Shl": "Binary", "CONST": "Const",
                "PARAM": "Param", "BUFFER": "Buffer", "LOAD": "Load", "STORE": "Store", "INDEX": "Index",
                "RANGE": "Range", "END": "End", "SINK": "Sink", "REDUCE": "Reduce"}.get(name, "Const")
        lines.append(f"[{i:4}] id={m.group(1)} Discriminant({OPS_IN_MATCH_ORDER.index(kind)}) scope={{}}")
    return "\n".join(lines) + "\n"


def canonical_block(stage: str, document: dict) -> str:
    """`[dump-canonical] S :`, serde_json's pretty form of the document, `... : end` (ir/src/uop/canonical.rs)."""
    return f"[dump-canonical] {stage} :\n{json.dumps(document, indent=2, ensure_ascii=False)}\n" \
           f"[dump-canonical] {stage} : end\n"
