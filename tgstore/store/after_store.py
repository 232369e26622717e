"""What runs after a tinygrad run is stored by a sweep or a bisect: hooks a room above registers, so the history
wing that stores runs does not import the wings that react to them. The Svod wing's reaction (its parity with the
new run, svod/parity_store.refresh_after_ingest) is registered by the command line (cli/extract.py), which composes
the two; a library caller composing its own registers what it wants (or nothing: then nothing else is decided)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (engine, the ingest reports of the runs just stored) -> None
AfterStore = Callable[[Any, list[Any]], None]
_HOOKS: list[AfterStore] = []


def register(hook: AfterStore) -> AfterStore:
    """Call `hook` after every run a sweep or bisect stores (once, however often it is registered)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)
    return hook


def unregister(hook: AfterStore) -> None:
    if hook in _HOOKS:
        _HOOKS.remove(hook)


def stored(engine: Any, reports: list[Any]) -> None:
    """The runs of `reports` are stored: every registered hook is told, in registration order."""
    for hook in list(_HOOKS):
        hook(engine, reports)
