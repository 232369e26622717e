"""`SVOD_DUMP_LLVM_IR=<dir>` / `SVOD_DUMP_POST_O2_IR=<dir>` files `<kernel>.ll`, `<kernel>.post.ll`
(`runtime/src/llvm.rs`), placed on the kernel of their name after every log was read."""

from __future__ import annotations

from tgstore.svod.readers.model import SvodLog
from tgstore.svod.readers.segment import Segmenter

KIND = "llvm-ir"


def sniff(name: str, text: str) -> bool:
    return name.endswith(".ll")


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    log.pending.setdefault(KIND, []).append((file, name, text))
