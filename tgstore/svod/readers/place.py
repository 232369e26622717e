"""Placing dump files on the kernels the logs named: an `.ll` file on the kernel of its name, LINEAR files on the
kernels in sink-id order."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tgstore.svod.readers.linear import read_linear_dump
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, kernel_name_of


def has_events(events: Iterable[tuple[str | None, str | None]], target: str, level: str | None = None) -> bool:
    """Whether a log's events (target, level) show RUST_LOG enabled `target` (a prefix) at `level`: a hint checks
    the log's own switches before suggesting one."""
    return any(str(t or "").startswith(target) and (level is None or lv == level) for t, lv in events)


def event_switches(log: SvodLog) -> list[tuple[str | None, str | None]]:
    return [(e.record.get("target"), e.record.get("level")) for e in log.events]


def _naming_hint(log: SvodLog) -> str:
    """Why the log names no such kernel, checked against the log's own switches before suggesting one."""
    traced = has_events(event_switches(log), "svod_codegen", "TRACE")
    named = sorted({k.name for k in log.kernels if k.name})
    if traced:
        return (f"the log has svod_codegen traces, and they name {', '.join(named) or 'no kernel'}: the file is of "
                "another run or test")
    return "a log without generated code names no kernel: add svod_codegen=trace to RUST_LOG"


def place_files(log: SvodLog, linear: list[tuple[int, str, str]], llvm: list[tuple[int, str, str]]) -> None:
    """SVOD_DUMP_LINEAR and SVOD_DUMP_LLVM_IR files of the same run as the log(s): an `.ll` file goes to the kernel
    of its name; LINEAR files (named by the id of the kernel's sink, allocated in compile order) go to the kernels
    in order when there are as many ids as kernels. With no kernel in the logs each file is a kernel of its own."""
    from_logs = bool(log.kernels)
    for file, name, text in llvm:
        kernel_name = name.removesuffix(".post.ll").removesuffix(".ll")
        kernel = next((k for k in log.kernels if k.name == kernel_name), None)
        if kernel is None and from_logs:
            log.problems.append(Problem(file, 1, f"{name}: no kernel named {kernel_name!r} in the log "
                                        f"({_naming_hint(log)}); the file is kept, not placed", None))
            continue
        if kernel is None:
            kernel = Kernel(len(log.kernels), file, 1, name=kernel_name)
            log.kernels.append(kernel)
        if name.endswith(".post.ll"):
            kernel.stages.append(Stage("llvm-ir-post-o2", "llvm-ir", file, 1, tree_text=text, message=name))
        elif kernel.code is None:
            kernel.code, kernel.code_kind = text, "llvm"
            kernel.name = kernel.name or kernel_name_of(text) or kernel_name
        else:
            kernel.stages.append(Stage("llvm-ir", "llvm-ir", file, 1, tree_text=text, message=name))
    by_id: dict[int, list[tuple[int, str, str]]] = {}
    for file, name, text in linear:
        by_id.setdefault(int(re.search(r"_(\d+)\.txt$", name).group(1)), []).append((file, name, text))
    ids = sorted(by_id)
    if log.kernels and len(ids) != len(log.kernels):
        for sink_id in ids:
            for file, name, _text in by_id[sink_id]:
                log.problems.append(Problem(file, 1, f"{name}: {len(ids)} SVOD_DUMP_LINEAR kernels for "
                                            f"{len(log.kernels)} kernels in the log; the file is kept, not placed",
                                            None))
        return
    for i, sink_id in enumerate(ids):
        if i < len(log.kernels):
            kernel = log.kernels[i]
        else:
            kernel = Kernel(len(log.kernels), by_id[sink_id][0][0], 1, test=f"linear:{sink_id}")
            log.kernels.append(kernel)
        for file, name, text in by_id[sink_id]:
            kernel.stages.append(read_linear_dump(log, file, text, name))
