"""Moved: tgstore.compare.stage_diff. Re-exported for svod/parity.py until it imports from there."""

from tgstore.compare.stage_diff import StageError, run_with_case

__all__ = ["StageError", "run_with_case"]
