"""Parity reads each tinygrad era's spelling ([[tinygrad_eras]] in tgstore/spelling/maps.toml, the eras of
tgstore/spelling/eras.py): against real extractions of tinygrad 0.13.0 and 0.14.0 (tests/two_releases_db.py, with
Svod's worked example stored for sum_rows), no parity cell reports a spelling the maps do not know, where 0.13.0's
PARAM (its slot alone), REDUCE (`(Ops.ADD, ())`) and pointer-typed INDEX/STACK were "unknown" before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tgstore.db.engine import open_engine
from tgstore.spelling.svod import normalize_tinygrad
from tgstore.svod.parity import parity_report

pytestmark = pytest.mark.slow
CASE = "sum_rows"


def versions(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT c.version, c.sha FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id "
                                 "WHERE r.is_current"))


def test_no_parity_cell_of_either_release_has_an_unknown_spelling(two_releases_db: Path) -> None:
    shas = versions(two_releases_db)
    assert set(shas) >= {"0.13.0", "0.14.0"}, shas
    engine = open_engine(two_releases_db, writer=False)
    for version in ("0.13.0", "0.14.0"):
        with engine.connect() as conn:
            report = parity_report(conn, CASE, commit=shas[version])
        compared = [s for k in report.kernels for s in k.stages if s.verdict in ("equal", "differs")]
        assert compared, version
        unknown = {u for k in report.kernels for s in k.stages for u in s.unknown}
        assert not unknown, (version, unknown)


def test_without_the_era_rows_0_13_spellings_were_unknown(two_releases_db: Path) -> None:
    """What the rows read: 0.13.0's graphs as stored hold the spellings that were unknown; 0.14.0's hold none."""
    shas = versions(two_releases_db)
    with sqlite3.connect(two_releases_db) as conn:
        graphs = {version: [json.loads(n) for (n,) in conn.execute(
            "SELECT g.nodes FROM v_passes p JOIN graphs g ON g.id = p.graph_id WHERE p.sha = ? AND p.\"case\" = ? "
            "AND p.scope = 'lower'", (shas[version], CASE))] for version in ("0.13.0", "0.14.0")}
    raw = {v: {u for nodes in gs for u in normalize_tinygrad(nodes, eras=False)[1]} for v, gs in graphs.items()}
    read = {v: {u for nodes in gs for u in normalize_tinygrad(nodes)[1]} for v, gs in graphs.items()}
    assert {"unknown tinygrad PARAM arg 0", "unknown tinygrad REDUCE arg (Ops.ADD, ())"} <= raw["0.13.0"], raw
    assert any("ptr(" in u and ".vec(" in u for u in raw["0.13.0"]), raw["0.13.0"]
    assert not read["0.13.0"] and not read["0.14.0"] and not raw["0.14.0"], (read, raw["0.14.0"])
