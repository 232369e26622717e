"""Moved: tgstore.compare.diff. Re-exported for web/ until it imports from there."""

from tgstore.compare.diff import DiffError, _cases, _items, _programs, choose_runs, diff_commits, summary_line

__all__ = ["DiffError", "_cases", "_items", "_programs", "choose_runs", "diff_commits", "summary_line"]
