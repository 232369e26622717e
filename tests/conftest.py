"""Shared pytest fixtures."""

from readme_db import readme_db  # noqa: F401  (session fixture, see tests/readme_db.py)
from real_bundles import real_bundles  # noqa: F401  (session fixture, see tests/real_bundles.py)
from releases_db import releases_db  # noqa: F401  (session fixture, see tests/releases_db.py)
from tinygrad_releases import tinygrad_release  # noqa: F401  (session fixture, see tests/tinygrad_releases.py)
