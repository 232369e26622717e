"""Svod's output on its real formats, and Svod against tinygrad stage by stage (issue: Svod on its real formats).

Fixtures are Svod's own trees (tests/fixtures/svod/docs) written as Svod's Rust code prints them
(tests/svod_fixtures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli import ingest_source, rows, tgstore
from svod_fixtures import (
    CASE,
    CASE_SOURCE,
    canonical_block,
    doc,
    extract_ir_output,
    interleaved_log,
    linear_dump,
    shift_ids,
    worked_example_log,
)

from tgstore.spelling.svod import Speller
from tgstore.svod.readers import read_files
from tgstore.svod.tree import TreeError, graph_hash, parse_tree

# ------------------------------------------------------------------------------------------------ trees

EVERY_SPELLING = """\
[90] SINK[KERNEL] : Scalar(Void)
├── [80] STORE : Scalar(Void) shape=[]
│   ├── [70] INDEX : Scalar(Float32) shape=[]
│   │   ├── [60] BUFFER(slot=0, addrspace=Some(Reg)) : Scalar(Float32) shape=[Const(1)]
│   │   │   └── [1] CONST(Int(1)) : Scalar(Int32) shape=[]
│   │   └── [61] SPECIAL('gidx0') : Scalar(Int32) shape=[]
│   │       └── [2] CONST(UInt(3)) : Scalar(UInt32) shape=[]
│   └── [71] Where : Scalar(Float32) shape=?
│       ├── [72] Lt : Scalar(Bool) shape=[]
│       │   ├── [73] DEFINE_VAR('n', min=1, max=8) : Scalar(Int32) shape=[]
│       │   └── [1] → (see above)
│       ├── [74] CONST(Float(-0.0)) : Scalar(Float32) shape=[]
│       └── [75] MulAcc : Vector { scalar: Float32, count: 4 } shape=[Const(4)]
│           ├── [76] STACK(len=2) : Scalar(Float32) shape=[Const(2)]
│           │   ├── [77] CONST(Float(1e-5)) : Scalar(Float32) shape=[]
│           │   └── [78] INVALID : Scalar(Bool) shape=[]
│           ├── [79] PERMUTE(axes=[1, 0]) : Scalar(Float32) shape=[Const(2), Const(2)]
│           │   └── [76] → (see above)
│           └── [81] REDUCE(Max, num_axes=1, ranges=[82]) : Scalar(Float32) shape=[]
│               ├── [76] → (see above)
│               └── [82] RANGE(R0_1, GroupReduce) : Scalar(Int32) shape=[]
│                   └── [1] → (see above)
└── [83] PROGRAM(name=r_8_16_4, target=CPU) : Scalar(Void)
"""


def test_every_spelling_of_format_node_parses() -> None:
    tree = parse_tree(EVERY_SPELLING)
    assert tree.roots == [90] and tree.node_count == 19
    assert tree.nodes[90].kernel_sink and tree.nodes[90].shape is None
    assert tree.nodes[71].shape == "?" and tree.nodes[75].dtype == "Vector { scalar: Float32, count: 4 }"
    assert tree.nodes[81].args == "Max, num_axes=1, ranges=[82]"
    speller = Speller()
    graph = {tuple(n[:3]) for n in tree.graph(speller)}
    assert {("SINK", "void", "KERNEL"), ("BUFFER", "float32", "slot=0,reg"), ("SPECIAL", "int32", "gidx0"),
            ("CONST", "uint32", "3"), ("WHERE", "float32", ""), ("CMPLT", "bool", ""), ("CONST", "float32", "-0.0"),
            ("MULACC", "float32.vec(4)", ""), ("CONST", "float32", "1e-05"), ("CONST", "bool", "invalid"),
            ("PERMUTE", "float32", "1,0"), ("REDUCE", "float32", "MAX:1"), ("RANGE", "int32", "0,1:GROUP_REDUCE"),
            ("PROGRAM", "void", "")} <= graph
    assert speller.unknown == ["Svod-only op DEFINE_VAR"]  # reported, not guessed


def test_structure_ignores_ids_even_inside_args() -> None:
    """Two allocations of the same tree (ids moved by 1000, REDUCE's ranges=[...] too) are one structure."""
    for name in ("worked-example-2.txt", "worked-example-3.txt", "worked-example-9.txt", "rangeify-1.txt"):
        a, b = parse_tree(doc(name)), parse_tree(shift_ids(doc(name), 1000))
        assert graph_hash(a.graph()) == graph_hash(b.graph()), name
    assert parse_tree(doc("worked-example-3.txt")).node_count == 20
    assert parse_tree(doc("worked-example-9.txt")).node_count == 43
    assert len(parse_tree(doc("worked-example-8.txt")).roots) == 3  # fragments: three roots


@pytest.mark.parametrize("broken, line", [
    ("[97] SINK[KERNEL] : Scalar(Void)\n└── [96] END Scalar(Void) shape=[]\n", 1),  # no ' : '
    ("[97] SINK[KERNEL] : Scalar(Void)\n└── [5] → (see above)\n", 1),  # a reference to nothing printed
    ("└── [96] END : Scalar(Void)\n", 0),  # a child without a parent
    ("[97] SINK : Scalar(Void)\n        └── [96] END : Scalar(Void)\n", 1),  # two levels down at once
])
def test_a_tree_that_does_not_parse_says_where(broken: str, line: int) -> None:
    with pytest.raises(TreeError) as info:
        parse_tree(broken)
    assert info.value.line == line


# ------------------------------------------------------------------------------------------------ kernels


def stages_of(log_text: str) -> list[tuple]:
    log = read_files([("x.log", log_text)], threads_stated=1)
    return [(k.name, k.test, [(s.label, s.node_count) for s in k.stages if s.source == "event"]) for k in log.kernels]


def test_kernel_boundaries_at_trace_level() -> None:
    """`kernel initial` comes twice per kernel: the first starts it, the second is its 00-initial."""
    (kernel,) = stages_of(worked_example_log(per_stage=False, dump=False))
    name, test, stages = kernel
    assert (name, test) == ("r_8_16_4", "test::reduce::sum_axis1::llvm")
    assert [label for label, _ in stages] == ["kernel-initial", "pre-movement", "pre-load-collapse",
                                               "pre-split-ranges", "pre-symbolic", "pre-simplify-ranges",
                                               "00-initial", "09-pre_expand", "20-final_rewrite"]
    assert dict(stages)["kernel-initial"] == 15 and dict(stages)["00-initial"] == 20
    two = stages_of(worked_example_log(per_stage=False, dump=False, kernels=2))
    assert [k[0] for k in two] == ["r_8_16_4", "r_8_16_4n1"] and all(len(k[2]) == 9 for k in two)


def test_kernel_boundaries_at_debug_level() -> None:
    """Without TRACE there is no `kernel initial` and no generated code: kernels start at the pre-opt events, and
    their names come from the runtime's `Compiling LLVM IR` event."""
    two = stages_of(worked_example_log(trace=False, per_stage=False, dump=False, kernels=2))
    assert [k[0] for k in two] == ["r_8_16_4", "r_8_16_4n1"]
    assert [label for label, _ in two[1][2]] == ["pre-movement", "pre-load-collapse", "pre-split-ranges",
                                                 "pre-symbolic", "pre-simplify-ranges", "09-pre_expand",
                                                 "20-final_rewrite"]


def test_stderr_lines_belong_to_their_kernel() -> None:
    """[per-stage] and [dump-stage] lines, with or without the JSON events around them."""
    full = read_files([("x.log", worked_example_log(kernels=2))], threads_stated=1)
    for kernel in full.kernels:
        labels = [(s.label, s.source) for s in kernel.stages if s.source != "event"]
        assert labels == [("00-initial", "per-stage"), ("00-initial", "dump-stage"), ("09-pre_expand", "per-stage"),
                          ("09-pre_expand", "dump-stage"), ("20-final_rewrite", "per-stage"),
                          ("20-final_rewrite", "dump-stage")]
        dumped = {s.label: s for s in kernel.stages if s.source == "dump-stage"}
        assert dumped["20-final_rewrite"].tree.node_count == 43 and dumped["00-initial"].node_count == 20
    stderr_only = "\n".join(line for line in worked_example_log(kernels=2).split("\n")
                            if '{"timestamp"' not in line)
    assert len(read_files([("stderr.log", stderr_only)], threads_stated=1).kernels) == 2


def test_backends_run_in_parallel_keep_their_stages_unattributed() -> None:
    """Two tests in libtest's threads, both printing: nothing in the output names its test, so no stage is filed on
    a kernel (never one run of two programs), and a problem says how to rerun to prove the tests."""
    log = read_files([("both.log", interleaved_log())])
    assert log.tests == ["test::reduce::sum_axis1::clang", "test::reduce::sum_axis1::llvm"]
    assert log.unattributed and all(not k.stages for k in log.kernels)
    assert any(re.search(r"output of 2 tests run in libtest's threads \(test::reduce::sum_axis1::clang, "
                         r"test::reduce::sum_axis1::llvm\).*--test-threads=1", p.message) for p in log.problems)


def test_every_format_is_read(tmp_path: Path) -> None:
    log_text = worked_example_log(kernels=2)
    ir = read_files([("ir.txt", extract_ir_output(log_text))], threads_stated=1)
    assert [k.name for k in ir.kernels] == ["r_8_16_4", "r_8_16_4n1"]
    assert [s.label for s in ir.kernels[0].stages] == ["kernel-initial", "pre-movement", "pre-load-collapse",
                                                       "pre-split-ranges", "pre-symbolic", "pre-simplify-ranges",
                                                       "00-initial", "09-pre_expand", "20-final_rewrite"]
    dump_dir = [("tree_455.txt", linear_dump(doc("worked-example-9.txt"))),
                ("linear_455.txt", linear_dump(doc("worked-example-9.txt"))), ("r_8_16_4.ll", doc("r_8_16_4.ll")),
                ("r_8_16_4.post.ll", doc("r_8_16_4.ll"))]
    files = read_files(dump_dir)
    assert [f[1] for f in files.files] == ["linear", "linear", "llvm-ir", "llvm-ir"] and not files.problems
    (kernel,) = files.kernels  # the .ll files name it; the LINEAR files of its one sink id are its own
    assert kernel.name == "r_8_16_4" and kernel.code_kind == "llvm"
    assert [(s.label, s.node_count) for s in kernel.stages] == [("llvm-ir-post-o2", None), ("linear-tree", 43),
                                                                ("linear", 43)]
    document = {"schema_version": 7, "stage": "kernel_ast", "roots": [0], "nodes": [
        {"id": 0, "op": "SINK", "dtype": {"kind": "scalar", "name": "void"}, "shape": None,
         "arg": {"kind": "none"}, "src": []}]}
    capture = read_files([("capture.json", json.dumps(document, indent=2) + "\n")])
    # kernel_ast is the schedule's whole kernel graph (rangeify/kernel.rs), dumped once: never a kernel's stage
    assert capture.files[0][1] == "capture" and capture.schedule_stages[0].canonical == document
    dumped = read_files([("x.log", canonical_block("kernel_ast", document) + log_text)])
    assert dumped.schedule_stages[0].label == "kernel_ast" and dumped.schedule_stages[0].canonical == document
    assert len(dumped.kernels) == 2 and not any(s.canonical for k in dumped.kernels for s in k.stages)


def test_problems_name_their_line_and_keep_the_text(tmp_path: Path) -> None:
    lines = worked_example_log().split("\n")
    start = next(i for i, line in enumerate(lines) if line == "[dump-stage] 09-pre_expand :")
    lines[start + 2] = lines[start + 2].replace(" : Scalar(Void)", " Scalar(Void)")  # a broken tree line
    lines.insert(3, '{"timestamp":"2026-05-07T18:07:43.000001Z","level":"DEBUG","fields":{"mess')  # cut JSON
    log = read_files([("x.log", "\n".join(lines))])
    messages = sorted((p.line, p.message) for p in log.problems)
    assert messages[0][0] == 4 and messages[0][1].startswith("not a JSON tracing event (Unterminated string")
    # the broken line: +1 for the inserted line, +1 to count from 1
    assert messages[1][0] == start + 4 and messages[1][1].startswith("tree of '09-pre_expand' kept as text")
    kept = next(s for s in log.kernels[0].stages if s.source == "dump-stage" and s.label == "09-pre_expand")
    assert kept.tree is None and kept.tree_text.startswith("[") and "Scalar(Void)" in kept.tree_text


# ------------------------------------------------------------------------------------------------ CLI and parity


@pytest.fixture(scope="module")
def parity_db(tmp_path_factory, tinygrad_release) -> Path:
    """tinygrad 0.14.0's extraction of the worked example's program (C and LLVM, stages) in a database."""
    return ingest_source(tmp_path_factory.mktemp("parity"), CASE_SOURCE, tinygrad_release("0.14.0"))


def test_ingest_svod_json_per_log(parity_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    log = tmp_path / "trace.log"
    log.write_text(worked_example_log(kernels=2))
    proc = tgstore("ingest-svod", log, "--case", CASE, "--svod-commit", "5c1b7bc", "--db", db, "--json",
                   "--svod-threads", "1")  # the log was made with SVOD_THREADS=1, which it cannot show
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {k for k in out} >= {"svod_run", "case", "kernels", "problems"} and out["problems"] == []
    assert [(k["index"], k["name"]) for k in out["kernels"]] == [(0, "r_8_16_4"), (1, "r_8_16_4n1")]
    stage = next(s for s in out["kernels"][0]["stages"] if s["label"] == "20-final_rewrite")
    assert stage == {"label": "20-final_rewrite", "node_count": 43, "has_tree": True, "has_canonical": False}
    again = tgstore("ingest-svod", log, "--case", CASE, "--db", db, "--svod-threads", "1")
    assert again.returncode == 0 and "already stored" in again.stderr
    assert rows(db, "SELECT count(*), sum(kernel_count) FROM svod_runs") == [(1, 2)]
    # without the statement the same file is another reading: a run of its own, its same-named blocks unattributed
    unstated = tgstore("ingest-svod", log, "--case", CASE, "--db", db, "--json")
    assert unstated.returncode == 0, unstated.stderr
    out = json.loads(unstated.stdout)
    assert [len(k["stages"]) for k in out["kernels"]] == [0, 0]
    assert any("--svod-threads 1" in p["message"] for p in out["problems"]), out["problems"]
    missing = tgstore("ingest-svod", tmp_path / "nope.log", "--case", CASE, "--db", db)
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_parity_with_tinygrad(parity_db: Path, tmp_path: Path) -> None:
    """Svod's worked example against tinygrad 0.14.0: the kernel AST is equal after normalization (15 nodes each);
    an altered Svod tree differs at its stage, with the changed node in the diff."""
    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text(worked_example_log())
    # in 00-initial, the UNROLL range's extent becomes 8 (Svod would then have unrolled by 8, not 4)
    bad.write_text(worked_example_log().replace("[116] CONST(Int(4)) : Scalar(WeakInt) shape=[]",
                                                "[116] CONST(Int(8)) : Scalar(WeakInt) shape=[]"))
    for path in (good, bad):
        assert tgstore("ingest-svod", path, "--case", CASE, "--db", db).returncode == 0
    proc = tgstore("parity", CASE, "--svod", "1", "--json", "--db", db)
    report = json.loads(proc.stdout)
    assert set(report) >= {"case", "tinygrad_commit", "svod_run", "kernels"}
    (kernel,) = report["kernels"]
    assert (kernel["svod_name"], kernel["tinygrad_name"]) == ("r_8_16_4", "r_8_16_4")
    verdicts = {s["stage"]: s for s in kernel["stages"]}
    assert verdicts["kernel-initial"]["verdict"] == "equal"
    assert (verdicts["kernel-initial"]["svod_nodes"], verdicts["kernel-initial"]["tinygrad_nodes"]) == (15, 15)
    assert verdicts["00-initial"]["verdict"] == "equal" and verdicts["09-pre_expand"]["verdict"] == "equal"
    altered = json.loads(tgstore("parity", CASE, "--svod", "2", "--json", "--db", db).stdout)["kernels"][0]
    assert altered["first_divergence"] == "00-initial"
    diff = next(s for s in altered["stages"] if s["stage"] == "00-initial")["diff"]
    assert "-" in diff and any(line.startswith("-") and "CONST weakint arg=8" in line for line in diff.splitlines())
    assert any(line.startswith("+") and "CONST weakint arg=4" in line for line in diff.splitlines())
    assert tgstore("parity", CASE, "--svod", "2", "--db", db).returncode == 1
    matrix = tgstore("query", "parity_matrix", "-p", f"case_name={CASE}", "--jsonl", "--db", db)
    cells = {(r["svod_run"], r["stage"]): r["verdict"] for r in map(json.loads, matrix.stdout.splitlines())}
    assert cells[(1, "kernel-initial")] == "equal" and cells[(2, "00-initial")] == "differs"
    assert cells[(1, "00-initial")] == "equal"
    # the query and `parity` decide alike: every cell the matrix compared has parity's verdict
    for run in (1, 2):
        stages = json.loads(tgstore("parity", CASE, "--svod", str(run), "--json", "--db", db).stdout)["kernels"][0]
        decided = {s["stage"]: s["verdict"] for s in stages["stages"]}
        compared = {stage: v.split(" (")[0] for (r, stage), v in cells.items() if r == run
                    and v.split(" (")[0] in ("equal", "differs")}
        assert compared and all(decided[stage] == verdict for stage, verdict in compared.items()), (run, compared)


def test_canonical_documents_are_compared_exactly(parity_db: Path, tmp_path: Path) -> None:
    """A Svod canonical dump equal to tinygrad's document is equal; one changed field makes it differ, aligned."""
    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    document = json.loads(tgstore("canonical", CASE, "--stage", "optimized", "--db", db).stdout)
    changed = json.loads(json.dumps(document))
    const = next(n for n in changed["nodes"] if n["op"] == "CONST" and n["arg"]["value"]["value"] == 64)
    const["arg"]["value"]["value"] = 32
    newer = dict(document, schema_version=8)
    for name, doc_ in (("same", document), ("changed", changed), ("newer", newer)):
        lines = worked_example_log().split("\n")  # `optimized` is dumped after pre-opt, before `kernel initial`
        at = next(i for i, line in enumerate(lines) if "pre-opt: simplify ranges complete" in line) + 1
        lines.insert(at, canonical_block("optimized", doc_).rstrip("\n"))
        (tmp_path / f"{name}.log").write_text("\n".join(lines))
        assert tgstore("ingest-svod", tmp_path / f"{name}.log", "--case", CASE, "--db", db).returncode == 0
    same = json.loads(tgstore("parity", CASE, "--svod", "1", "--json", "--db", db).stdout)["kernels"][0]
    assert next(s for s in same["stages"] if s["stage"] == "optimized")["verdict"] == "equal"
    other = json.loads(tgstore("parity", CASE, "--svod", "2", "--json", "--db", db).stdout)["kernels"][0]
    stage = next(s for s in other["stages"] if s["stage"] == "optimized")
    assert stage["verdict"] == "differs" and stage["basis"] == "canonical"
    assert '"value": 32' in stage["diff"] and '"value": 64' in stage["diff"]
    newer = json.loads(tgstore("parity", CASE, "--svod", "3", "--json", "--db", db).stdout)["kernels"][0]
    stage = next(s for s in newer["stages"] if s["stage"] == "optimized")
    assert stage["verdict"] == "not comparable" and "schema_version 8" in stage["why"]


def test_parity_drift_is_port_queue_for_one_case(releases_db: Path) -> None:
    """Between two stored releases with unstored history between them, the change is a gap, never blamed on 0.14.0;
    the knock-on passes are counted under the first changed pass of each kernel."""
    proc = tgstore("parity-drift", CASE, "--from", "0.12.0", "--to", "0.14.0", "--json", "--db", releases_db)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["cases"] == [CASE] and found["commits"] == []
    changes = [c for g in found["gaps"] for c in g["changes"]]
    assert {c["renderer"] for c in changes if c.get("scope") == "lower"} == {"C", "LLVM"}
    same = tgstore("parity-drift", CASE, "--from", "0.14.0", "--to", "0.12.0", "--db", releases_db)
    assert same.returncode == 1 and "is not after" in same.stderr


def test_a_log_and_its_dump_directories_are_one_run_and_the_text_says_what_was_seen(parity_db: Path,
                                                                                     tmp_path: Path) -> None:
    """One ingest-svod call with a debug-level log (no kernel names) and its SVOD_DUMP_LLVM_IR directory: one run,
    the .ll files reported as not placed; parity pairs the kernel by structure or order and says so, lists every
    stage in pipeline order with its tinygrad pass, and exits 0 with `result: no stage differs` when nothing
    observed differs."""
    from svod_emission import Run, Switches

    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    text, files = Run(Switches(rust_log="svod_schedule=trace", per_stage=True, llvm_ir=True), 1).build()
    (tmp_path / "run.log").write_text(text)
    (tmp_path / "ll").mkdir()
    for name, body in files.items():
        (tmp_path / "ll" / name).write_text(body)
    proc = tgstore("ingest-svod", tmp_path / "run.log", tmp_path / "ll", "--case", CASE, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["kernels"]) == 1 and [p["file"].endswith("r_8_16_4.ll") for p in out["problems"]] == [True]
    assert rows(db, "SELECT count(*), max(file_count) FROM svod_runs") == [(1, 2)]
    report = tgstore("parity", CASE, "--db", db)
    lines = report.stdout.splitlines()
    assert report.returncode == (1 if "result: differs" in report.stdout else 0)
    kernel_line = next(line for line in lines if line.startswith("kernel 0:"))
    assert "paired by" in kernel_line
    labels = [line.split()[0] for line in lines if line.startswith("  ") and "[" in line]
    assert labels.index("kernel-initial") < labels.index("00-initial") < labels.index("20-final_rewrite")
    assert any(line.startswith("  kernel-initial") and "[input:multi_pm]" in line for line in lines)
    assert any(line.startswith("schedule:") for line in lines)
    assert any("not in this log" in line and "SVOD_DUMP_CANONICAL_STAGE=optimized" in line for line in lines)
    assert any(line.startswith("  kernel_ast") and "SVOD_DUMP_CANONICAL_STAGE=kernel_ast" in line for line in lines)
    assert lines[-1] in ("result: no stage differs; exit status 0", "result: differs (kernel 0 at 08-post_opt_sym; "
                         "schedule at rangeify-earliest); exit status 1")


def test_port_queue_never_blames_the_later_commit_of_a_gap(releases_db: Path) -> None:
    """Without --repo the stored releases are not known to be adjacent: every change is reported in a gap with an
    unknown number of unstored commits, and no commit is named."""
    proc = tgstore("port-queue", CASE, "--from", "0.12.0", "--to", "0.14.0", "--json", "--db", releases_db)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["commits"] == [] and found["gaps"] and all(g["unstored"] is None for g in found["gaps"])
    changes = [c for g in found["gaps"] for c in g["changes"]]
    assert changes and all(c["change"] in ("added", "removed", "changed") and c["svod_stage"] for c in changes)
    per_kernel = [(g["before"], c["kernel"], c["renderer"], c["scope"]) for g in found["gaps"] for c in g["changes"]
                  if c["change"] == "changed" and c.get("scope")]
    assert len(per_kernel) == len(set(per_kernel)), "knock-on changes are collapsed under the first changed pass"
    text = tgstore("port-queue", CASE, "--from", "0.12.0", "--to", "0.14.0", "--db", releases_db)
    assert "an unknown number of unstored commits" in text.stdout


def test_canonical_documents_carry_the_kernel_names_tinygrad_gives(tmp_path: Path, tinygrad_release) -> None:
    """Softmax's second kernel is r_4_16n1 in tinygrad's generated C; its canonical documents must say so too (the
    name counter is not reset before each kernel's canonical lowering)."""
    cases = tmp_path / "cases.py"
    cases.write_text("from tinygrad import Tensor\n\n\ndef case_softmax():\n"
                     "    return Tensor.empty(4, 16).softmax(-1)\n")
    db = tmp_path / "s.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release("0.14.0"), "--cases", cases, "--renderers",
                   "C", "--stages", "C")
    assert proc.returncode == 0, proc.stderr
    names = [r[0] for r in rows(db, "SELECT kernel_name FROM v_sources WHERE \"case\" = 'softmax' AND renderer = 'C' "
                                    "ORDER BY position")]
    assert len(names) == 3  # 0.14.0 names both reduce kernels r_4_16; Svod's pin names the second r_4_16n1
    for position, name in enumerate(names):
        document = json.loads(tgstore("canonical", "softmax", "--stage", "program", "--kernel", str(position),
                                      "--db", db).stdout)
        assert name in json.dumps(document), (position, name)
    # Svod's kernel_ast is the whole kernel graph: stored for the case as `kernel_graph`, one CALL per kernel
    graph = json.loads(tgstore("canonical", "softmax", "--stage", "kernel_graph", "--db", db).stdout)
    assert graph["stage"] == "kernel_ast" and sum(n["op"] == "CALL" for n in graph["nodes"]) == 3


def test_svod_kernel_ast_is_compared_with_tinygrads_whole_kernel_graph(parity_db: Path, tmp_path: Path) -> None:
    """Svod dumps `kernel_ast` once, for the whole kernel graph (rangeify/kernel.rs): parity compares it with the
    case's kernel_graph document at schedule level, never with one kernel's AST; `reg` reads as `register`."""
    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    graph = json.loads(tgstore("canonical", CASE, "--stage", "kernel_graph", "--db", db).stdout)
    assert graph["stage"] == "kernel_ast"
    tensor = json.loads(tgstore("canonical", CASE, "--stage", "tensor", "--db", db).stdout)
    rangeified = json.loads(tgstore("canonical", CASE, "--stage", "rangeified", "--db", db).stdout)
    dumps = canonical_block("tensor", tensor) + canonical_block("rangeified", rangeified) + \
        canonical_block("kernel_ast", graph)  # in Svod's order: realize.rs, rangeify_with_map, try_get_kernel_graph
    (tmp_path / "k.log").write_text(dumps + worked_example_log())
    assert tgstore("ingest-svod", tmp_path / "k.log", "--case", CASE, "--db", db).returncode == 0
    report = json.loads(tgstore("parity", CASE, "--json", "--db", db).stdout)
    assert not any(s["stage"] == "kernel_ast" for k in report["kernels"] for s in k["stages"])
    verdicts = {(s["stage"], s["basis"]): s["verdict"] for s in report["schedule"]["stages"]}
    assert verdicts[("kernel_ast", "canonical")] == "equal"
    assert verdicts[("tensor", "canonical")] == "equal" and verdicts[("rangeified", "canonical")] == "equal"


def test_register_and_reg_are_one_spelling() -> None:
    from tgstore.spelling.svod import same_spelling

    node = {"id": 0, "op": "PARAM", "arg": {"kind": "param", "address_space": "reg"}}
    assert same_spelling({"nodes": [node]})["nodes"][0]["arg"]["address_space"] == "register"


@pytest.mark.parametrize(("switches", "expected"), [
    ({"rust_log": "svod_schedule::optimizer=trace"}, {"kernel-initial": ("equal", "tree"),
                                                       "00-initial": ("equal", "tree")}),
    ({"rust_log": "svod_schedule::optimizer=debug"}, {"kernel-initial": ("not in this log", "tree"),
                                                       "00-initial": ("not in this log", "tree")}),
    ({"per_stage": True}, {"kernel-initial": ("not in this log", "tree"), "00-initial": ("equal", "node_count")}),
    ({"dump_stage": "0"}, {"00-initial": ("equal", "tree"), "09-pre_expand": ("equal", "tree")}),
])
def test_verdicts_say_what_each_setting_lets_the_log_show(parity_db: Path, tmp_path: Path, switches: dict,
                                                          expected: dict) -> None:
    from svod_emission import Run, Switches

    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    text, _files = Run(Switches(**switches), 1).build()
    (tmp_path / "run.log").write_text(text)
    assert tgstore("ingest-svod", tmp_path / "run.log", "--case", CASE, "--db", db).returncode == 0
    proc = tgstore("parity", CASE, "--json", "--db", db)
    report = json.loads(proc.stdout)
    (kernel,) = report["kernels"]
    verdicts = {s["stage"]: s for s in kernel["stages"]}
    for stage, (verdict, basis) in expected.items():
        assert (verdicts[stage]["verdict"], verdicts[stage]["basis"]) == (verdict, basis), verdicts[stage]
        if verdict == "not in this log":
            assert verdicts[stage]["why"]  # the Svod setting that would print it
    assert proc.returncode == (1 if report["differs"] else 0)
    assert report["differs"] == any(s["verdict"] == "differs" for k in [*report["kernels"], report["schedule"]]
                                    for s in k["stages"])


def test_a_log_of_another_program_is_not_stored(tmp_path: Path) -> None:
    other = tmp_path / "server.log"
    other.write_text('{"timestamp":"2026-05-07T18:07:43.000001Z","level":"INFO","fields":{"message":"listening",'
                     '"port":80},"target":"server"}\nserving...\n')
    proc = tgstore("ingest-svod", other, "--case", CASE, "--db", tmp_path / "x.db")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "nothing stored" in proc.stderr
    assert rows(tmp_path / "x.db", "SELECT count(*) FROM svod_runs") == [(0,)]


def test_parity_of_a_session_pairs_suffixed_names_and_says_where_svod_died(parity_db: Path, tmp_path: Path) -> None:
    """A later test's kernel carries the process-wide counter's suffix (`r_8_16_4n1`): paired with tinygrad's
    `r_8_16_4` by name in program order, not reported as a divergence. A panicked run: the stages after the last
    one reached are `not reached`, and a note names the panic beside tinygrad's pass there."""
    from svod_runs import PANIC_AT, panic_session, serial_session

    db = tmp_path / "copy.db"
    db.write_bytes(parity_db.read_bytes())
    session, failed = tmp_path / "s.log", tmp_path / "f.log"
    session.write_text(serial_session(), encoding="utf-8")
    failed.write_text(panic_session(), encoding="utf-8")
    assert tgstore("ingest-svod", session, "--case", CASE, "--test", "::llvm", "--db", db).returncode == 0
    (kernel,) = json.loads(tgstore("parity", CASE, "--svod", "1", "--json", "--db", db).stdout)["kernels"]
    assert (kernel["svod_name"], kernel["tinygrad_name"], kernel["paired_by"]) == \
        ("r_8_16_4n1", "r_8_16_4", "name (counter suffix)")
    assert tgstore("ingest-svod", failed, "--case", CASE, "--test", "::llvm", "--db", db).returncode == 0
    report = json.loads(tgstore("parity", CASE, "--svod", "2", "--json", "--db", db).stdout)
    verdicts = {s["stage"]: s["verdict"] for s in report["kernels"][0]["stages"]}
    assert verdicts["09-pre_expand"] == "equal" and verdicts["10-pm_reduce"] == "not reached"
    assert verdicts["20-final_rewrite"] == "not reached" and verdicts["kernel-initial"] == "equal"
    assert any(f"panicked at {PANIC_AT} after 09-pre_expand, in 10-pm_reduce (tinygrad pass 'remove reduces')" in n
               for n in report["notes"]), report["notes"]
