"""Shared pytest fixtures."""

from tinygrad_releases import tinygrad_release  # noqa: F401  (session fixture, see tests/tinygrad_releases.py)
