"""Session fixture ``releases_db``: one database holding the core cases (the built-in suite's first fifteen)
extracted from three tinygrad releases (default renderers and stages), shared by the tests that need real,
multi-era data."""

from __future__ import annotations

from pathlib import Path

import pytest
from built_once import built_once

from tgstore.db import open_engine, upgrade
from tgstore.pipeline import ExtractionPlan, extract_and_ingest

# Oldest, a middle one, newest: each a different era of tinygrad's internal API.
RELEASES = ["0.10.0", "0.12.0", "0.14.0"]
CORE_CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "core.py"


@pytest.fixture(scope="session")
def releases_db(tmp_path_factory, tinygrad_release) -> Path:
    """One database holding the core cases extracted from three tinygrad releases (built by one xdist worker,
    read by all)."""
    def build(where: Path) -> Path:
        db = where / "releases.db"
        engine = open_engine(db)
        upgrade(engine)
        for version in RELEASES:
            report = extract_and_ingest(engine, tinygrad_release(version), ExtractionPlan(case_files=[CORE_CASES]))
            assert report.status == "ok", (version, report)
        engine.dispose()
        return db

    return Path(built_once(tmp_path_factory, "releases", build))
