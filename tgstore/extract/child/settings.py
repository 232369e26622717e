"""The settings an extraction's output depends on besides the bytes it reads, in one table: the child records them
with its inputs (main.read_record), and the parent asks the same table whether a stored run holds what a sweep or an
ingest asks for (store/runs.StoredRun, history/stored.stored_commits, history/skip). A new setting is one row here.

Each row says how a stored run's value answers an ask: "same" (it must be equal: another DEBUG level prints other
text), "superset" (it holds at least the asked items: a run that rendered C and LLVM holds C) or "at_least" (a run
that kept 20 rewrite steps a pass holds the first 10). The machine the run used (Python, compilers, libraries) is
not a setting a user asks for: history/skip compares it before copying a run (child/toolchain.py).

Standard library only (the child imports it).
"""

from __future__ import annotations

from typing import Any

# setting -> (rule, its name in words, whether its value is worth showing: hashes are not)
SETTINGS: dict[str, tuple[str, str, bool]] = {
    "suite": ("same", "suite", False),  # sha256 of the case files, or of a captured command line
    "backend": ("same", "backend", True),
    "renderers": ("superset", "renderers", True),
    "stages": ("superset", "stages", True),  # renderers whose lowering passes are recorded
    "rewrites": ("at_least", "rewrite steps a pass", True),
    "debug": ("same", "DEBUG level", True),
    "extractor": ("same", "extractor code", False),  # header.extractor_hash
}


def run_settings(**values: Any) -> dict[str, Any]:
    """A run's settings, one value per row of SETTINGS (lists as given)."""
    if set(values) != set(SETTINGS):
        raise TypeError(f"settings {sorted(values)} are not the table's {sorted(SETTINGS)}")
    return {name: list(v) if isinstance(v, (list, tuple)) else v for name, v in values.items()}


def holds(rule: str, held: Any, asked: Any) -> bool:
    if rule == "superset":
        return set(asked) <= set(held)
    if rule == "at_least":
        return held >= asked
    return held == asked


def lacking(held: dict[str, Any], asked: dict[str, Any]) -> list[str]:
    """What a run with settings `held` lacks of those `asked` (settings `asked` does not name are not compared; one
    the run did not record is lacking), a phrase each: empty when it holds everything asked for."""
    found = []
    for name, (rule, words, shown) in SETTINGS.items():
        if name not in asked:
            continue
        if held.get(name) is None:
            found.append(f"{words} (not recorded by its run)")
        elif not holds(rule, held[name], asked[name]):
            found.append(f"{phrase(name, asked[name])} (it has {show(held[name])})" if shown else f"another {words}")
    return found


def show(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return str(value)


def phrase(name: str, value: Any) -> str:
    """"stages C,LLVM", "20 rewrite steps a pass": a count reads before its noun."""
    rule, words, _shown = SETTINGS[name]
    return f"{value} {words}" if rule == "at_least" else f"{words} {show(value)}"


def describe(settings: dict[str, Any]) -> str:
    """Settings in a few words (those worth showing), for a sweep's lines."""
    return ", ".join(phrase(name, settings[name]) for name, (_rule, _words, shown) in SETTINGS.items()
                     if shown and name in settings)
