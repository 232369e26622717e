"""GPU IR dumps: `SVOD_DUMP_NVPTX_IR=<dir>` / `SVOD_DUMP_AMD_IR=<dir>` write `<arch>_<kernel>.ll`
(`sm_89_r_8_16_4.ll`, `gfx1100_r_8_16_4.ll`) with the `ptx_kernel` / `amdgpu_kernel` calling convention, before
clang compiles them (DEBUG `compiling nvptx|amdgcn IR via clang`, svod's `codegen`/`runtime` GPU paths). Each goes
to the kernel of its name as its own code kind (`nvptx`, `amdgpu`), never as CPU LLVM IR."""

from __future__ import annotations

import re

from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, kernel_name_of
from tgstore.svod.readers.segment import Segmenter

KIND = "gpu-ir"
NAME = re.compile(r"^(?P<arch>sm_\d+[a-z]?|gfx\d+[0-9a-z]*)_(?P<kernel>.+)\.ll$")
CODE_KIND = {"sm": "nvptx", "gfx": "amdgpu"}
ABI = re.compile(r"ptx_kernel|amdgpu_kernel|nvptx64|amdgcn")


def sniff(name: str, text: str) -> bool:
    return NAME.match(name) is not None and ABI.search(text) is not None


def read(log: SvodLog, tracker: Segmenter, file: int, name: str, text: str) -> None:
    log.pending.setdefault(KIND, []).append((file, name, text))


def place(runs: list[SvodLog], primary: SvodLog, files: list[tuple[int, str, str]]) -> None:
    """Each file on the run whose kernel it names; the run with output takes the rest."""
    for log in runs:
        names = {k.name for k in log.kernels if k.name}
        _place(log, [f for f in files if log is primary or NAME.match(f[1]).group("kernel") in names])


def _place(log: SvodLog, files: list[tuple[int, str, str]]) -> None:
    """On the kernel of its name (the log's), as that kernel's code when it has none, else as a stage of its own
    kind; with no kernel in the log, each file is a kernel of its own."""
    for file, name, text in files:
        m = NAME.match(name)
        kind = CODE_KIND["sm" if m.group("arch").startswith("sm") else "gfx"]
        kernel_name = kernel_name_of(text) or m.group("kernel")
        kernel = next((k for k in log.kernels if k.name in (kernel_name, m.group("kernel"))), None)
        if kernel is None and log.kernels:
            log.problems.append(Problem(file, 1, f"{name}: no kernel named {kernel_name!r} in the log; the file is "
                                        "kept, not placed"))
            continue
        if kernel is None:
            kernel = Kernel(len(log.kernels), file, 1, name=kernel_name)
            log.kernels.append(kernel)
        if kernel.code is None:
            kernel.code, kernel.code_kind = text, kind
        else:
            kernel.stages.append(Stage(f"{kind}-ir", KIND, file, 1, tree_text=text, message=name))
