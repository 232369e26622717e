"""`tgstore diff`: unified diffs of kernel ASTs and sources between two commits' runs, on a real ingested db."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sample_bundles import SHA_A, SHA_B, SHA_C, SampleDb, build_sample_db, bundle_b, write_bundle
from slack import generous
from sqlalchemy import Connection, text
from typer.testing import CliRunner

from tgstore.bundle import read_bundle
from tgstore.cli import app
from tgstore.compare.diff import DiffError, diff_commits, render_text
from tgstore.db import open_engine
from tgstore.store.commits import CommitNotFound
from tgstore.store.ingest import ingest_bundle


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleDb:
    return build_sample_db(tmp_path_factory.mktemp("diff"))


@pytest.fixture
def conn(sample: SampleDb) -> Iterator[Connection]:
    engine = open_engine(sample.path, writer=False)
    with engine.connect() as connection:
        yield connection
    engine.dispose()


def test_diff_a_to_b(conn: Connection) -> None:
    diff = diff_commits(conn, SHA_A[:8], "0.14.0")
    assert (diff.a.sha, diff.b.sha, diff.run_a.suite, diff.run_a.backend) == (SHA_A, SHA_B, "builtin", "CPU")
    assert diff.added_cases == ["relu"] and diff.removed_cases == []
    assert diff.compared_cases == ["add", "matmul"] and diff.changed_cases == ["matmul"]
    assert diff.added_kernels == [] and diff.removed_kernels == [] and diff.status_changes == []
    assert [(d.case, d.position, d.kind, d.renderer) for d in diff.diffs] == [
        ("matmul", 0, "ast", None), ("matmul", 0, "source", "C"), ("matmul", 0, "source", "LLVM"),
        ("matmul", 1, "source", "C")]  # kernel 1: same AST, only its C source changed
    ast = diff.diffs[0]
    assert "r_16_16 -> r_16_16_4" in ast.title and "(6 -> 7 nodes)" in ast.title
    assert ast.lines[:2] == [f"--- {SHA_A[:12]} matmul[0] pyrender", f"+++ {SHA_B[:12]} matmul[0] pyrender"]
    assert "-c2 = UOp(Ops.MUL)" in ast.lines and "+c3 = UOp(Ops.MUL)" in ast.lines and "+ast = c6" in ast.lines
    c1 = diff.diffs[3].lines
    assert "-  data0[0] = exp2(data0[0]);" in c1 and "+  data0[0] = __builtin_exp2f(data0[0]);" in c1
    assert " void E_16(float* restrict data0) {" in c1  # context line
    report = render_text(diff)
    assert "added cases: relu" in report
    summary = report.splitlines()[3]  # the summary comes first, after the two commits and the suite
    assert summary == ("2 cases compared: 1 changed, 1 unchanged; 1 added, 0 removed; kernels: 2 changed, 0 added, "
                       "0 removed; sources changed by renderer: C (2), LLVM (1)")
    assert sum(d.kind == "ast" for d in diff.diffs) == 1 and sum(d.kind == "source" for d in diff.diffs) == 3


def test_diff_filters(conn: Connection) -> None:
    diff = diff_commits(conn, "0.13.0", SHA_B, case="matmul", renderer="C", what="source")
    assert diff.added_cases == [] and diff.compared_cases == ["matmul"]
    assert [(d.position, d.kind, d.renderer) for d in diff.diffs] == [(0, "source", "C"), (1, "source", "C")]
    assert "+  float4 acc0 = (float4)(0.0f);" in diff.diffs[0].lines
    diff = diff_commits(conn, "0.13.0", SHA_B, what="ast")
    assert [(d.case, d.position, d.kind) for d in diff.diffs] == [("matmul", 0, "ast")]
    diff = diff_commits(conn, "0.13.0", SHA_B, case="relu")  # only at b
    assert diff.added_cases == ["relu"] and diff.diffs == []


def test_diff_failed_case_and_identical(conn: Connection) -> None:
    diff = diff_commits(conn, SHA_B, SHA_C)
    assert diff.status_changes == [("add", "ok", "error")]
    assert [(k.case, k.position, k.kernel_name, k.node_count) for k in diff.removed_kernels] == [("add", 0, "E_4", 5)]
    assert diff.diffs == [] and diff.changed_cases == ["add"]
    assert "removed kernel add[0] E_4 (5 nodes)" in render_text(diff)
    same = diff_commits(conn, SHA_B, SHA_B)
    assert not same.has_changes and same.diffs == []
    backwards = diff_commits(conn, SHA_C, SHA_A)
    assert backwards.removed_cases == ["relu"] and backwards.added_kernels[0].kernel_name == "E_4"


def test_diff_errors(conn: Connection) -> None:
    with pytest.raises(CommitNotFound, match="no stored commit matches 'cafe1234'"):
        diff_commits(conn, "cafe1234", SHA_B)
    with pytest.raises(DiffError, match="neither run has a case 'nope'; cases: add, matmul, relu"):
        diff_commits(conn, SHA_A, SHA_B, case="nope")
    with pytest.raises(DiffError, match="neither run has renderer 'PTX'; renderers: C, LLVM"):
        diff_commits(conn, SHA_A, SHA_B, renderer="PTX")
    with pytest.raises(DiffError, match="--what must be one of source, ast, all"):
        diff_commits(conn, SHA_A, SHA_B, what="everything")
    with pytest.raises(DiffError, match="has no run with backend 'CUDA'"):
        diff_commits(conn, SHA_A, SHA_B, backend="CUDA")


def test_commit_without_run_and_several_suites(tmp_path: Path) -> None:
    sample = build_sample_db(tmp_path)
    engine = open_engine(sample.path)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tinygrad_commits (sha, tree_hash, version) VALUES (:sha, 'x', '0.15.0')"),
                     {"sha": "d4" * 20})
    # a second suite at B and at A, and a third backend only at B
    other = {"name": "extra", "hash": "07" * 32, "files": ["/abs/extra.py"]}
    records = bundle_b()
    records[0] = {**records[0], "suite": other}
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "b-extra.jsonl", records)))
    records[0] = {**records[0], "tinygrad": {**records[0]["tinygrad"], "git": {
        **records[0]["tinygrad"]["git"], "sha": SHA_A, "date": "2026-01-10T12:00:00+00:00"}}}
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "a-extra.jsonl", records)))
    records = bundle_b()  # a commit with a METAL run only
    records[0] = {**records[0], "backend": "METAL", "tinygrad": {**records[0]["tinygrad"], "version": "0.16.0",
                                                                 "git": {**records[0]["tinygrad"]["git"],
                                                                         "sha": "e5" * 20}}}
    ingest_bundle(engine, read_bundle(write_bundle(tmp_path / "e-metal.jsonl", records)))
    with engine.connect() as conn:
        with pytest.raises(DiffError, match=r"commit d4d4d4d4d4d4 0\.15\.0 has no run; ingest it first"):
            diff_commits(conn, SHA_A, "0.15.0")
        diff = diff_commits(conn, SHA_A, SHA_B)  # the most recent common pair: suite extra
        assert diff.run_a.suite == "extra" and diff.run_b.suite == "extra"
        assert diff.notes and "also possible: builtin/CPU" in diff.notes[0] and "--suite" in diff.notes[0]
        assert not diff.has_changes  # the extra suite holds B's cases at both commits
        diff = diff_commits(conn, SHA_A, SHA_B, suite="builtin")
        assert diff.run_a.suite == "builtin" and diff.added_cases == ["relu"] and diff.notes == []
        with pytest.raises(DiffError, match=r"no runs of the two commits share a suite and backend: a1a1a1a1a1a1 "
                                            r"has run 1 \(builtin/CPU, ok\), run 5 \(extra/CPU, ok\); e5e5e5e5e5e5 has "
                                            r"run 6"):
            diff_commits(conn, SHA_A, "0.16.0")
        with pytest.raises(DiffError, match=r"has no run with backend 'metal'; its runs: run 1 \(builtin/CPU"):
            diff_commits(conn, SHA_A, "0.16.0", backend="metal")
    engine.dispose()


def test_cli_diff(sample: SampleDb) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["diff", SHA_A[:6], "0.14.0", "--db", str(sample.path)])
    assert result.exit_code == 0, result.output  # differences are not an error
    assert "added cases: relu" in result.stdout
    assert f"--- {SHA_A[:12]} matmul[0] C" in result.stdout and "+  float4 acc0 = (float4)(0.0f);" in result.stdout
    result = runner.invoke(app, ["diff", SHA_A[:6], "0.14.0", "--what", "ast", "--case", "matmul", "--spelling", "raw",
                                 "--db", str(sample.path)])
    assert result.exit_code == 0 and "pyrender" in result.stdout and "matmul[0] C" not in result.stdout
    # spelling-blind by default: the ASTs compared, and their diff printed, in one spelling across eras
    result = runner.invoke(app, ["diff", SHA_A[:6], "0.14.0", "--what", "ast", "--case", "matmul",
                                 "--db", str(sample.path)])
    assert result.exit_code == 0 and "pyrender" not in result.stdout and "spelling ignored" in result.stdout
    assert "ast (one spelling)" in result.stdout and "matmul[0] C" not in result.stdout
    result = runner.invoke(app, ["diff", SHA_B, SHA_B, "--db", str(sample.path)])
    assert result.exit_code == 0 and "0 changed, 3 unchanged" in result.stdout
    result = runner.invoke(app, ["diff", "0.9.9", SHA_B, "--db", str(sample.path)])
    assert result.exit_code == 1 and "no stored commit matches '0.9.9'" in result.output
    result = runner.invoke(app, ["diff", SHA_A, SHA_B, "--renderer", "PTX", "--db", str(sample.path)])
    assert result.exit_code == 1 and "renderers: C, LLVM" in result.output


def test_diff_of_two_releases_summarizes_first_and_skips_unavailable_renderers(releases_db: Path) -> None:
    """0.12.0 has no X86 renderer: its programs are errors, so X86 is skipped with one line, not diffed."""
    import json
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tgstore", "diff", "0.12.0", "0.14.0", "--db", str(releases_db),
                               *args], capture_output=True, text=True, timeout=generous())

    proc = run()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[3].startswith("15 cases compared: ") and "sources changed by renderer: " in lines[3]
    assert lines[4].startswith("skipped renderer X86: unavailable at a (")
    assert sum("X86" in line for line in lines) == 1
    assert not any(line.startswith("== ") and " X86 source changed" in line for line in lines)
    data = json.loads(run("--json").stdout)
    assert data["changed"] is True and list(data["skipped_renderers"]) == ["X86"]
    assert {"C", "LLVM"} <= set(data["summary"]["renderers_changed"])
    assert all(d["renderer"] != "X86" for d in data["diffs"])
    assert run("--exit-code", "--json").returncode == 1
    same = subprocess.run([sys.executable, "-m", "tgstore", "diff", "0.14.0", "0.14.0", "--db", str(releases_db),
                           "--exit-code"], capture_output=True, text=True, timeout=generous())
    assert same.returncode == 0 and "0 changed" in same.stdout


def test_ignore_names_leaves_out_name_only_changes(tmp_path: Path) -> None:
    """Two runs that differ only in a kernel's name (r_4_16n9 then r_4_16n1, as when the process-global counter
    leaked): a change by default, none with --ignore-names; a real change stays one."""
    import copy
    import json

    from sample_bundles import bundle_a, header

    from tgstore.db import upgrade

    def renamed(records: list, sha: str, name: str, extra: str = "") -> list:
        records = copy.deepcopy(records)
        records[0] = {**header(sha, "0.12.0", "2026-01-10T12:00:00+00:00", sha[:4]), "renderers": ["C", "LLVM"]}
        for record in records:
            for item in record.get("schedule", []) if record["kind"] == "case" and record["name"] == "matmul" else []:
                if item["position"] != 1:
                    continue
                item["nodes"][0]["arg"] = json.dumps(name)  # the AST names the kernel too (KernelInfo)
                for program in item["programs"]:
                    program["source"] = program["source"].replace("E_16", name) + extra
                    program["name"] = name
        return records

    db = tmp_path / "names.db"
    engine = open_engine(db)
    upgrade(engine)
    for sha, name, extra in (("d4" * 20, "E_16n9", ""), ("e5" * 20, "E_16n1", ""), ("f6" * 20, "E_16n1", "\n")):
        ingest_bundle(engine, read_bundle(write_bundle(tmp_path / f"{sha[:2]}.jsonl", renamed(bundle_a(), sha, name,
                                                                                               extra))))
    with engine.connect() as conn:
        plain = diff_commits(conn, "d4d4", "e5e5")
        masked = diff_commits(conn, "d4d4", "e5e5", ignore_names=True)
        real = diff_commits(conn, "d4d4", "f6f6", ignore_names=True)
    assert plain.has_changes and {(d.case, d.position) for d in plain.diffs} == {("matmul", 1)}
    assert not masked.has_changes and masked.diffs == []
    assert real.has_changes and {d.kind for d in real.diffs} == {"source"}
    runner = CliRunner()
    assert runner.invoke(app, ["diff", "d4d4", "e5e5", "--db", str(db), "--exit-code"]).exit_code == 1
    assert runner.invoke(app, ["diff", "d4d4", "e5e5", "--db", str(db), "--exit-code", "--ignore-names"]
                         ).exit_code == 0
