"""One ingest's files into Svod runs: a test log is a test session (tgstore.svod.readers.sessions, .nextest), each
test a run of its own with its outcome and failure; dump files and captures go with the run that names their
kernels.

A reader is a module with `KIND` and `sniff(name, text)`, and one of:
* `parts(text)` and `read_part(log, tracker, file, part)`: a log of tests, one part per test (libtest, nextest);
* `read(log, tracker, file, name, text)`: its stages go to the run with output (extract-ir.sh, capture files);
* `read(...)` keeping the file in `log.pending[KIND]` and `place(runs, primary, files)`: dump files placed on the
  kernels the logs named, after every log was read (LLVM, GPU IR, SVOD_DUMP_LINEAR).
`READERS` lists them, first match wins; the test log (which claims anything) comes last.
"""

from __future__ import annotations

from types import ModuleType

from tgstore.nogc import gc_paused
from tgstore.svod.emission import place
from tgstore.svod.readers import apart, capture, extract_ir, gpu_ir, linear, llvm_ir, nextest_log, outcomes, test_log
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, load_json, tree_stage
from tgstore.svod.readers.panics import Panic
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import TestPart
from tgstore.svod.readers.widen import widen_runs
from tgstore.svod.tree import TreeError, parse_tree

READERS: tuple[ModuleType, ...] = (gpu_ir, llvm_ir, linear, capture, extract_ir, nextest_log, test_log)
TEST_DIRS = ("test", "tests", "testing", "examples", "benches")  # a panic in a test's or program's own file fails
# the test or program, not a kernel


def reader_for(name: str, text: str) -> ModuleType:
    return next(reader for reader in READERS if reader.sniff(name, text))


def read_runs(files: list[tuple[str, str]], threads_stated: int | None = None, *, narrowed: bool = False
              ) -> list[SvodLog]:
    """The Svod runs in files (name, text) given together: one per test of the logs (one when the logs hold no
    test), with the dump files placed on the run whose kernels they name. Tests run in libtest's threads that the
    log cannot tell apart keep their runs and outcomes; their Svod output is one run with no test, every stage of it
    unattributed, with a problem saying what would prove its test (sessions.TestPart.unproven). The cyclic
    collector waits (tgstore.nogc): what is read holds no cycle and lives until stored. `threads_stated`: the
    SVOD_THREADS the user says the run had (SvodLog.threads_stated). `narrowed`: the texts' tree-drawing characters
    are one-byte stand-ins (tgstore.svod.drawing, as ingest reads a file); what is read is widened back."""
    with gc_paused():
        runs = _read_runs(files, threads_stated)
        if narrowed:
            widen_runs(runs)
        return runs


def _read_runs(files: list[tuple[str, str]], threads_stated: int | None) -> list[SvodLog]:
    kinds = [(name, reader_for(name.rsplit("/", 1)[-1], text), text) for name, text in files]
    listing = [(name, reader.KIND, text) for name, reader, text in kinds]
    groups: dict[str | None, list[tuple[int, TestPart, ModuleType]]] = {}
    by_file = {index: reader.parts(text) for index, (_name, reader, text) in enumerate(kinds)
               if hasattr(reader, "parts")}
    apart.split_streams(by_file)
    for index, file_parts in by_file.items():
        for part in file_parts:
            groups.setdefault(part.name, []).append((index, part, kinds[index][1]))
    runs: list[tuple[SvodLog, Segmenter]] = []
    for test, parts in (groups or {None: []}).items():
        log = SvodLog(files=list(listing), test=test, threads_stated=threads_stated)
        log.panic = next((p.panic for _i, p, _r in parts if p.panic), None)
        log.torn_panic = next((p.torn_panic for _i, p, _r in parts if p.torn_panic), None)
        outcomes = [p.outcome for _i, p, _r in parts]
        log.outcome = "FAILED" if "FAILED" in outcomes else outcomes[-1] if outcomes else None
        log.captured = bool(parts) and all(p.captured for _i, p, _r in parts)
        if test is not None:
            log.tests.append(test)
        log.tests_unproven = any(p.unproven for _i, p, _r in parts)
        cut = test is not None and log.outcome is None
        tracker = Segmenter(log, test, failed=log.panic is not None or log.outcome == "FAILED" or cut)
        streams: set[int] = set()
        for index, part, reader in parts:
            if part.stream and streams - {part.stream}:  # the other stream, in a file of its own
                tracker.second_stream(index, part.lines[0][0] if part.lines else 1)
            streams.add(part.stream)
            tracker.stream = part.stream
            reader.read_part(log, tracker, index, part)
            _check_end(log, index, part, kinds[index][2])
            if part.unproven:
                log.problems.append(Problem(index, part.lines[0][0] if part.lines else 1, part.unproven))
        runs.append((log, tracker))
    primary = next((log for log, t in runs if _has_output(log, t)), runs[0][0])
    primary_tracker = next(t for log, t in runs if log is primary)
    for index, (name, reader, text) in enumerate(kinds):
        if not hasattr(reader, "parts"):
            reader.read(primary, primary_tracker, index, name.rsplit("/", 1)[-1], text)
    for log, tracker in runs:
        tracker.finish()
        _fail(log)
        _unknown_skip(log, groups.get(log.test, []))
        if log.tests_unproven:
            _unattribute(log)
    logs = [log for log, _t in runs]
    for reader in READERS:
        if hasattr(reader, "place"):
            reader.place(logs, primary, primary.pending.get(reader.KIND, []))
    return logs


def _unknown_skip(log: SvodLog, parts: list[tuple[int, TestPart, ModuleType]]) -> None:
    """A line saying the test was skipped in a form outcomes.SKIP_LINES lacks: a test that passed and printed no
    stage is a skip (with a problem naming the line), never `ok` with no kernels."""
    found = next(((index, part.unknown_skip) for index, part, _r in parts if part.unknown_skip), None)
    if found is None or log.outcome != outcomes.OK:
        return
    index, (line, text) = found
    if log.kernels or log.stage_count:
        log.problems.append(Problem(index, line, "a line says something was skipped, in a form tgstore does not know "
                                    "(outcomes.SKIP_LINES), but the test printed stages: kept as passed", text[:500]))
        return
    log.outcome = outcomes.SKIPPED
    log.problems.append(Problem(index, line, "a skip line of a form tgstore does not know (outcomes.SKIP_LINES): the "
                                "test is stored as skipped", text[:500]))


def _unattribute(log: SvodLog) -> None:
    """The run of output no proof ties to a test (libtest's threads): no stage of it is filed on a kernel or a
    schedule, since the kernel it would be filed on is of some test the log does not name. The kernels seen (names,
    code) are kept, holding no stage; the stages stay at their lines, unattributed."""
    log.unattributed += log.schedule_stages
    log.schedule_stages = []
    for kernel in log.kernels:
        log.unattributed += kernel.stages
        kernel.stages = []
    log.failed_kernel = None


def _has_output(log: SvodLog, tracker: Segmenter) -> bool:
    return bool(log.events or log.schedule_stages or log.unplaced or tracker.printed)


def _check_end(log: SvodLog, file: int, part: TestPart, text: str) -> None:
    if part.name is not None and part.outcome is None:
        first = part.lines[0][0] if part.lines else 1
        what = f"program {part.name} has no end" if part.program else f"test {part.name} has no result line"
        log.problems.append(Problem(file, first, f"{what}: the log ends inside it (a killed job or a cut log); what "
                                    "it printed is stored, its last kernel may be cut short"))
    last = text.count("\n") + 1
    tails = [lines[-1] for lines in (part.lines, part.stderr) if lines is not None and len(lines)]
    for number, line in tails:
        if text and not text.endswith("\n") and number == last and line.startswith("{") and not _is_json(line):
            log.problems.append(Problem(file, number, "the file ends mid-line (the job was killed or the log cut); "
                                        "the line is kept as text", line[:2000]))


def _is_json(line: str) -> bool:
    try:
        load_json(line)
        return True
    except ValueError:
        return False


def in_test_code(location: str) -> bool:
    """Whether a panic's FILE:LINE:COL is in a test's own code (Svod's tests live in `*/src/test/...`, `tests/`):
    an `assert_eq!` there fails the test after its kernels, not a kernel."""
    path = location.rsplit(":", 2)[0].replace("\\", "/")
    parts = path.split("/")
    return any(p in TEST_DIRS for p in parts[:-1]) or parts[-1].startswith("test") or \
        parts[-1].endswith(("_test.rs", "_tests.rs"))


# std's panic hook writes to stderr without its lock, its first line in pieces where the message is longer than its
# 512-byte buffer (library/std/src/panicking.rs, `default_hook`): another thread's `eprintln!` pieces can land
# between them in an order no reading undoes for sure
TORN_PANIC = ("test {test} panicked, but the panic's first line is torn by another thread's stderr pieces past "
              "reading (the hook writes without stderr's lock): its thread, location and message are not proven and "
              "not stored, nor the kernel it hit; SVOD_THREADS=1 keeps other threads from writing while it panics")


def _fail(log: SvodLog) -> None:
    """A panic: the kernel it hit (the one holding a stage of the very graph the message prints, else, with one
    optimizing thread, the kernel of the last stage before it), that kernel's last stage, and the tree in the
    message as its last tree. A panic in the test's own code (an assertion on results) is the test's failure."""
    panic: Panic | None = log.panic
    first_log = next((i for i, (_n, kind, _t) in enumerate(log.files) if kind in ("log", "nextest")), 0)
    if panic is None and log.torn_panic is not None:
        log.problems.append(Problem(first_log, log.torn_panic, TORN_PANIC.format(test=log.test or "(no test)")))
    if panic is None:
        return
    log.problems.append(Problem(first_log,
                                panic.line, f"test {log.test or '(no test)'} panicked at {panic.location}: "
                                f"{panic.message.splitlines()[0] if panic.message else ''}"[:500]))
    if panic.message_unproven:
        log.problems.append(Problem(first_log, panic.line, f"the message of the panic at line {panic.line} is not "
                                    f"proven and not stored: {panic.message_unproven}"))
    if in_test_code(panic.location):
        return  # the test body failed: its kernels did what they did; none of them is the failure
    tree = _panic_tree(log, panic)
    kernel: Kernel | None = None
    if tree is not None and tree.tree is not None and len(tree.tree.roots) == 1:
        root = tree.tree.roots[0]
        owners = {k.index for k in log.kernels for s in k.stages if s.tree and s.tree.roots == [root]}
        kernel = next((k for k in log.kernels if k.index in owners), None) if len(owners) == 1 else None
    if kernel is None and log.serial:  # the panic is on stderr: with the streams apart, only stderr's lines order
        before = [(s.order, k) for k in log.kernels for s in k.stages
                  if s.stream != 1 and s.line < panic.line and s.order >= 0]
        kernel = max(before, key=lambda pair: pair[0])[1] if before else None
    if kernel is not None:
        # stdout written apart: all of it came before the panic stopped the kernel, in no order with stderr's lines
        reached = [s for s in kernel.stages if s.stream == 1 or s.line < panic.line]
        if len({s.stream for s in reached}) > 1:
            reached.sort(key=_pipeline_rank)  # each stream prints a kernel's stages in the pipeline's order
        log.failed_kernel = kernel.index
        log.last_stage = reached[-1].label if reached else None
        if tree is not None:
            kernel.stages.append(tree)
    elif tree is not None:
        log.unattributed.append(tree)


PHASES = {"schedule": 0, "opt": 1, "code": 2}


def _pipeline_rank(stage: Stage) -> tuple[int, int]:
    """A stage's place in Svod's pipeline (tgstore.svod.emission): the order one kernel prints its stages in."""
    where = place("00-initial" if stage.label == "kernel-initial-or-00" else stage.label, stage.source)
    if where is None:
        return (-1, -1)
    return PHASES.get(where.phase, -1), where.position if where.position is not None else -1


def _panic_tree(log: SvodLog, panic: Panic) -> Stage | None:
    """A UOp tree inside the panic message (from its first `[id] ...` line on): stored as the kernel's last tree."""
    lines = panic.message_lines
    start = next((i for i, (_n, text) in enumerate(lines) if text.lstrip().startswith("[")
                  and _tree_line(text)), None)
    if start is None:
        return None
    body = [text for _n, text in lines[start:]]
    end = len(body)
    while end > 0:
        try:
            parse_tree("\n".join(body[:end]) + "\n")
            break
        except TreeError:
            end -= 1
    if end == 0:
        return None
    stage = Stage("panic", "panic", 0, lines[start][0], message=panic.location)
    return tree_stage(stage, "\n".join(body[:end]) + "\n", log, lines[start][0])


def _tree_line(text: str) -> bool:
    try:
        parse_tree(text.strip() + "\n")
        return True
    except TreeError:
        return False


def read_files(files: list[tuple[str, str]], threads_stated: int | None = None) -> SvodLog:
    """All runs of the files as one log (kernels renumbered, each keeping its test): for callers that look at
    everything read, not at runs."""
    runs = read_runs(files, threads_stated)
    if len(runs) == 1:
        return runs[0]
    merged = SvodLog(files=runs[0].files)
    for log in runs:
        for kernel in log.kernels:
            kernel.index = len(merged.kernels)
            merged.kernels.append(kernel)
        merged.schedule_stages += log.schedule_stages
        merged.events += log.events
        merged.problems += log.problems
        merged.raw_lines += log.raw_lines
        merged.tests += log.tests
        merged.unplaced += log.unplaced
        merged.unattributed += log.unattributed
        merged.loose_fires += log.loose_fires
    return merged
