"""Strict canonical capture files (`SVOD_CAPTURE_CANONICAL_PATH`, `ir/src/uop/canonical.rs`): one pretty-printed
canonical document, placed by its `stage`."""

from __future__ import annotations

from tgstore.svod.readers.model import Stage, SvodLog, load_json
from tgstore.svod.readers.segment import Segmenter

KIND = "capture"


def sniff(name: str, text: str) -> bool:
    head = text[:4096].lstrip() or text.lstrip()[:4096]  # the start (a 40 MB log with a leading space not copied)
    if not head.startswith("{") or head.startswith('{"timestamp"'):
        return False
    stripped = text.lstrip()
    try:
        document = load_json(stripped)
    except ValueError:
        return False
    return isinstance(document, dict) and "schema_version" in document


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    document = load_json(text)
    tracker.add(Stage(str(document.get("stage")), "capture", file, 1, canonical=document))
