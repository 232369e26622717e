"""Real extractions (no mocks) through tgstore.extract.runner: the venv's tinygrad and pip-installed releases."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from processes import processes_with
from releases_db import CORE_CASES
from slack import generous

from tgstore.extract import child
from tgstore.extract.runner import (
    BUILTIN_CASES,
    CHILD_PACKAGE,
    ExtractionResult,
    TinygradNotFound,
    locate_installed_tinygrad,
    resolve_tinygrad_root,
)
from tgstore.pipeline import ExtractionPlan, extract_bundle


def run_extraction(root: Path, out: Path, *, case_files: list[Path] | None = None, renderers: list[str] | None = None,
                   suite_name: str | None = None, timeout: float = 300.0, git: dict | None = None,
                   on_case=None, stages: str | None = None) -> ExtractionResult:
    plan = ExtractionPlan(renderers=renderers, suite_name=suite_name, timeout=timeout)
    if case_files:
        plan.case_files = case_files
    if stages is not None:
        plan.stages = stages
    return extract_bundle(root, out, plan, git=git, on_case=on_case)


def read_bundle(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_bundle(recs: list[dict[str, Any]], min_cases: int) -> dict[str, Any]:
    """Structural checks every complete bundle must pass; returns a summary."""
    assert recs[0]["kind"] == "header" and recs[0]["bundle_version"] == 3
    assert recs[-1]["kind"] == "end"
    assert sum(r["kind"] == "header" for r in recs) == 1 and sum(r["kind"] == "end" for r in recs) == 1
    header = recs[0]
    assert (Path(header["tinygrad"]["path"]) / "tinygrad" / "__init__.py").is_file()
    assert len(header["tinygrad"]["tree_hash"]) == 64
    cases = [r for r in recs if r["kind"] == "case"]
    assert len(cases) >= min_cases and recs[-1]["cases"] == len(cases)
    assert recs[-1]["failed_cases"] == sum(c["status"] == "error" for c in cases)
    seen: set[str] = set()
    for r in recs:
        if r["kind"] == "pattern":
            assert r["key"] not in seen
            seen.add(r["key"])
        elif r["kind"] == "case":
            # every pattern a case refers to was emitted before it
            assert all(m["pattern"] in seen and m["matches"] > 0 for m in r["matches"])
            for item in r["schedule"]:
                n = len(item["nodes"])
                assert item["nodes"][-1]["op"] == item["root_op"]
                assert all(0 <= s < i for i, node in enumerate(item["nodes"]) for s in node["src"]), "toposort order"
                assert n > 0
    return {"header": header, "cases": cases, "patterns": seen, "missing": [r for r in recs if r["kind"] == "missing"]}


def c_sources(case: dict[str, Any]) -> list[str]:
    return [p["source"] for it in case["schedule"] for p in it["programs"] if p["renderer"] == "C" and p["source"]]


def run_ok(root: Path, out: Path, **kwargs: Any) -> tuple[ExtractionResult, list[dict[str, Any]]]:
    res = run_extraction(root, out, **kwargs)
    assert res.status == "ok", res.stderr
    assert res.returncode == 0 and res.bundle_path == out.resolve()
    return res, read_bundle(out)


def test_paths_exist() -> None:
    assert BUILTIN_CASES.is_file() and (CHILD_PACKAGE / "__main__.py").is_file()


def test_stored_tracebacks_leave_out_first_use_frames_and_the_childs_lines() -> None:
    """A rule's first call goes through tinygrad's `lazy_compile` (0.14+), later ones do not: an error's stored
    traceback is the same either way, and names the child's frames without their lines."""
    from tgstore.extract.child.text import clean, error_text

    def failing_rule() -> None:
        raise KeyError("dtypes.double")

    def lazy_compile() -> None:
        failing_rule()

    texts = []
    for call in (lazy_compile, failing_rule):
        try:
            call()
        except KeyError:
            texts.append(error_text(limit=8))
    assert texts[0] == texts[1] and "in failing_rule" in texts[0] and "lazy_compile" not in texts[0]
    frame = 'File "patterns.py", line 93, in rewrite'
    assert clean(frame) == 'File "patterns.py", in rewrite'
    assert clean('File "tinygrad/renderer/wgsl.py", line 98, in buf_map') == \
        'File "tinygrad/renderer/wgsl.py", line 98, in buf_map'


def test_debug_text_names_the_child_without_its_line() -> None:
    """tinygrad's DEBUG text names the first frame outside tinygrad, the counting rewrite's call of a rule: stored
    without its line, so an edit of the child does not change every stored case's `debug`; a program's own call
    site (a --capture run) and tinygrad's paths keep theirs."""
    from tgstore.extract.child.text import clean

    line = "scheduled     1 kernels in x.xx ms | CACHE MISS 586894a8 |      90 uops in cache | patterns.py:{}"
    assert clean(line.format(93)) == clean(line.format(104)) == line.format("")[:-1]
    for kept in ("| three_kernels.py:9 in main", "tinygrad/engine/schedule.py:12", "my_patterns.py:3"):
        assert clean(kept) == kept


# What a renderer of the installed tinygrad (0.14) cannot render: WebGPU has no 64-bit types (f64, u64 in
# TRANSCENDENTAL=2's code), and WGSL fails on NOLOCALS kernels (KeyError 'i').
RENDERER_LIMITS = {("float64_int64", "WGSL"), ("float64_mean", "WGSL"), ("exp_sin_transcendental", "WGSL"),
                   ("matmul_nolocals", "WGSL")}


def test_builtin_suite_installed_tinygrad(readme_db: Path) -> None:
    """The default renderer set over the built-in suite with the venv's tinygrad: the run the README's first line
    stored (tests/readme_db.py extracts it when that line has not run or is older than the code). Bundle structure is
    checked on the smaller extractions here; this checks every case, kernel and renderer of the whole suite."""
    root = locate_installed_tinygrad()
    assert resolve_tinygrad_root(None) == root
    with sqlite3.connect(f"file:{readme_db}?mode=ro", uri=True) as conn:
        ((run_id, renderers, features),) = conn.execute(
            "SELECT r.id, r.renderers, b.text FROM runs r JOIN suites s ON s.id = r.suite_id "
            "JOIN blobs b ON b.id = r.features_blob_id WHERE r.is_current AND r.status = 'ok' AND s.name = 'builtin' "
            "AND r.tinygrad_path = ?", (str(root),)).fetchall()
        features = json.loads(features)
        assert features["pyrender"] is True and features["match_stats"] is True
        renderers = renderers.split(",")
        assert {"C", "LLVM", "PTX"} <= set(renderers)
        cases = conn.execute(
            "SELECT c.name, m.status, m.case_result_id, length(d.text), "
            "(SELECT count(*) FROM pattern_matches pm WHERE pm.match_set_id = m.match_set_id AND pm.matches > 0) "
            "FROM runs r JOIN case_set_members m ON m.case_set_id = r.case_set_id JOIN cases c ON c.id = m.case_id "
            "LEFT JOIN blobs d ON d.id = m.debug_blob_id WHERE r.id = ? ORDER BY m.position", (run_id,)).fetchall()
        assert len(cases) == len(BUILTIN_CASES.read_text().split("\ndef case_")) - 1
        for name, status, result_id, debug_chars, matched_rules in cases:
            assert status == "ok", name
            assert debug_chars, f"{name}: DEBUG output captured"
            assert matched_rules, f"{name} has no match counts"
            sinks = conn.execute("SELECT si.id, k.pyrender_blob_id FROM schedule_items si JOIN kernels k "
                                 "ON k.id = si.kernel_id WHERE si.case_result_id = ? AND si.root_op = 'SINK'",
                                 (result_id,)).fetchall()
            assert sinks, name
            for item_id, pyrender in sinks:
                assert pyrender is not None, name
                programs = {r: (err, linear, prog) for r, err, linear, prog in conn.execute(
                    "SELECT renderer, error, linear_id, name FROM programs WHERE schedule_item_id = ?", (item_id,))}
                assert set(programs) == set(renderers), name
                for renderer, (err, linear, prog) in programs.items():
                    if (name, renderer) in RENDERER_LIMITS:
                        assert err, (name, renderer)  # stored as the renderer's failure
                        continue
                    assert err is None, (name, renderer, err)
                    assert linear is not None and prog, (name, renderer)
            assert conn.execute("SELECT count(*) FROM schedule_items si JOIN programs p ON p.schedule_item_id = si.id "
                                "JOIN blobs b ON b.id = p.source_blob_id WHERE si.case_result_id = ? "
                                "AND p.renderer = 'C' AND b.size > 0", (result_id,)).fetchone()[0], f"{name}: no C"
    assert [c[0] for c in cases[:3]] == ["add", "mul_add_chain", "unary"] and "matmul" in [c[0] for c in cases]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.10.0", "0.12.0"])
def test_builtin_suite_releases(tinygrad_release, tmp_path: Path, version: str) -> None:
    root = tinygrad_release(version)
    assert resolve_tinygrad_root(root / "tinygrad") == root.resolve()
    _, recs = run_ok(root, tmp_path / "b.jsonl", renderers=["C", "LLVM"], timeout=generous())
    s = check_bundle(recs, 12)
    assert s["header"]["tinygrad"]["version"] == version
    assert s["header"]["tinygrad"]["git"] is None  # inside tgstore's repo, but not a tinygrad checkout
    unsupported = {c["name"]: c["error"] for c in s["cases"] if c["status"] == "unsupported"}
    # what an era cannot express, each raised in the case's own code (or a ContextVar it lacks): recorded as
    # unsupported, not as an error
    setitem = "NotImplementedError: Tensor.__setitem__ realizes (runs kernels) in this tinygrad"
    assert unsupported == ({"topk": "AttributeError: type object 'Tensor' has no attribute 'topk'",
                            "sort": "AttributeError: type object 'Tensor' has no attribute 'sort'",
                            "symbolic_shrink": unsupported.get("symbolic_shrink"),
                            "symbolic_reduce": unsupported.get("symbolic_reduce"),
                            "int_divmod": unsupported.get("int_divmod"),
                            "matmul_nolocals": "this tinygrad has no ContextVar NOLOCALS",
                            "setitem": setitem,
                            "scatter": "AttributeError: 'Tensor' object has no attribute 'scatter'",
                            "fp8": "AttributeError: type object 'dtypes' has no attribute 'fp8e4m3'",
                            "custom_addmul": "NotImplementedError: this tinygrad has no Tensor.custom_kernel"}
                           if version == "0.10.0" else {"setitem": setitem})
    for case in s["cases"]:
        if case["status"] == "unsupported":
            assert case["error"] and "\n" not in case["error"]
            continue
        assert case["status"] == "ok", case["error"]
        assert c_sources(case), f"{case['name']} has no C source"
        assert case["matches"]
    run_missing = {m["feature"] for m in s["missing"] if m["case"] is None}
    if version == "0.10.0":
        assert "pyrender" in run_missing
        assert all(it["pyrender"] is None for c in s["cases"] for it in c["schedule"])
    else:
        assert "pyrender" not in run_missing


CASES_WITH_ERROR = '''
from tinygrad import Tensor

def case_first():
    """works"""
    return Tensor.empty(8) + 1

def case_boom():
    """raises"""
    raise ValueError("boom on purpose")

def case_not_a_tensor():
    return 42

def case_last():
    return [Tensor.empty(4) * 2, Tensor.empty(4).sum()]
'''


@pytest.mark.slow  # extracts with a real tinygrad
def test_error_case_continues(tmp_path: Path) -> None:
    cases = tmp_path / "mine.py"
    cases.write_text(CASES_WITH_ERROR)
    git = {"sha": "ab" * 20, "date": "2026-01-01T00:00:00+00:00", "subject": "given by the caller"}
    root = locate_installed_tinygrad()
    _, recs = run_ok(
        root, tmp_path / "b.jsonl", case_files=[cases], renderers=["C", "NOSUCH"], suite_name="mine", git=git
    )
    s = check_bundle(recs, 4)
    header = s["header"]
    assert header["suite"] == child.suite_identity([cases], "mine")
    assert header["tinygrad"] == child.describe_tinygrad(root, git)
    assert header["renderers"] == ["C", "NOSUCH"]
    assert any(m["feature"] == "renderer:NOSUCH" and m["case"] is None for m in s["missing"])
    progs = [p for c in s["cases"] for it in c["schedule"] for p in it["programs"]]
    assert progs and all(p["error"] and p["source"] is None for p in progs if p["renderer"] == "NOSUCH")
    by_name = {c["name"]: c for c in s["cases"]}
    assert [c["name"] for c in s["cases"]] == ["first", "boom", "not_a_tensor", "last"]
    assert by_name["first"]["status"] == "ok" and by_name["first"]["description"] == "works"
    assert by_name["boom"]["status"] == "error" and "boom on purpose" in by_name["boom"]["error"]
    assert by_name["not_a_tensor"]["status"] == "error"
    assert by_name["last"]["status"] == "ok" and c_sources(by_name["last"])
    assert recs[-1]["failed_cases"] == 2


@pytest.mark.slow  # extracts with a real tinygrad
def test_deterministic(tmp_path: Path) -> None:
    cases = tmp_path / "small.py"
    cases.write_text(
        "from tinygrad import Tensor\n\ndef case_mm():\n    return (Tensor.empty(8, 8) @ Tensor.empty(8, 8)).relu()\n"
    )
    root = locate_installed_tinygrad()

    def without_timings(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_timings(v) for k, v in value.items()
                    if k not in ("seconds", "debug", "started_at", "finished_at")}
        if isinstance(value, list):
            return [without_timings(v) for v in value]
        return value

    def stable(path: Path) -> list[dict[str, Any]]:
        return without_timings(read_bundle(path))

    run_ok(root, tmp_path / "a.jsonl", case_files=[cases], renderers=["C", "PTX"])
    run_ok(root, tmp_path / "b.jsonl", case_files=[cases], renderers=["C", "PTX"])
    assert stable(tmp_path / "a.jsonl") == stable(tmp_path / "b.jsonl")


@pytest.mark.slow  # extracts with a real tinygrad
def test_hanging_child_times_out(tmp_path: Path) -> None:
    cases = tmp_path / "hang.py"
    cases.write_text("import time\n\ndef case_hang():\n    time.sleep(120)\n")
    res = run_extraction(
        locate_installed_tinygrad(), tmp_path / "b.jsonl", case_files=[cases], renderers=["C"], timeout=8
    )
    assert res.status == "timeout" and res.returncode is None
    assert res.seconds < 60
    recs = read_bundle(tmp_path / "b.jsonl")
    assert recs[0]["kind"] == "header" and recs[-1]["kind"] != "end"


@pytest.mark.slow  # extracts with a real tinygrad
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_child_dies_with_a_killed_parent(tmp_path: Path) -> None:
    """The child runs in its own session (a terminal's Ctrl-C must not reach it mid-write), so only
    PR_SET_PDEATHSIG stops it outliving a SIGKILLed tgstore."""
    cases = tmp_path / "hang.py"
    cases.write_text("import time\n\ndef case_hang():\n    time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", (
        "import sys; from pathlib import Path; from tgstore.extract.runner import locate_installed_tinygrad; "
        "from tgstore.pipeline import ExtractionPlan, extract_bundle; extract_bundle(locate_installed_tinygrad(), "
        "Path(sys.argv[1]), ExtractionPlan(case_files=[Path(sys.argv[2])], renderers=['C'], "
        f"timeout={generous()}))"),
        str(tmp_path / "b.jsonl"), str(cases)])

    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "b.jsonl").exists() and time.monotonic() < deadline:  # the child got going
            time.sleep(0.1)
        assert processes_with(str(cases)), "the extraction child never started"
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 5  # far less than the case's 120 s sleep or the 300 s timeout
    while (left := processes_with(str(cases))) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_broken_tinygrad_fails(tmp_path: Path) -> None:
    (tmp_path / "tg" / "tinygrad").mkdir(parents=True)
    (tmp_path / "tg" / "tinygrad" / "__init__.py").write_text("raise ImportError('broken on purpose')\n")
    res = run_extraction(tmp_path / "tg", tmp_path / "b.jsonl", renderers=["C"], timeout=generous())
    assert res.status == "failed" and res.returncode not in (0, None)
    assert "broken on purpose" in res.stderr
    recs = read_bundle(tmp_path / "b.jsonl")
    assert recs[0]["kind"] == "header" and recs[-1]["kind"] == "missing"


def test_bad_tinygrad_path(tmp_path: Path) -> None:
    with pytest.raises(TinygradNotFound, match="does not exist"):
        resolve_tinygrad_root(tmp_path / "nope")
    with pytest.raises(TinygradNotFound, match="tinygrad"):
        resolve_tinygrad_root(tmp_path)
    root = locate_installed_tinygrad()
    assert resolve_tinygrad_root(root) == root
    assert resolve_tinygrad_root(root / "tinygrad") == root


@pytest.mark.slow  # extracts with a real tinygrad
def test_progress_reports_each_case_as_it_lands(tmp_path: Path) -> None:
    cases = tmp_path / "slow.py"
    cases.write_text("import time\nfrom tinygrad import Tensor\n\n"
                     + "".join(f"def case_c{i}():\n    time.sleep(0.4)\n    return Tensor.empty(4) + {i}\n\n"
                               for i in range(4)))
    seen: list[str] = []
    res = run_extraction(locate_installed_tinygrad(), tmp_path / "b.jsonl", case_files=[cases], renderers=["C"],
                         on_case=seen.append)
    assert res.status == "ok"
    # reported while the child ran (the runner reads nothing after the child exits), in suite order, each once
    assert seen == [f"c{i}" for i in range(len(seen))] and len(seen) >= 3


@pytest.mark.slow  # extracts with a real tinygrad
def test_a_finished_extraction_does_not_wait_for_what_tinygrad_left_running(tmp_path: Path) -> None:
    """Some tinygrad commits hang at interpreter exit (an atexit hook, a thread); once the bundle's end record is
    written the child leaves at once, so the run is ok rather than a timeout."""
    cases = tmp_path / "lingering.py"
    cases.write_text("import threading, time\nfrom tinygrad import Tensor\n\n"
                     "def case_add():\n"
                     "    threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: exit would wait\n"
                     "    return Tensor.empty(4) + 1\n")
    res = run_extraction(locate_installed_tinygrad(), tmp_path / "b.jsonl", case_files=[cases], renderers=["C"],
                         timeout=generous())
    assert res.status == "ok", res.stderr
    assert res.seconds < 600  # the thread's sleep: the child did not wait for it


def test_the_child_runs_alone_on_a_machine_without_tgstore(tinygrad_release, tmp_path: Path) -> None:
    """The bundle is the seam to another machine (a GPU box): the child package and a case file, copied there, need
    only Python's standard library and tinygrad. `python -S` leaves out site-packages, so tgstore and its
    dependencies cannot be imported."""
    import shutil

    from tgstore.bundle import read_bundle as load_bundle

    shutil.copytree(CHILD_PACKAGE, tmp_path / "child", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(CORE_CASES, tmp_path / "core.py")  # a real case file; the whole suite is test_builtin_suite_*'s
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(tinygrad_release("0.14.0")), "PYTHONHASHSEED": "0"}
    proc = subprocess.run([sys.executable, "-S", "-m", "child", "--out", "b.jsonl", "--cases", "core.py",
                           "--renderers", "C"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=generous())
    assert proc.returncode == 0, proc.stderr
    bundle = load_bundle(tmp_path / "b.jsonl")
    assert bundle.complete and len(bundle.cases) >= 12
    assert all(case["status"] == "ok" for case in bundle.cases)


IDENTITY_PROBE = """
import importlib
for name in ("tinygrad.uop.ops", "tinygrad.ops"):
    try:
        ops = importlib.import_module(name)
        break
    except ImportError:
        continue
print(*(c.__hash__ is object.__hash__ and c.__eq__ is object.__eq__ for c in (ops.UOp, ops.UPat)))
"""


@pytest.mark.parametrize("release", ["0.10.0", "0.11.0", "0.12.0", "0.13.0", "0.14.0"])
def test_uops_and_upats_compare_by_identity(tinygrad_release, release: str) -> None:
    """The child keys its memos by UOp and UPat themselves (child/encode.py: `id()` is an audited event, costly
    under the input watch's hook): right where both hash and compare as `object` does, as in every release."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(tinygrad_release(release))}
    proc = subprocess.run([sys.executable, "-c", IDENTITY_PROBE], env=env, capture_output=True, text=True,
                          timeout=generous())
    assert proc.stdout.split() == ["True", "True"], proc.stderr


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two usable cores to compare with one")
def test_stored_code_does_not_depend_on_the_machines_cores(tinygrad_release, tmp_path: Path) -> None:
    """0.12 and 0.13 split CPU kernels for CPU_COUNT threads, which defaults to the cores the process may use: the
    child fixes it (as NUM_CPU_THREADS later), so a sweep over machines of any size stores the same code."""
    from tgstore.bundle import read_bundle as load_bundle

    cases = tmp_path / "cases.py"
    # 1M elements: enough work that the optimizer splits the kernel over threads (about 128K ops a thread)
    cases.write_text("from tinygrad import Tensor\n\ndef case_big_add():\n    return Tensor.empty(1024, 1024) + 1\n")
    root = tinygrad_release("0.13.0")
    plan = ExtractionPlan(case_files=[cases], renderers=["C"], stages="none", rewrites=0)
    everywhere = extract_bundle(root, tmp_path / "all.jsonl", plan)
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # the child inherits one core
    try:
        one_core = extract_bundle(root, tmp_path / "one.jsonl", plan)
    finally:
        os.sched_setaffinity(0, cores)
    assert everywhere.status == one_core.status == "ok"

    def c_code(path: Path) -> list[tuple[str, str]]:
        (case,) = load_bundle(path).cases
        return [(p["name"], p["source"]) for item in case["schedule"] for p in item["programs"]]

    assert c_code(tmp_path / "all.jsonl") == c_code(tmp_path / "one.jsonl")
    assert load_bundle(tmp_path / "one.jsonl").header["env"]["CPU_COUNT"] == "8"
