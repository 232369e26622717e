"""Session fixture ``two_releases_db``: the core cases extracted from tinygrad 0.13.0 and 0.14.0 as `tgstore ingest`
stores them by default (renderers, the C and LLVM passes, rewrite steps), every kernel timed on this machine
(`--time`), a case whose schedule differs between them (tests/fixtures/cases/eras.py), and a Svod test log of the
worked example stored for sum_rows: two adjacent releases whose ASTs and pass graphs differ in spelling and for real,
for the pages that compare (tests/test_web_compare.py), the crawl (tests/test_web_crawl.py) and `tgstore mcp`
(tests/test_mcp.py). Tests only read it (copy it to change it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from built_once import built_once
from cli import tgstore
from releases_db import CORE_CASES

from tgstore.cli.common import DEFAULT_REWRITES
from tgstore.db import open_engine, upgrade
from tgstore.pipeline import ExtractionPlan, extract_and_ingest

TWO_RELEASES = ["0.13.0", "0.14.0"]
ERA_CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "eras.py"  # a kernel only 0.14.0 has
SVOD_CASE = "sum_rows"


@pytest.fixture(scope="session")
def two_releases_db(tmp_path_factory, tinygrad_release) -> Path:
    def build(where: Path) -> Path:
        from svod_fixtures import worked_example_log

        db = where / "two.db"
        engine = open_engine(db)
        upgrade(engine)
        for version in TWO_RELEASES:
            report = extract_and_ingest(engine, tinygrad_release(version), ExtractionPlan(
                case_files=[CORE_CASES, ERA_CASES], rewrites=DEFAULT_REWRITES, time=True, time_runs=3))
            assert report.status == "ok", (version, report)
        engine.dispose()
        log = where / "svod.log"
        log.write_text(worked_example_log())
        proc = tgstore("ingest-svod", log, "--case", SVOD_CASE, "--db", db)
        assert proc.returncode == 0, proc.stderr
        return db

    return Path(built_once(tmp_path_factory, "two-releases", build))  # shared by the xdist workers (read only)
