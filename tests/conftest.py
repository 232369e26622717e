"""Shared pytest fixtures."""

from releases_db import releases_db  # noqa: F401  (session fixture, see tests/releases_db.py)
from tinygrad_releases import tinygrad_release  # noqa: F401  (session fixture, see tests/tinygrad_releases.py)
