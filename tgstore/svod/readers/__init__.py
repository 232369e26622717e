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

from tgstore.svod.readers.model import Event, Kernel, Problem, Stage, SvodLog, kernel_name_of, load_json
from tgstore.svod.readers.runs import READERS, read_files, read_runs, reader_for
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import InterleavedTests, case_from_test


def classify(name: str, text: str) -> str:
    """The KIND of the reader that claims the file: llvm-ir | linear | capture | extract-ir | log."""
    return reader_for(name, text).KIND


__all__ = ["READERS", "Event", "InterleavedTests", "Kernel", "Problem", "Segmenter", "Stage", "SvodLog",
           "case_from_test", "classify", "kernel_name_of", "load_json", "read_files", "read_runs"]
