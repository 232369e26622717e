"""The readers give the same kernels, names and stage attribution whichever Svod switches were on
(tests/svod_emission.py builds each run in Svod's emission order), and bad input is one problem per bad line."""

from __future__ import annotations

import re

import pytest
from svod_emission import NAMES, Run, Switches, every_switch_combination

from tgstore.svod.readers import read_files
from tgstore.svod.readers.threads import SERIAL_MIN_KINDS

COMBINATIONS = every_switch_combination()


def read_run(switches: Switches, kernels: int, stated: int | None = 1):
    """The run (SVOD_THREADS=1, as svod_emission prints it) read as `ingest-svod --svod-threads 1` reads it."""
    run = Run(switches, kernels)
    text, files = run.build()
    return run, read_files([("run.log", text), *sorted(files.items())], threads_stated=stated)


def tree_ids(stage) -> set[int]:
    return set(stage.tree.nodes) if stage.tree is not None else set()


@pytest.mark.parametrize("kernels", [1, 2])
@pytest.mark.parametrize("switches", COMBINATIONS, ids=[s.describe() for s in COMBINATIONS])
def test_kernels_names_and_stages_do_not_depend_on_the_switches(switches: Switches, kernels: int) -> None:
    run, log = read_run(switches, kernels)
    in_log = any(e - {("linear", "linear"), ("linear-tree", "linear")} for e in run.expected)
    files_only = not in_log and (switches.llvm_ir or switches.linear)
    # a few unnamed documents per kernel and nothing else: threads could print the same, so one thread is not proven
    unproven = kernels > 1 and in_log and all(source in ("dump-canonical", "linear") for e in run.expected
                                              for _label, source in e) and len(run.expected[0]) < SERIAL_MIN_KINDS
    # SVOD_DUMP_LINEAR files beside two kernels known from .ll files alone: nothing ties a sink id to a kernel
    linear_unplaceable = unproven or (files_only and switches.llvm_ir and kernels > 1)
    if linear_unplaceable:
        run.expected = [e - {("linear", "linear"), ("linear-tree", "linear")} for e in run.expected]
    assert len(log.kernels) == (kernels if in_log or files_only else 0), [p.message for p in log.problems]
    assert {(s.label, s.source) for s in log.schedule_stages} == run.expected_schedule
    assert not log.unplaced
    for k, kernel in enumerate(log.kernels):
        got = [(s.label, s.source) for s in kernel.stages if s.source != "llvm-ir"]
        assert len(got) == len(set(got)), f"kernel {k} holds a stage twice: {got}"
        assert set(got) == run.expected[k]
        for stage in kernel.stages:  # kernel k's trees have ids 1000k..1000k+999, its documents k+1 nodes
            assert all(1000 * k <= i < 1000 * (k + 1) for i in tree_ids(stage)), (stage.label, stage.source)
            if stage.canonical is not None:
                assert len(stage.canonical["nodes"]) == k + 1, stage.label
    names = [k.name for k in log.kernels]
    placed_ll = [p for p in log.problems if ".ll:" in p.message]
    if run.names_known:
        assert names == NAMES[:kernels]
    elif files_only and switches.llvm_ir:
        assert names == sorted(NAMES[:kernels])
    else:
        assert names == [None] * len(log.kernels)
    # the problems a clean run can have: .ll files it cannot place (the log names no kernel), one per file;
    # SVOD_DUMP_LINEAR files beside kernels of .ll files alone (nothing shows they were compiled in that order);
    # two kernels whose order a log of a few unnamed documents cannot prove (threads could print the same)
    assert len(placed_ll) == (kernels if switches.llvm_ir and in_log and not run.names_known else 0)
    unplaced_linear = [p for p in log.problems if p.message.startswith(("linear_", "tree_"))]
    assert len(unplaced_linear) == (2 * kernels if switches.linear and linear_unplaceable else 0)
    order = [p for p in log.problems if "does not prove the schedule's order" in p.message]
    assert len(order) == (1 if unproven else 0), switches
    assert len(log.problems) == len(placed_ll) + len(unplaced_linear) + len(order), [p.message for p in log.problems]


def test_the_empty_canonical_prefix_dumps_every_stage_and_files_the_schedule_apart() -> None:
    run, log = read_run(Switches(canonical=""), 2)
    assert {s.label for s in log.schedule_stages} == {"tensor", "rangeified", "kernel_ast"}
    assert [s.label for s in log.kernels[1].stages][:3] == ["optimized", "postrange", "00-initial"]
    assert [s.label for s in log.kernels[1].stages][-2:] == ["program", "linearized"]


def test_trace_with_optimized_dumps_reads_two_kernels_not_four() -> None:
    """The post-optimization `kernel initial` follows the `optimized` dump: it is the kernel's 00-initial."""
    _run, log = read_run(Switches(rust_log="svod_schedule::optimizer=trace", canonical="o"), 2)
    assert len(log.kernels) == 2
    assert [s.label for s in log.kernels[0].stages][:1] == ["kernel-initial"]
    assert [s.label for s in log.kernels[0].stages if s.source == "event"][-1] == "20-final_rewrite"


def test_dump_stage_alone_is_one_tree_per_kernel() -> None:
    _run, log = read_run(Switches(dump_stage="14"), 2)
    assert [[s.label for s in k.stages] for k in log.kernels] == [["14-devectorize"], ["14-devectorize"]]


def test_files_of_one_call_are_one_run_and_code_is_found_after_every_kernel_was_optimized() -> None:
    run, log = read_run(Switches(rust_log="svod_schedule=trace,svod_codegen=trace", linear=True, llvm_ir=True), 2)
    assert [k.name for k in log.kernels] == NAMES and not log.problems
    assert all(k.code and "define" in k.code for k in log.kernels)
    assert [[s.message for s in k.stages if s.source == "linear"] for k in log.kernels] == [
        ["linear_455.txt", "tree_455.txt"], ["linear_1455.txt", "tree_1455.txt"]]


def test_kernels_optimized_in_parallel_are_reported() -> None:
    """SVOD_THREADS>1: two kernels' events interleave; the reader says so instead of guessing."""
    run = Run(Switches(rust_log="svod_schedule::optimizer=debug"), 2)
    text, _ = run.build()
    lines = text.split("\n")
    second = [i for i, line in enumerate(lines) if '"pre-opt: movement ops' in line][1]
    moved = lines.pop(second)  # kernel 1 starts while kernel 0 is still in post-optimization
    lines.insert(next(i for i, line in enumerate(lines) if '"after devectorize"' in line), moved)
    log = read_files([("run.log", "\n".join(lines))])
    assert any("SVOD_THREADS=1" in p.message for p in log.problems)


def test_one_after_another_without_one_thread_known_files_only_what_names_prove() -> None:
    """The same SVOD_THREADS=1 run read without `--svod-threads 1`: Svod's pool prints kernels one after another too,
    in any order, and the two kernels share their bare name, so no block is filed on either; both keep their names
    and code, and one problem says what to state. Stated, every block is filed in order."""
    switches = Switches(rust_log="svod_schedule=trace,svod_codegen=trace", per_stage=True)
    run, log = read_run(switches, 2, stated=None)
    assert [k.name for k in log.kernels] == NAMES and all(k.code for k in log.kernels)
    assert [[s.source for s in k.stages] for k in log.kernels] == [[], []]
    assert len(log.unattributed) == sum(len(e) for e in run.expected)
    assert sorted({s.fragment for s in log.unattributed}) == [0, 1]  # each block still proven one kernel's
    told = [p.message for p in log.problems if "--svod-threads 1" in p.message]
    assert len(told) == 1 and "kernels of one bare name (r_8_16_4) print alike" in told[0], told
    _run, stated = read_run(switches, 2)
    assert [len(k.stages) for k in stated.kernels] == [len(e) for e in run.expected] and not stated.unattributed


BAD_LINES = [
    "garbage \x00\x01 that is not Svod output",
    '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"DEBUG","fields":{"mess',
    '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"DEBUG","target":"x"}',
    '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"DEBUG","fields":{"message":"Stage 42: a pass Svod lacks",'
    '"ast.optimized":"[1] SINK : Scalar(Void)\\n"},"target":"svod_schedule::optimizer"}',
    "[dump-canonical] optimized : graph error: cycle through shape",
]


@pytest.mark.parametrize("bad", BAD_LINES[1:])
def test_a_bad_line_is_one_problem_at_its_line_and_nothing_is_misfiled(bad: str) -> None:
    run = Run(Switches(rust_log="svod_schedule=trace,svod_codegen=trace"), 2)
    text, _ = run.build()
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if '"Stage 9: after pre_expand"' in line)
    lines.insert(at, bad)
    log = read_files([("run.log", "\n".join(lines))], threads_stated=1)
    assert [(p.line, p.file) for p in log.problems] == [(at + 1, 0)], [p.message for p in log.problems]
    assert [k.name for k in log.kernels] == NAMES
    for k, kernel in enumerate(log.kernels):
        assert {(s.label, s.source) for s in kernel.stages} == run.expected[k]


def test_garbage_and_another_programs_log_are_not_read_as_kernels() -> None:
    garbage = read_files([("g.log", "\n".join(BAD_LINES[:1] * 3) + "\nrunning 1 test\n")])
    assert not garbage.kernels and garbage.raw_lines == 4
    other = "\n".join([
        '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"INFO","fields":{"message":"listening","port":80},'
        '"target":"server"}', '{"not": "tracing"}'])
    read = read_files([("other.log", other)])
    assert not read.kernels and [p.line for p in read.problems] == [2]
    assert re.search("without the tracing `fields`", read.problems[0].message)


def test_tree_diffs_never_show_shifted_back_references() -> None:
    """One node added near the top: tgstore.compare.graphs numbers back-references by line, so every later
    reference changes; the Svod tree diff names them by structure, so only the real difference shows."""
    from tgstore.compare.graphs import structural_diff
    from tgstore.svod.treediff import tree_diff

    shared = [["CONST", "int", "4", []], ["RANGE", "int", "0", [0]], ["LOAD", "float", None, [1]]]
    uses = [["ADD", "float", None, [2, 2]], ["MUL", "float", None, [3, 2]], ["STORE", None, None, [1, 4]]]
    a = shared + [[op, dt, arg, list(src)] for op, dt, arg, src in uses] + [["SINK", None, None, [5]]]
    extra = [["NEG", "float", None, [2]]]  # inserted before the uses: every later position moves by one
    b = shared + extra + [[op, dt, arg, [s + 1 if s >= 3 else s for s in src]] for op, dt, arg, src in uses]
    b[4][3] = [3, 2]  # ADD now reads the new NEG: the one real difference
    b.append(["SINK", None, None, [6]])
    changed = [line for line in tree_diff(a, b, "a", "b") if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed and all("(line" not in line for line in changed)
    assert len(changed) <= 5, changed  # the NEG and the LOAD it wraps, one level deeper
    old = [line for line in structural_diff(a, b, "a", "b") if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert len(old) > len(changed)
