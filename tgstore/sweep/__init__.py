"""Moved: sweeps are tgstore.history.sweep, git is tgstore.git. Re-exported for svod/portqueue.py and bench/ until
they import from there."""

from tgstore.git import _run_git, line_of, open_repo, package_checkout, resolve_revs, single
from tgstore.history.sweep import CommitOutcome, extract_commit, sweep

__all__ = ["CommitOutcome", "_run_git", "extract_commit", "line_of", "open_repo", "package_checkout",
           "resolve_revs", "single", "sweep"]
