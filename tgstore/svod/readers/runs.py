"""One ingest's files into Svod runs: a test log is a test session (tgstore.svod.readers.sessions), each test a run
of its own with its outcome and failure; dump files and captures go with the run that names their kernels."""

from __future__ import annotations

from types import ModuleType

from tgstore.svod.readers import capture, extract_ir, gpu_ir, linear, llvm_ir, test_log
from tgstore.svod.readers.model import Kernel, Problem, Stage, SvodLog, load_json, tree_stage
from tgstore.svod.readers.place import place_files
from tgstore.svod.readers.segment import Segmenter
from tgstore.svod.readers.sessions import Panic, TestPart, split_tests
from tgstore.svod.tree import TreeError, parse_tree

READERS: tuple[ModuleType, ...] = (gpu_ir, llvm_ir, linear, capture, extract_ir, test_log)


def reader_for(name: str, text: str) -> ModuleType:
    return next(reader for reader in READERS if reader.sniff(name, text))


def read_runs(files: list[tuple[str, str]]) -> list[SvodLog]:
    """The Svod runs in files (name, text) given together: one per libtest test of the logs (one when the logs
    hold no test), with the dump files placed on the run whose kernels they name. Raises
    sessions.InterleavedTests when tests run in libtest's threads cannot be told apart."""
    kinds = [(name, reader_for(name.rsplit("/", 1)[-1], text), text) for name, text in files]
    listing = [(name, reader.KIND, text) for name, reader, text in kinds]
    groups: dict[str | None, list[tuple[int, TestPart]]] = {}
    for index, (_name, reader, text) in enumerate(kinds):
        if reader is test_log:
            for part in split_tests(text):
                groups.setdefault(part.name, []).append((index, part))
    runs: list[tuple[SvodLog, Segmenter]] = []
    for test, parts in (groups or {None: []}).items():
        log = SvodLog(files=list(listing), test=test)
        log.panic = next((p.panic for _i, p in parts if p.panic), None)
        outcomes = [p.outcome for _i, p in parts]
        log.outcome = "FAILED" if "FAILED" in outcomes else outcomes[-1] if outcomes else None
        if test is not None:
            log.tests.append(test)
        tracker = Segmenter(log, test, failed=log.panic is not None or log.outcome == "FAILED")
        for index, part in parts:
            test_log.read_lines(log, tracker, index, part.lines)
            _check_end(log, index, part, kinds[index][2])
        runs.append((log, tracker))
    primary = next((log for log, t in runs if _has_output(log, t)), runs[0][0])
    for index, (name, reader, text) in enumerate(kinds):
        if reader is not test_log:
            reader.read(primary, next(t for log, t in runs if log is primary), index, name.rsplit("/", 1)[-1], text)
    for log, tracker in runs:
        tracker.finish()
        _fail(log)
    _place(primary, [log for log, _t in runs])
    return [log for log, _t in runs]


def _has_output(log: SvodLog, tracker: Segmenter) -> bool:
    return bool(log.events or log.schedule_stages or log.unplaced or tracker.opt or tracker.code)


def _check_end(log: SvodLog, file: int, part: TestPart, text: str) -> None:
    if part.name is not None and part.outcome is None:
        first = part.lines[0][0] if part.lines else 1
        log.problems.append(Problem(file, first, f"test {part.name} has no result line: the log ends inside it (a "
                                    "killed job or a cut log); what it printed is stored"))
    if text and not text.endswith("\n") and part.lines and part.lines[-1][0] == text.count("\n") + 1 \
            and part.lines[-1][1].startswith("{") and not _is_json(part.lines[-1][1]):
        log.problems.append(Problem(file, part.lines[-1][0], "the file ends mid-line (the job was killed or the log "
                                    "cut); the line is kept as text", part.lines[-1][1][:2000]))


def _is_json(line: str) -> bool:
    try:
        load_json(line)
        return True
    except ValueError:
        return False


def _fail(log: SvodLog) -> None:
    """A panic: the kernel it hit (the one whose tree the message holds, else, when kernels ran one at a time, the
    kernel of the last stage before it), that kernel's last stage, and the tree in the message as its last tree."""
    panic: Panic | None = log.panic
    if panic is None:
        return
    log.problems.append(Problem(next((i for i, (_n, kind, _t) in enumerate(log.files) if kind == "log"), 0),
                                panic.line, f"test {log.test or '(no test)'} panicked at {panic.location}: "
                                f"{panic.message.splitlines()[0] if panic.message else ''}"[:500]))
    tree = _panic_tree(log, panic)
    kernel: Kernel | None = None
    if tree is not None and tree.tree is not None:
        ids = set(tree.tree.nodes)
        overlap = [(len(ids & {i for s in k.stages if s.tree for i in s.tree.nodes}), k) for k in log.kernels]
        best = max((n for n, _k in overlap), default=0)
        owners = [k for n, k in overlap if n == best and n > 0]
        kernel = owners[0] if len(owners) == 1 else None
    if kernel is None and not log.unattributed:
        before = [(s.line, k) for k in log.kernels for s in k.stages if s.line < panic.line]
        kernel = max(before, key=lambda pair: pair[0])[1] if before else None
    if kernel is not None:
        reached = [s for s in kernel.stages if s.line < panic.line]
        log.failed_kernel = kernel.index
        log.last_stage = reached[-1].label if reached else None
        if tree is not None:
            kernel.stages.append(tree)
    elif tree is not None:
        log.unattributed.append(tree)


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


def _place(primary: SvodLog, runs: list[SvodLog]) -> None:
    """`.ll` files on the run that has a kernel of their name; LINEAR files with the logs' one run of kernels."""
    linear_files = primary.pending.get(linear.KIND, [])
    llvm_files = primary.pending.get(llvm_ir.KIND, [])
    gpu_files = primary.pending.get(gpu_ir.KIND, [])
    for log in runs:
        names = {k.name for k in log.kernels if k.name}
        mine = [f for f in llvm_files if f[1].removesuffix(".post.ll").removesuffix(".ll") in names]
        if log is primary:
            others = {k.name for other in runs if other is not log for k in other.kernels if k.name}
            mine = [f for f in llvm_files if f[1].removesuffix(".post.ll").removesuffix(".ll") not in others]
        place_files(log, linear_files if log is primary else [], mine)
        gpu_names = {k.name for k in log.kernels if k.name} if log is not primary else None
        gpu_ir.place(log, [f for f in gpu_files if gpu_names is None or gpu_ir.NAME.match(f[1]).group("kernel")
                           in gpu_names])


def read_files(files: list[tuple[str, str]]) -> SvodLog:
    """All runs of the files as one log (kernels renumbered, each keeping its test): for callers that look at
    everything read, not at runs."""
    runs = read_runs(files)
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
