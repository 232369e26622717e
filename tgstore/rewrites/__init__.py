"""Moved: tgstore.compare.rewrite_steps. Re-exported for web/steps.py until it imports from there."""

from tgstore.compare.rewrite_steps import PassSteps, case_steps

__all__ = ["PassSteps", "case_steps"]
