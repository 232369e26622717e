"""pyrender text with its variables renumbered canonically (c0, c1, ... in order of definition), so that two ASTs
that differ by one node do not show every later line as changed only because tinygrad numbered them apart."""

from __future__ import annotations

import re

VARIABLE = re.compile(r"\bc(\d+)\b")
DEFINITION = re.compile(r"^c(\d+) = ", re.M)


def canonical_pyrender(text: str) -> str:
    order: dict[str, str] = {}
    for m in DEFINITION.finditer(text):
        order.setdefault(m.group(1), f"c{len(order)}")
    return VARIABLE.sub(lambda m: order.get(m.group(1), m.group(0)), text)
