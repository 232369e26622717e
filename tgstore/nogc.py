"""Pausing Python's cyclic garbage collector while building or walking a large acyclic structure.

Reading a bundle allocates millions of small dicts and lists that all stay alive; each allocation burst triggers a
collection that walks everything allocated so far, which cost two thirds of reading a 66 MB bundle (bench/README.md,
"Ingesting an extracted commit"). Nothing built there holds a reference cycle, and the collector runs again as soon
as the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Automatic collection off for the block (nested blocks leave it to the outermost one)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
