"""Reading what Svod prints, one module per format, into kernels and stages (no database here).

Each format is a module with `KIND`, `sniff(name, text)` and either `parts(text)` + `read_part(...)` (a log of
tests: libtest's, nextest's), or `read(log, tracker, file, name, text)`, with `place(runs, primary, files)` when its
files are placed on kernels named elsewhere (LLVM, GPU IR, SVOD_DUMP_LINEAR files: each reader places its own).
`READERS` (in runs.py, re-exported here) lists them, first match wins, and the test log (which claims anything)
comes last. A new format is one new module and one line in `READERS`. Where each format is defined in Svod's
source: the module docstrings, ../shared/formats/svod-logs.md and docs/svod.md. What each kind of line looks like,
per emitter (libtest, Rust's panic hook, cargo, tracing's JSON/Full/Compact formats, Svod's stderr lines), is one
table, grammar.py; outcomes and every skip line Svod prints, outcomes.py.

Kernels are not marked in any of them. Per kernel Svod runs pre-optimization, then post-optimization, then, after
every kernel was optimized, code generation; `kernel initial` (TRACE) is emitted twice per kernel, before each of
the first two (tgstore.svod.emission). Under Svod's default thread count the kernels' output interleaves: a stage
goes to a kernel only on proof (attribute.py, chains.py), never because trees share node ids (Svod hash-conses).
Nothing read is dropped: what is not a stage or an event is a raw line, what is malformed is a problem with its
line, a tree that does not parse is kept as text, and what nothing proves is one kernel's is stored unattributed.
"""

from __future__ import annotations

from tgstore.svod.readers.model import Event, Kernel, Problem, Stage, SvodLog, kernel_name_of, load_json
from tgstore.svod.readers.runs import READERS, read_files, read_runs, reader_for
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import case_from_test


def classify(name: str, text: str) -> str:
    """The KIND of the reader that claims the file: llvm-ir | linear | capture | extract-ir | log."""
    return reader_for(name, text).KIND


__all__ = ["READERS", "Event", "Kernel", "Problem", "Segmenter", "Stage", "SvodLog",
           "case_from_test", "classify", "kernel_name_of", "load_json", "read_files", "read_runs"]
