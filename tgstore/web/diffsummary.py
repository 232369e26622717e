"""What the compare page adds to the comparison of two commits (tgstore.compare.summary): diff's per-kernel
"renderer X only at <sha>" notes folded into one line per renderer and side, and the summary's template context."""

from __future__ import annotations

import re
from typing import Any

from tgstore.compare.summary import Summary, label
from tgstore.store.commit_names import CommitRow

ONE_SIDED = re.compile(r"^(?P<where>\S+): renderer (?P<renderer>\S+) only at (?P<side>\S+)$")


def one_sided_notes(notes: list[str], a: CommitRow, b: CommitRow) -> tuple[list[str], list[str]]:
    """diff's per-kernel "renderer X only at <sha>" notes folded into one line per renderer and side, naming the
    commits by version (or short sha); the other notes as they are."""
    sides = {a.short: (label(a), label(b)), b.short: (label(b), label(a))}
    grouped: dict[tuple[str, str], int] = {}
    rest = []
    for note in notes:
        m = ONE_SIDED.match(note)
        if m and m["side"] in sides:
            key = (m["renderer"], m["side"])
            grouped[key] = grouped.get(key, 0) + 1
        else:
            rest.append(note)
    lines = [f"{renderer} only at {sides[side][0]}, not at {sides[side][1]} ({n} kernel{'s' if n > 1 else ''})"
             for (renderer, side), n in sorted(grouped.items())]
    return lines, rest


def context(summary: Summary) -> dict[str, Any]:
    return {"summary_table": summary, "label_a": label(summary.a), "label_b": label(summary.b)}
