"""Extraction: the child script that reads a tinygrad (child.py) and the parent that runs it (runner.py)."""
