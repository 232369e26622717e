"""Kernel names out of the way: `--ignore-names` compares sources and ASTs with each kernel's own name masked, so
that a renamed kernel (r_4_16n1 -> r_4_16, E_4 -> E_4_4 in a name only) is not a change."""

from __future__ import annotations

import hashlib
import re

PLACEHOLDER = "KERNEL_NAME"


def mask_names(text: str | None, *names: str | None) -> str | None:
    """`text` with each whole-word occurrence of the given kernel names replaced by a placeholder."""
    if text is None:
        return None
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(name)}(?![\w])", PLACEHOLDER, text)
    return text


def masked_hash(text: str | None, *names: str | None) -> str | None:
    masked = mask_names(text, *names)
    return None if masked is None else hashlib.sha256(masked.encode("utf-8", "surrogatepass")).hexdigest()
