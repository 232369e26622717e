"""Svod logs as its developers produce them: `cargo test` over several tests, Svod's default thread count, a panic,
a cut line, GPU variants that skip. Built from what Svod's source prints (npatsakula/svod, read Dec 2026; facts,
not code):

* `tensor/src/realize.rs` `compile_missing_kernels`: `map_on_threads(threads, jobs, optimize)`, then names in
  schedule order (`finalize_kernel_name`), then `map_on_threads(threads, named, compile)`; `map_on_threads` runs
  inline only when threads == 1, rayon's `into_par_iter` otherwise. So with the default `SVOD_THREADS` each
  kernel's optimize-phase output interleaves with the others' whole line by whole line (tracing's writer prints
  one event per call), then the compile phase's does.
* `schedule/src/optimizer/mod.rs` `print_stage`: `[per-stage]` (one `eprintln!`), then `[dump-stage] L :`, the tree
  and `[dump-stage] L : end` as three `eprintln!` calls: another thread's lines can fall between them.
* `tensor/src/config.rs` `codegen_tests!`: tests `NAME::clang`, `::llvm`, `::amd`, `::metal`, `::cuda`; the GPU
  variants print `amd codegen_tests variant: skipped (no supported AMD GPU)`, `metal codegen_tests variant: skipped
  (no Metal device)`, `cuda codegen_tests variant: skipped (no CUDA device)` and return (the test passes).
* `schedule/src/optimizer/scheduler.rs` `KERNEL_NAME_COUNTS`: a process-wide counter, so the second test's kernel of
  the same shape is `r_8_16_4n1` although that program alone would name it `r_8_16_4`.
* libtest: `--test-threads=1` prints `test NAME ... ` before the test's output (its first line joins it) and the
  result after it on a line of its own; with threads, `test NAME ... ok` whole when the test ends. A panic prints
  `thread 'NAME' panicked at FILE:LINE:COL:`, the message, `note: run with `RUST_BACKTRACE=1` ...`; then `FAILED`,
  the `failures:` block and `test result: FAILED. ...`.
* a canonical document's SINK carries the kernel's name (`{"kind": "sink", "name": ...}`,
  `scripts/CANONICAL_SCHEMA_V7.md`): the bare name in the optimize phase, the final one in `program`.

Kernel k's trees are the worked example's with ids shifted by 1000*k, so a stage filed under the wrong kernel shows.
"""

from __future__ import annotations

import json
import random

from svod_fixtures import OPT, Clock, cargo_preamble, doc, event, node_count, shift_ids

CODEGEN = "svod_codegen::llvm::text"
PASS = "test result: ok. {n} passed; 0 failed; 0 ignored; 0 measured; 800 filtered out; finished in 0.93s"
SKIPS = {"amd": "amd codegen_tests variant: skipped (no supported AMD GPU)",
         "metal": "metal codegen_tests variant: skipped (no Metal device)",
         "cuda": "cuda codegen_tests variant: skipped (no CUDA device)"}
POST = (("09-pre_expand", "Stage 9: after pre_expand", "worked-example-4.txt"),
        ("20-final_rewrite", "Stage 20: after final rewrite", "worked-example-9.txt"))


def named_document(stage: str, name: str) -> dict:
    """A schema-7 document whose SINK names its kernel."""
    return {"schema_version": 7, "stage": stage, "roots": [0], "nodes": [
        {"id": 0, "op": "SINK", "dtype": {"kind": "void"}, "shape": None,
         "arg": {"kind": "sink", "name": name, "opts_to_apply": None, "applied_opts": [], "dont_use_locals": False},
         "src": []}]}


def canonical_block(stage: str, name: str) -> list[str]:
    body = json.dumps(named_document(stage, name), indent=2)
    return [f"[dump-canonical] {stage} :", *body.split("\n"), f"[dump-canonical] {stage} : end"]


def kernel_units(clock: Clock, k: int, *, trees: bool = True, per_stage: bool = False, dump: bool = False,
                 documents: bool = False, name: str = "r_8_16_4") -> tuple[list[list[str]], list[list[str]]]:
    """Kernel k's optimize-phase and compile-phase output as units, each what one call prints (one tracing event, one
    `eprintln!`): units of different kernels interleave, the lines of one unit never do."""
    shift = 1000 * k
    initial, optimized = shift_ids(doc("worked-example-2.txt"), shift), shift_ids(doc("worked-example-3.txt"), shift)
    bare = name.rstrip("0123456789").removesuffix("n") if "n" in name.rsplit("_", 1)[-1] else name
    opt: list[list[str]] = []
    if trees:
        opt.append([event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": initial},
                          node_count=node_count(initial))])
        for message in ("pre-opt: movement ops complete", "pre-opt: load collapse complete",
                        "pre-opt: split ranges complete", "pre-opt: symbolic + flatten complete",
                        "pre-opt: simplify ranges complete"):
            opt.append([event(clock, "DEBUG", OPT, message, **{"ast.pre": initial}, node_count=node_count(initial),
                              elapsed_ms=0)])
    if documents:
        opt.append(canonical_block("optimized", bare))
    if trees:
        opt.append([event(clock, "TRACE", OPT, "kernel initial", **{"ast.initial": optimized},
                          node_count=node_count(optimized))])
    for label, message, file in POST:
        tree = shift_ids(doc(file), shift)
        if trees:
            opt.append([event(clock, "DEBUG", OPT, message, **{"ast.optimized": tree}, node_count=node_count(tree),
                              elapsed_ms=1)])
        if per_stage:
            opt.append([f"[per-stage] {label} : node_count={node_count(tree)}"])
        if dump:
            opt += [[f"[dump-stage] {label} :"], tree.rstrip("\n").split("\n") + [""], [f"[dump-stage] {label} : end"]]
    if documents:
        opt.append(canonical_block("final_rewrite", bare))
    code = doc("r_8_16_4.ll").replace("@r_8_16_4(", f"@{name}(")
    compile_units = ([canonical_block("program", name)] if documents else []) + [
        [event(clock, "TRACE", CODEGEN, "llvm codegen: final generated code", generated_code=code)],
        [event(clock, "DEBUG", "svod_runtime::llvm", "Compiling LLVM IR", **{"kernel.name": name},
               **{"ir.length": len(code)})]]
    return opt, compile_units


def interleave(per_kernel: list[list[list[str]]], rng: random.Random) -> list[str]:
    """What rayon's threads print: at each step one kernel (chosen by `rng`) prints its next unit."""
    queues = [list(units) for units in per_kernel]
    out: list[str] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        out += queue.pop(0)
    return out


DISTINCT = ["r_8_16_4", "r_16_8_4", "E_8_64"]  # three kernels of one program with different names


def program_lines(kernels: int, seed: int | None, names: list[str] | None = None, **switches: bool) -> list[str]:
    """One program of `kernels` kernels: optimized all, then compiled all (`compile_missing_kernels`); with a seed,
    the kernels of each phase interleave as under Svod's default SVOD_THREADS; without, one after another."""
    clock = Clock()
    names = names or ["r_8_16_4"] + [f"r_8_16_4n{k}" for k in range(1, kernels)]
    units = [kernel_units(clock, k, name=names[k], **switches) for k in range(kernels)]
    if seed is None:
        return [line for opt, _code in units for unit in opt for line in unit] + \
            [line for _opt, code in units for unit in code for line in unit]
    rng = random.Random(seed)
    return interleave([opt for opt, _code in units], rng) + interleave([code for _opt, code in units], rng)


def threaded_log(kernels: int = 3, seed: int = 7, test: str = "ops::row_reduce_sum::llvm",
                 names: list[str] | None = None, **switches: bool) -> str:
    """`cargo test ... -- --nocapture --test-threads=1` with Svod's default SVOD_THREADS: one test, its kernels'
    output interleaved."""
    lines = program_lines(kernels, seed, names, **switches)
    out = cargo_preamble(test) + [f"test {test} ... {lines[0]}", *lines[1:], "ok", "", PASS.format(n=1), ""]
    return "\n".join(out)


def serial_session(variants: tuple[str, ...] = ("clang", "llvm", "amd", "cuda"), base: str = "ops::row_reduce_sum"
                   ) -> str:
    """Several tests, `--test-threads=1`, SVOD_THREADS=1: each a program of one kernel; the process-wide name
    counter gives the second test's kernel the suffix n1; the GPU variants print their skip line only."""
    clock = Clock()
    out = cargo_preamble(base)[:-1] + [f"running {len(variants)} tests"]
    ran = 0
    for variant in variants:
        test = f"{base}::{variant}"
        if variant in SKIPS:
            out += [f"test {test} ... {SKIPS[variant]}", "ok"]
            continue
        name = "r_8_16_4" if ran == 0 else f"r_8_16_4n{ran}"
        opt, code = kernel_units(clock, ran, name=name, per_stage=True)
        lines = [line for unit in opt + code for line in unit]
        out += [f"test {test} ... {lines[0]}", *lines[1:], "ok"]
        ran += 1
    return "\n".join(out + ["", PASS.format(n=len(variants)), ""])


def libtest_threads_session(printing: tuple[str, ...], skipping: tuple[str, ...] = ("amd", "cuda"),
                            base: str = "ops::row_reduce_sum", seed: int = 3) -> str:
    """Several tests in libtest's threads (no --test-threads=1): output interleaved, results at the end."""
    clock = Clock()
    rng = random.Random(seed)
    units = []
    for k, _variant in enumerate(printing):
        opt, code = kernel_units(clock, k, name="r_8_16_4" if k == 0 else f"r_8_16_4n{k}")
        units.append(opt + code)
    units += [[[SKIPS[v]]] for v in skipping]
    variants = printing + skipping
    out = cargo_preamble(base)[:-1] + [f"running {len(variants)} tests", *interleave(units, rng)]
    out += [f"test {base}::{v} ... ok" for v in variants] + ["", PASS.format(n=len(variants)), ""]
    return "\n".join(out)


PANIC_AT = "schedule/src/optimizer/mod.rs:412:13"


def panic_session(base: str = "ops::row_reduce_sum") -> str:
    """Two tests: `::clang` passes; `::llvm`'s kernel panics after 09-pre_expand with the tree it choked on in the
    message (an `assert!` formatting `uop.tree()`), then libtest's FAILED, failures block and result."""
    clock = Clock()
    opt, code = kernel_units(clock, 0, per_stage=True)
    ok_lines = [line for unit in opt + code for line in unit]
    opt2, _code2 = kernel_units(clock, 1, name="r_8_16_4n1", per_stage=True)
    until = next(i for i, unit in enumerate(opt2) if unit[0].startswith("[per-stage] 09-pre_expand")) + 1
    failing = [line for unit in opt2[:until] for line in unit]
    bad_tree = shift_ids(doc("worked-example-4.txt"), 1000).rstrip("\n").split("\n")
    out = cargo_preamble(base)[:-1] + ["running 2 tests", f"test {base}::clang ... {ok_lines[0]}", *ok_lines[1:],
                                       "ok", f"test {base}::llvm ... {failing[0]}", *failing[1:],
                                       f"thread '{base}::llvm' panicked at {PANIC_AT}:",
                                       "pm_reduce: REDUCE without a matching RANGE in", *bad_tree,
                                       "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
                                       "FAILED", "", "failures:", "", "failures:", f"    {base}::llvm", "",
                                       "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 800 filtered "
                                       "out; finished in 0.41s", ""]
    return "\n".join(out)


def cut_log() -> str:
    """A job killed mid-test: the log stops inside a JSON event, with no result line."""
    text = serial_session(("llvm",))
    cut = text.index("Stage 20: after final rewrite")
    return text[:cut]
