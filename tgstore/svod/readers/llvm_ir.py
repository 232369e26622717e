"""`SVOD_DUMP_LLVM_IR=<dir>` / `SVOD_DUMP_POST_O2_IR=<dir>` files `<kernel>.ll`, `<kernel>.post.ll`
(`runtime/src/llvm.rs`), placed on the kernel of their name after every log was read."""

from __future__ import annotations

from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, event_switches, has_events, kernel_name_of
from tgstore.svod.readers.segment import Segmenter

KIND = "llvm-ir"


def sniff(name: str, text: str) -> bool:
    return name.endswith(".ll")


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    log.pending.setdefault(KIND, []).append((file, name, text))


def stem(name: str) -> str:
    return name.removesuffix(".post.ll").removesuffix(".ll")


def place(runs: list[SvodLog], primary: SvodLog, files: list[tuple[int, str, str]]) -> None:
    """Each file on the run whose kernel it names; the run with output also takes what no other run names."""
    for log in runs:
        names = {k.name for k in log.kernels if k.name}
        if log is primary:
            others = {k.name for other in runs if other is not log for k in other.kernels if k.name}
            mine = [f for f in files if stem(f[1]) not in others]
        else:
            mine = [f for f in files if stem(f[1]) in names]
        _place(log, mine)


def naming_hint(log: SvodLog) -> str:
    """Why the log names no such kernel, checked against the log's own switches before suggesting one."""
    traced = has_events(event_switches(log), "svod_codegen", "TRACE")
    named = sorted({k.name for k in log.kernels if k.name})
    if traced:
        return (f"the log has svod_codegen traces, and they name {', '.join(named) or 'no kernel'}: the file is of "
                "another run or test")
    return "a log without generated code names no kernel: add svod_codegen=trace to RUST_LOG"


def _place(log: SvodLog, files: list[tuple[int, str, str]]) -> None:
    """An `.ll` file goes to the kernel of its name; with no kernel in the logs each file is a kernel of its own."""
    from_logs = bool(log.kernels)
    for file, name, text in files:
        kernel_name = stem(name)
        kernel = next((k for k in log.kernels if k.name == kernel_name), None)
        if kernel is None and from_logs:
            log.problems.append(Problem(file, 1, f"{name}: no kernel named {kernel_name!r} in the log "
                                        f"({naming_hint(log)}); the file is kept, not placed", None))
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
