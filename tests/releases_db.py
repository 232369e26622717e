"""Session fixture ``releases_db``: one database holding the built-in suite extracted from three tinygrad releases
(default renderers and stages), shared by the tests that need real, multi-era data."""

from __future__ import annotations

from pathlib import Path

import pytest

from tgstore.db import open_engine, upgrade
from tgstore.pipeline import ExtractionPlan, extract_and_ingest

# Oldest, a middle one, newest: each a different era of tinygrad's internal API.
RELEASES = ["0.10.0", "0.12.0", "0.14.0"]


@pytest.fixture(scope="session")
def releases_db(tmp_path_factory, tinygrad_release) -> Path:
    """One database holding the built-in suite extracted from three tinygrad releases."""
    db = tmp_path_factory.mktemp("releases") / "releases.db"
    engine = open_engine(db)
    upgrade(engine)
    for version in RELEASES:
        report = extract_and_ingest(engine, tinygrad_release(version), ExtractionPlan())
        assert report.status == "ok", (version, report)
    engine.dispose()
    return db


