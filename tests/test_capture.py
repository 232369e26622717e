"""Capture mode, suites and the CI gate, with real tinygrad releases (kernels really compile and run with clang)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli import rows, tgstore

RELEASE = "0.14.0"
needs_clang = pytest.mark.skipif(shutil.which("clang") is None, reason="capture runs kernels: needs clang")

# Three distinct kernels (a fill, an elementwise, a reduce), the elementwise one lowered twice.
SCRIPT = """\
from tinygrad import Tensor


def main():
    a = Tensor.ones(16).contiguous().realize()
    b = (a * 2 + 1).realize()
    total = b.sum().realize()
    again = (a * 2 + 1).realize()
    print("total", total.item(), again.shape)
    print("the script's own stderr", file=__import__("sys").stderr)


main()
"""
FAILING_SCRIPT = """\
from tinygrad import Tensor

(Tensor.ones(8).contiguous() * 3).realize()
raise RuntimeError("the program failed after one kernel")
"""
CASES = """\
from tinygrad import Tensor


def case_add():
    \"\"\"add\"\"\"
    return Tensor.empty(16, 16) + Tensor.empty(16, 16)


def case_sum():
    \"\"\"sum\"\"\"
    return Tensor.empty(8, 64).sum(1)


def case_needs_newer_api():
    \"\"\"an API no tinygrad has: unsupported, not an error\"\"\"
    return Tensor.empty(4).an_api_from_the_future()
"""


@needs_clang
def test_capture_stores_each_distinct_kernel_once_with_its_call_site(tmp_path, tinygrad_release):
    (tmp_path / "three.py").write_text(SCRIPT)
    db = tmp_path / "t.db"
    proc = tgstore("capture", "--db", db, "--tinygrad", tinygrad_release(RELEASE), "--renderers", "C",
                   "--", "python", "three.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "is `tgstore capture" not in proc.stderr  # the command's own spelling: no note
    found = rows(db, "SELECT si.position, si.call_site, k.name, p.renderer FROM schedule_items si "
                     "JOIN kernels k ON k.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id "
                     "ORDER BY si.position")
    # the CPU runtime's own programs, lowered when the device opens (as process_replay records them), then the
    # script's three kernels in order; the elementwise one lowered twice is stored once
    runtime = [name for _pos, _site, name, _renderer in found if name.endswith("_prog")]
    assert sorted(runtime) == ["signal_prog", "timestamp_prog", "wait_prog", "worker_prog"]
    items = [row for row in found if not row[2].endswith("_prog")]
    assert [(site, renderer) for _pos, site, _name, renderer in items] == [
        ("three.py:5 in main", "C"), ("three.py:6 in main", "C"), ("three.py:7 in main", "C")]
    assert [pos for pos, *_ in items] == sorted(pos for pos, *_ in items)
    assert items[2][2].startswith("r_")  # the reduce
    # the command's own output passed through, each stream to ours; tgstore's report only on stderr
    assert proc.stdout.splitlines() == ["total 48.0 (16,)"]
    assert "the script's own stderr" in proc.stderr and "run 1 ok" in proc.stderr
    (suite, status, command), = rows(db, "SELECT s.name, r.status, r.command FROM runs r "
                                         "JOIN suites s ON s.id = r.suite_id")
    assert (suite, status) == ("capture: python three.py", "ok")
    assert json.loads(command)["exit_status"] == 0
    assert rows(db, "SELECT c.name, rc.status FROM run_cases rc JOIN cases c ON c.id = rc.case_id") == [
        ("command", "ok")]


@needs_clang
def test_a_failing_command_keeps_what_it_lowered(tmp_path, tinygrad_release):
    script = tmp_path / "fails.py"
    script.write_text(FAILING_SCRIPT)
    db = tmp_path / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(RELEASE), "--renderers", "C",
                   "--capture", "--", "python", script)
    assert proc.returncode == 0, proc.stderr
    (status, error), = rows(db, "SELECT status, error FROM runs")
    assert status == "partial"
    assert error == "the captured command exited 1: RuntimeError: the program failed after one kernel"
    # the fill (contiguous) and the multiply, both on line 3; outside the working directory: an absolute path
    sites = rows(db, "SELECT si.call_site FROM schedule_items si JOIN kernels k ON k.id = si.kernel_id "
                     "WHERE k.name NOT LIKE '%\\_prog' ESCAPE '\\'")
    assert sites == [(f"{script}:3 in <module>",)] * 2


def test_a_command_that_cannot_run_is_a_failed_run(tmp_path, tinygrad_release):
    """`--capture -- /nonexistent/prog` captured nothing: a failed run (exit 1) saying why, not an empty partial
    one."""
    db = tmp_path / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(RELEASE), "--renderers", "C",
                   "--capture", "--", tmp_path / "nonexistent" / "prog")
    assert proc.returncode == 1, proc.stderr
    (status, error), = rows(db, "SELECT status, error FROM runs")
    assert status == "failed"
    assert error.startswith("the captured command did not run")


def test_capture_without_a_command_is_one_line(tmp_path):
    proc = tgstore("ingest", "--db", tmp_path / "t.db", "--capture")  # the old spelling: one line still
    assert proc.returncode == 1
    assert proc.stderr.strip() == "error: --capture needs a command after --, e.g. tgstore capture -- python script.py"
    assert not (tmp_path / "t.db").exists()
    proc = tgstore("capture", "--db", tmp_path / "t.db")  # the command itself: Typer's one line for its argument
    assert proc.returncode == 2 and "Missing argument" in proc.stderr
    assert not (tmp_path / "t.db").exists()


@pytest.mark.slow  # two CLI processes
def test_suites_lists_the_builtin_suites_with_case_counts():
    proc = tgstore("suites", "--json")
    assert proc.returncode == 0, proc.stderr
    found = {s["name"]: s for s in json.loads(proc.stdout)}
    assert set(found) == {"builtin", "models"}
    assert found["builtin"]["cases"] >= 40
    assert {"gpt2", "resnet18"} <= set(found["models"]["case_names"])
    assert tgstore("ingest", "--suite", "nope").stderr.strip() == (
        "error: no built-in suite 'nope'; the suites are: builtin, models (or pass --cases FILE)")


@pytest.fixture(scope="module")
def stored_release(tmp_path_factory, tinygrad_release) -> tuple[Path, Path]:
    """(database holding 0.14.0 over CASES, cases file)."""
    base = tmp_path_factory.mktemp("check")
    cases = base / "cases.py"
    cases.write_text(CASES)
    db = base / "t.db"
    proc = tgstore("ingest", "--db", db, "--tinygrad", tinygrad_release(RELEASE), "--cases", cases,
                   "--renderers", "C,LLVM", "--stages", "none")
    assert proc.returncode == 0, proc.stderr
    assert rows(db, "SELECT c.name, rc.status FROM run_cases rc JOIN cases c ON c.id = rc.case_id ORDER BY 1") == [
        ("add", "ok"), ("needs_newer_api", "unsupported"), ("sum", "ok")]
    assert rows(db, "SELECT status FROM runs") == [("ok",)]  # an unsupported case is not a failure
    return db, cases


def test_check_passes_an_unchanged_copy_and_fails_a_changed_c_renderer(stored_release, tinygrad_release, tmp_path):
    db, cases = stored_release
    copy = tmp_path / "tinygrad-pr"
    shutil.copytree(tinygrad_release(RELEASE), copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = rows(db, "SELECT count(*) FROM runs")
    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--cases", cases)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no kernel changed" in proc.stdout.splitlines()[0]

    cstyle = copy / "tinygrad" / "renderer" / "cstyle.py"
    text = cstyle.read_text()
    assert text.count('  buffer_suffix = " restrict"\n') == 1
    cstyle.write_text(text.replace('  buffer_suffix = " restrict"\n', '  buffer_suffix = " __restrict__"\n'))
    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--cases", cases)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "  source changed (same AST): 2" in proc.stdout.splitlines()
    listed = [line.strip() for line in proc.stdout.splitlines() if line.startswith("    ")]
    assert listed == ["add[0] E_64_4: C source changed", "sum[0] r_8_16_4: C source changed"]
    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--cases", cases, "--limit", "1")
    assert proc.returncode == 1 and "    ... and 1 more (--limit)" in proc.stdout.splitlines()
    assert rows(db, "SELECT count(*) FROM runs") == before  # the database is left as it was

    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--cases", cases, "--json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["summary"]["renderers_changed"] == {"C": 2}
    assert "__restrict__" in report["diffs"][0]["diff"]


def test_check_against_an_unstored_commit_says_how_to_store_it(stored_release, tinygrad_release):
    db, _cases = stored_release
    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", tinygrad_release(RELEASE),
                   "--suite", "models")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no stored run of tree:") and "for suite 'models' on CPU" in proc.stderr


# A test file whose kernels tinygrad lowers in different contexts: the NOOPT matmul is another kernel than the
# optimized one (same AST), and each is stored with the program tinygrad compiled for it.
TESTS = """\
from tinygrad import Tensor
from tinygrad.helpers import Context


def matmul():
    return (Tensor.ones(8, 8).contiguous() @ Tensor.ones(8, 8).contiguous()).realize()


def test_matmul_noopt():
    with Context(NOOPT=1):
        assert matmul().tolist()[0][0] == 8


def test_matmul():
    assert matmul().tolist()[0][0] == 8
"""


@needs_clang
def test_check_over_a_pytest_run_with_kernels_in_their_context(tinygrad_release, tmp_path):
    copy = tmp_path / "tinygrad-pr"
    shutil.copytree(tinygrad_release(RELEASE), copy, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_kernels.py").write_text(TESTS)
    db = tmp_path / "t.db"
    command = ["--", "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_kernels.py"]
    proc = tgstore("ingest", "--db", db, "--tinygrad", copy, "--capture", "--renderers", "C", "--stages", "none",
                   *command, cwd=work)
    assert proc.returncode == 0, proc.stderr
    found = rows(db, """SELECT c.name, si.context, si.lowered_by, kn.name, b.text FROM run_cases rc
        JOIN cases c ON c.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN kernels kn ON kn.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id AND p.renderer = 'C'
        JOIN blobs b ON b.id = p.source_blob_id WHERE kn.name LIKE 'r\\_%' ESCAPE '\\' ORDER BY c.name""")
    by_test = {name.rsplit("::", 1)[-1]: (context, lowered_by, source) for name, context, lowered_by, _k, source
               in found}
    assert set(by_test) == {"test_matmul", "test_matmul_noopt"}, found
    assert json.loads(by_test["test_matmul_noopt"][0]) == {"NOOPT": 1} and by_test["test_matmul"][0] is None
    assert by_test["test_matmul_noopt"][1] == by_test["test_matmul"][1] == "C"
    # the NOOPT kernel is the unoptimized one: no upcast/unroll, so its source differs from the optimized kernel's
    assert by_test["test_matmul_noopt"][2] != by_test["test_matmul"][2]
    noopt = next(name for name, *_ in found if name.endswith("::test_matmul_noopt"))
    shown = [json.loads(line) for line in tgstore("query", "case_at_commit", "--db", db, "-p", f"commit={RELEASE}",
                                                  "-p", f"case_name={noopt}", "-p", "renderer=C",
                                                  "--jsonl").stdout.splitlines()]
    assert [json.loads(r["context"]) for r in shown if r["kernel_name"].startswith("r_")] == [{"NOOPT": 1}]

    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--renderers", "C", *command,
                   cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no kernel changed" in proc.stdout.splitlines()[0]
    cstyle = copy / "tinygrad" / "renderer" / "cstyle.py"
    text = cstyle.read_text()
    cstyle.write_text(text.replace('  buffer_suffix = " restrict"\n', '  buffer_suffix = " __restrict__"\n'))
    proc = tgstore("check", "--db", db, "--against", RELEASE, "--tinygrad", copy, "--renderers", "C", *command,
                   cwd=work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(line.startswith("  source changed (same AST): ") for line in proc.stdout.splitlines())
    assert not any(line.startswith("  AST changed") for line in proc.stdout.splitlines())
    proc = tgstore("check", "--db", db, "--against", "nope", "--tinygrad", copy, *command, cwd=work)
    assert proc.returncode == 2


# Capture takes the program tinygrad produced for the renderer it used instead of lowering the kernel again (capture
# costs less): the same bundle either way. The last kernel is lowered while the script has the C renderer write
# `__restrict__`: lowering it again after the command renders `restrict`, which is how the test sees which path ran.
SAME_EITHER_WAY = """\
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.renderer.cstyle import ClangRenderer


def main():
    a = Tensor.ones(16).contiguous().realize()
    (a * 2 + 1).realize()
    with Context(NOOPT=1):
        (Tensor.ones(8, 8).contiguous() @ Tensor.ones(8, 8).contiguous()).realize()
    (Tensor.ones(4, 32).contiguous().softmax(-1)).realize()
    suffix, ClangRenderer.buffer_suffix = ClangRenderer.buffer_suffix, " __restrict__"
    (a * 3).sum().realize()
    ClangRenderer.buffer_suffix = suffix


main()
"""


def bundle_cases(path: Path) -> dict[str, dict]:
    """Every record but the header and the end (timestamps), case records without their seconds."""
    out = {}
    for i, line in enumerate(path.read_text().splitlines()):
        record = json.loads(line)
        if record["kind"] in ("header", "end"):
            continue
        record.pop("seconds", None)
        out[f"{i}:{record['kind']}:{record.get('name', '')}"] = record
    return out


@needs_clang
def test_capture_stores_what_lowering_every_kernel_again_stores(tmp_path, tinygrad_release):
    (tmp_path / "script.py").write_text(SAME_EITHER_WAY)
    bundles = {}
    for mode, relower in (("taken", ""), ("lowered_again", "1")):
        bundles[mode] = tmp_path / f"{mode}.jsonl"
        proc = tgstore("extract", "--tinygrad", tinygrad_release(RELEASE), "--renderers", "C,LLVM", "--stages",
                       "none", "-o", bundles[mode], "--capture", "--", "python", "script.py", cwd=tmp_path,
                       env={**os.environ, "TGSTORE_CAPTURE_RELOWER": relower})
        assert proc.returncode == 0, proc.stderr
    taken, again = bundle_cases(bundles["taken"]), bundle_cases(bundles["lowered_again"])
    assert taken.keys() == again.keys()
    (case_key,) = [k for k in taken if ":case:" in k]
    items, items_again = taken[case_key]["schedule"], again[case_key]["schedule"]
    # the fill, the elementwise, the NOOPT matmul, softmax's kernels, the sum: every one with C and LLVM
    kernels = [i for i in items if i["root_op"] == "SINK"]
    assert len(kernels) >= 6 and all([p["renderer"] for p in i["programs"]] == ["C", "LLVM"] for i in kernels)
    restricted = [i["position"] for i in kernels if "__restrict__" in i["programs"][0]["source"]]
    assert len(restricted) == 1
    for item, item_again in zip(items, items_again, strict=True):
        if item["position"] in restricted:  # the program as tinygrad produced it, both ways; lowered again, it
            c, c_again = item["programs"][0], item_again["programs"][0]  # rendered otherwise, and says so
            assert c["error"] is None and c_again["error"].startswith("stored as tinygrad produced it")
            assert {**c, "error": None} == {**c_again, "error": None}
            assert item["programs"][1:] == item_again["programs"][1:]
            assert {k: v for k, v in item.items() if k != "programs"} == {
                k: v for k, v in item_again.items() if k != "programs"}
        else:
            assert item == item_again
    assert {k: v for k, v in taken.items() if k != case_key} == {k: v for k, v in again.items() if k != case_key}
    assert {k: v for k, v in taken[case_key].items() if k != "schedule"} == {
        k: v for k, v in again[case_key].items() if k != "schedule"}
