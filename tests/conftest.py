"""Shared pytest fixtures, and the fast tier's marks."""

import pytest
from readme_db import readme_db  # noqa: F401  (session fixture, see tests/readme_db.py)
from real_bundles import real_bundles  # noqa: F401  (session fixture, see tests/real_bundles.py)
from releases_db import releases_db  # noqa: F401  (session fixture, see tests/releases_db.py)
from tinygrad_releases import tinygrad_release  # noqa: F401  (session fixture, see tests/tinygrad_releases.py)
from two_releases_db import two_releases_db  # noqa: F401  (session fixture, see tests/two_releases_db.py)

# A test is slow when it needs a real extraction, an installed tinygrad release or a database built from them: these
# fixtures build those (minutes on 2 cores the first time, shared by the session after). Tests that are slow for
# another reason (a browser, a sweep through the CLI) carry @pytest.mark.slow themselves. `pytest -m "not slow"` is
# the fast tier (README.md says how long it takes).
SLOW_FIXTURES = {"readme_db", "real_bundles", "releases_db", "tinygrad_release", "two_releases_db"}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
