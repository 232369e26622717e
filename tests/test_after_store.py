"""store/after_store.py: the hooks a sweep or bisect tells once it has stored a run, in registration order, each
once however often registered; the command line registers the Svod wing's parity refresh (the history wing does
not import the Svod wing: tests/test_structure.py)."""

from __future__ import annotations

from tgstore.store import after_store


def test_hooks_are_told_in_order_once_each() -> None:
    told: list[tuple[str, object, list]] = []

    def first(engine: object, reports: list) -> None:
        told.append(("first", engine, reports))

    def second(engine: object, reports: list) -> None:
        told.append(("second", engine, reports))

    registered = list(after_store._HOOKS)  # the command line's, when it is loaded: set aside for the test
    try:
        for hook in registered:
            after_store.unregister(hook)
        after_store.register(first), after_store.register(second), after_store.register(first)
        after_store.stored("engine", ["report"])
    finally:
        after_store.unregister(first), after_store.unregister(second)
        for hook in registered:
            after_store.register(hook)
    assert told == [("first", "engine", ["report"]), ("second", "engine", ["report"])]


def test_the_command_line_registers_svods_parity_refresh() -> None:
    import tgstore.cli.extract as extract

    assert extract.parity_after_store in after_store._HOOKS
