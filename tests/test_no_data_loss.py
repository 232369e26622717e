"""A run never takes away what another run stored (issue 19, item 1): a new run at a stored commit keeps the sources
of renderers it did not render, never replaces a better run, and unknown renderers, backends and suites are refused
before anything runs. On real extractions (tests/real_bundles.py) and the real CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli import tgstore
from git_history import build_release_history


def ingest(db: Path, *bundles: Path, force: bool = False) -> subprocess.CompletedProcess[str]:
    args = [a for b in bundles for a in ("--bundle", b)]
    return tgstore("ingest", "--db", db, *args, *(["--force"] if force else []))


def sources(db: Path) -> set[tuple]:
    """(case, position, renderer, source hash, error) of every current source."""
    with sqlite3.connect(db) as conn:
        return set(conn.execute("SELECT \"case\", position, renderer, source_hash, error FROM v_sources"))


def passes(db: Path) -> set[tuple]:
    with sqlite3.connect(db) as conn:
        return set(conn.execute("SELECT \"case\", scope, position, renderer, pass_position, pass_name, graph_hash "
                                "FROM v_passes"))


def current_runs(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, status, renderers FROM runs WHERE is_current ORDER BY id").fetchall()


def test_a_run_of_other_renderers_keeps_the_sources_it_did_not_render(tmp_path: Path,
                                                                       real_bundles: dict[str, Path]) -> None:
    db = tmp_path / "t.db"
    assert ingest(db, real_bundles["c_llvm"]).returncode == 0
    c_llvm, c_llvm_passes = sources(db), passes(db)
    assert {s[2] for s in c_llvm} == {"C", "LLVM"} and all(s[3] for s in c_llvm)
    proc = ingest(db, real_bundles["ptx"])
    assert proc.returncode == 0, proc.stderr
    assert "C,LLVM sources kept" in proc.stderr
    after = sources(db)
    assert c_llvm <= after  # every C and LLVM source still reachable, as it was
    assert {s[2] for s in after - c_llvm} == {"PTX"}
    assert c_llvm_passes <= passes(db)  # and the C and LLVM passes
    assert current_runs(db) == [(2, "ok", "PTX,C,LLVM")]
    # the other way round: C,LLVM over PTX keeps PTX
    other = tmp_path / "other.db"
    assert ingest(other, real_bundles["ptx"]).returncode == 0
    ptx = sources(other)
    assert ingest(other, real_bundles["c_llvm"]).returncode == 0
    assert ptx <= sources(other) and sources(other) == after
    # and with C,LLVM,PTX current, re-ingesting C,LLVM is "already ingested"; forced, PTX stays
    assert "already ingested" in ingest(other, real_bundles["c_llvm"]).stderr
    assert ingest(other, real_bundles["c_llvm"], force=True).returncode == 0
    assert sources(other) == after


def edited(src: Path, dst: Path, change) -> Path:
    records = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    for record in records:
        change(record)
    dst.write_text("".join(json.dumps(r) + "\n" for r in records))
    return dst


def test_a_worse_run_never_replaces_a_better_one(tmp_path: Path, real_bundles: dict[str, Path]) -> None:
    db = tmp_path / "t.db"
    assert ingest(db, real_bundles["c_llvm"]).returncode == 0
    before = sources(db)

    def break_a_case(record: dict) -> None:
        if record.get("kind") == "case" and record["name"] == "add":
            record.update(status="error", error="RuntimeError: boom", schedule=[])
        if record.get("kind") == "end":
            record["failed_cases"] = 1

    partial = edited(real_bundles["c_llvm"], tmp_path / "partial.jsonl", break_a_case)
    proc = ingest(db, partial, force=True)
    assert "stays current" in proc.stderr, proc.stderr
    assert sources(db) == before and current_runs(db) == [(1, "ok", "C,LLVM")]


def test_a_run_whose_kernels_differ_does_not_take_the_place_of_one_it_cannot_keep(
        tmp_path: Path, real_bundles: dict[str, Path]) -> None:
    """Another kernel at a position (not the same case any more): the other renderers' programs would have nowhere to
    go, so the new run is kept as an attempt and the old one stays current."""
    db = tmp_path / "t.db"
    assert ingest(db, real_bundles["c_llvm"]).returncode == 0
    before = sources(db)

    def change_kernel(record: dict) -> None:
        if record.get("kind") == "case" and record["name"] == "add":
            record["schedule"][0]["nodes"][0]["arg"] = "changed"

    changed = edited(real_bundles["ptx"], tmp_path / "changed.jsonl", change_kernel)
    proc = ingest(db, changed)
    assert "stays current" in proc.stderr and "no matching kernel" in proc.stderr, proc.stderr
    assert sources(db) == before and current_runs(db) == [(1, "ok", "C,LLVM")]


@pytest.mark.parametrize(("options", "says"), [
    (["--renderers", "NOPE"], "unknown renderer 'NOPE'; the renderers are: C, LLVM, PTX"),
    (["--renderers", "C,LLVM,PTXX"], "unknown renderer 'PTXX'"),
    (["--stages", "C,CC"], "--stages: unknown renderer 'CC'"),
    (["--backend", "[/x]NOPE"], "is not a device name"),
    (["--backend", "NOPE"], "this tinygrad has no such device; its devices are: "),
    (["--suite", "nope"], "no built-in suite 'nope'; the suites are: builtin"),
    (["--timeout", "nan"], "--timeout must be a positive number"),
    (["--timeout", "-1"], "--timeout must be a positive number"),
])
def test_unknown_names_are_refused_before_anything_runs(tmp_path: Path, real_bundles: dict[str, Path],
                                                         options: list[str], says: str) -> None:
    db = tmp_path / "t.db"
    assert ingest(db, real_bundles["c_llvm"]).returncode == 0
    snapshot = db.read_bytes()
    for command in (["ingest", "--db", db], ["extract", "-o", tmp_path / "out.jsonl"]):
        proc = tgstore(*command, *options)
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines
    assert db.read_bytes() == snapshot and not (tmp_path / "out.jsonl").exists()
    fresh = tmp_path / "fresh.db"
    assert tgstore("ingest", "--db", fresh, *options).returncode == 1 and not fresh.exists()


def test_a_sweep_refuses_a_backend_no_commit_has(tmp_path: Path, tinygrad_release) -> None:
    repo = tmp_path / "tinygrad"
    build_release_history(repo, [("0.12.0", "tinygrad 0.12.0"), ("0.14.0", "tinygrad 0.14.0")], tinygrad_release)
    proc = tgstore("ingest", "--db", tmp_path / "t.db", "--repo", repo, "--rev", "HEAD~1..HEAD", "--backend", "NOPE")
    assert proc.returncode == 1 and "no such device" in proc.stderr, proc.stderr
    assert not (tmp_path / "t.db").exists()
