"""Reading what Svod prints, one module per format, into kernels and stages (no database here).

Each format is a module with `KIND`, `sniff(name, text)` and `read(log, tracker, file, name, text)`; `READERS` lists
them, first match wins, and the test log (which claims anything) comes last. A new format is one new module and one
line in `READERS`. Where each format is defined in Svod's source: the module docstrings,
../shared/formats/svod-logs.md and docs/svod.md.

Kernels are not marked in any of them. Per kernel Svod runs pre-optimization, then post-optimization, then codegen;
`kernel initial` (TRACE) is emitted twice per kernel, before each of the first two (tgstore.svod.emission,
tgstore.svod.readers.segment). Nothing read is dropped: what is not a stage or an event is a raw line, what is
malformed is a problem with its line, and a tree that does not parse is kept as text.
"""

from __future__ import annotations

from types import ModuleType

from tgstore.svod.readers import capture, extract_ir, linear, llvm_ir, test_log
from tgstore.svod.readers.model import Event, Kernel, Problem, Stage, SvodLog, kernel_name_of, load_json
from tgstore.svod.readers.place import place_files
from tgstore.svod.readers.segment import Segmenter

READERS: tuple[ModuleType, ...] = (llvm_ir, linear, capture, extract_ir, test_log)


def reader_for(name: str, text: str) -> ModuleType:
    return next(reader for reader in READERS if reader.sniff(name, text))


def classify(name: str, text: str) -> str:
    """The KIND of the reader that claims the file: llvm-ir | linear | capture | extract-ir | log."""
    return reader_for(name, text).KIND


def read_files(files: list[tuple[str, str]]) -> SvodLog:
    """Read files (name, text) that belong to one Svod run: its log(s) in order, then its dump files."""
    log = SvodLog()
    tracker = Segmenter(log)
    for index, (name, text) in enumerate(files):
        base = name.rsplit("/", 1)[-1]
        reader = reader_for(base, text)
        log.files.append((name, reader.KIND, text))
        reader.read(log, tracker, index, base, text)
    tracker.finish()
    place_files(log, log.pending.get(linear.KIND, []), log.pending.get(llvm_ir.KIND, []))
    backends = {t.rsplit("::", 1)[-1] for t in log.tests if "::" in t}
    if len(backends) > 1 and not any(k.test for k in log.kernels):
        log.problems.append(Problem(0, 0, f"the log holds tests of {len(backends)} backends "
                                    f"({', '.join(sorted(backends))}) run in parallel: their kernels cannot be told "
                                    "apart; run one backend, or --test-threads=1"))
    return log


__all__ = ["READERS", "Event", "Kernel", "Problem", "Segmenter", "Stage", "SvodLog", "classify", "kernel_name_of",
           "load_json", "read_files"]
