"""`SVOD_DUMP_LINEAR=<dir>` files `tree_<id>.txt`, `linear_<id>.txt` (`codegen/src/program_pipeline.rs`
`do_linearize`): one line per UOp, its op as `Discriminant(N)`. Named by the id of the kernel's sink, allocated as
kernels are compiled: in schedule order with one thread only, so they are placed on the kernels in id order only
when the log shows one thread and has as many ids as kernels."""

from __future__ import annotations

import re

from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog
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


def place(runs: list[SvodLog], primary: SvodLog, files: list[tuple[int, str, str]]) -> None:
    """On the run with output: kernel n takes the n-th sink id when ids and kernels are as many and the kernels were
    compiled one after another (SVOD_THREADS=1); with no kernel in the logs each id is a kernel of its own."""
    log = primary
    by_id: dict[int, list[tuple[int, str, str]]] = {}
    for file, name, text in files:
        by_id.setdefault(int(re.search(r"_(\d+)\.txt$", name).group(1)), []).append((file, name, text))
    ids = sorted(by_id)
    why = None
    if log.kernels and len(ids) != len(log.kernels):
        why = f"{len(ids)} SVOD_DUMP_LINEAR kernels for {len(log.kernels)} kernels in the log"
    elif log.kernels and len(ids) > 1 and not log.serial:
        why = ("the log does not show its kernels compiled one after another (SVOD_THREADS=1), and sink ids follow "
               "the order they were compiled in")
    if why:
        for sink_id in ids:
            for file, name, _text in by_id[sink_id]:
                log.problems.append(Problem(file, 1, f"{name}: {why}; the file is kept, not placed", None))
        return
    for i, sink_id in enumerate(ids):
        if i < len(log.kernels):
            kernel = log.kernels[i]
        else:
            kernel = Kernel(len(log.kernels), by_id[sink_id][0][0], 1, test=f"linear:{sink_id}")
            log.kernels.append(kernel)
        for file, name, text in by_id[sink_id]:
            kernel.stages.append(read_linear_dump(log, file, text, name))
