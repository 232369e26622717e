"""`SVOD_DUMP_LINEAR=<dir>` files `tree_<id>.txt`, `linear_<id>.txt` (`codegen/src/program_pipeline.rs`
`do_linearize`): one line per UOp, its op as `Discriminant(N)`. Named by the id of the kernel's sink, allocated in
compile order, so they are placed on the kernels after every log was read (tgstore.svod.readers.place)."""

from __future__ import annotations

import re

from tgstore.svod.readers.model import Problem, Stage, SvodLog
from tgstore.svod.readers.segment import Segmenter

KIND = "linear"
LINEAR_LINE = re.compile(r"^\[\s*(\d+)\] id=(\d+) Discriminant\((\d+)\) scope=\{[\d,]*\}$")


def sniff(name: str, text: str) -> bool:
    return re.fullmatch(r"(tree|linear)_\d+\.txt", name) is not None


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    log.pending.setdefault(KIND, []).append((file, name, text))


def read_linear_dump(log: SvodLog, file: int, text: str, name: str) -> Stage:
    """tree_<id>.txt / linear_<id>.txt: one line per UOp, its op as `Discriminant(N)` (not a name)."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    for n, line in enumerate(lines, start=1):
        if not LINEAR_LINE.match(line):
            log.problems.append(Problem(file, n, "not a SVOD_DUMP_LINEAR line", line))
    kind = name.split("_", 1)[0]
    return Stage("linear" if kind == "linear" else "linear-tree", "linear", file, 1, node_count=len(lines),
                 tree_text=text, message=name)
