"""Reading what Svod prints, one reader per format, into kernels and stages (no database here).

Formats (where each is defined in Svod's source; see ../shared/formats/svod-logs.md and docs/svod.md):
* test logs: JSON tracing events (tracing-subscriber's JSON formatter, `schedule/src/testing.rs`), one object per
  line, mixed with cargo's and libtest's own lines; `[per-stage] L : node_count=N` lines, `[dump-stage] L :` ...
  `[dump-stage] L : end` tree blocks and `[dump-canonical] S :` ... `: end` JSON blocks on stderr
  (`schedule/src/optimizer/mod.rs`, `ir/src/uop/canonical.rs`);
* `scripts/extract-ir.sh` output: `=====` section banners, `--- <message> [nodes=N] [Nms] ---` headers over trees;
* strict canonical capture files (`SVOD_CAPTURE_CANONICAL_PATH`): one pretty-printed document;
* `SVOD_DUMP_LINEAR` files `tree_<id>.txt`, `linear_<id>.txt` (`codegen/src/program_pipeline.rs`);
* `SVOD_DUMP_LLVM_IR` / `SVOD_DUMP_POST_O2_IR` files `<kernel>.ll`, `<kernel>.post.ll`.

Kernels are not marked in any of them. Per kernel Svod runs pre-optimization, then post-optimization, then codegen;
`kernel initial` (TRACE) is emitted twice per kernel, before each of the first two. `Segmenter` starts a kernel
when a pre-opt stage follows anything but pre-opt, when a post-opt stage follows nothing or codegen, and when a
second `00-initial` arrives for the current kernel. Nothing read is dropped: what is not a stage or an event is a
raw line, what is malformed is a problem with its line, and a tree that does not parse is kept as text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tgstore.svod.emission import code_place, place
from tgstore.svod.spelling import maps
from tgstore.svod.tree import Tree, TreeError, parse_tree

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
PER_STAGE = re.compile(r"^\[per-stage\] (?P<label>.+?) : node_count=(?P<count>\d+)\s*$")
DUMP = re.compile(r"^\[dump-(?P<kind>stage|canonical)\] (?P<label>.+?) :(?P<rest>.*)$")
TEST_LINE = re.compile(r"^test (?P<name>\S+) \.\.\. ?(?P<result>ok|FAILED|ignored|skipped)?(?P<tail>.*)$")
HEADER = re.compile(r"^--- (?P<message>.+?)(?: \[nodes=(?P<nodes>\d+)\])?(?: \[(?P<ms>\d+)ms\])? ---$")
KERNEL_BANNER = re.compile(r"^  KERNEL (\d+)$")
CODE_HEADER = re.compile(r"^--- (?:C KERNEL CODE|GENERATED CODE) \(kernel \d+\) ---$")
LINEAR_LINE = re.compile(r"^\[\s*(\d+)\] id=(\d+) Discriminant\((\d+)\) scope=\{[\d,]*\}$")
TREE_FIELDS = ("ast.initial", "ast.pre", "ast.optimized", "uop.tree", "tree")
CODE_FIELDS = {"generated_c": "c", "generated_code": "llvm"}


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


@dataclass
class Stage:
    label: str
    source: str  # event | per-stage | dump-stage | dump-canonical | extract-ir | capture | linear | llvm-ir
    file: int
    line: int
    node_count: int | None = None
    tree: Tree | None = None
    tree_text: str | None = None  # set when the text is not a tree (it is kept, with a problem)
    canonical: dict[str, Any] | None = None
    message: str | None = None
    elapsed_ms: int | None = None


@dataclass
class Kernel:
    index: int
    file: int
    line: int
    test: str | None = None
    name: str | None = None
    code: str | None = None
    code_kind: str | None = None
    stages: list[Stage] = field(default_factory=list)


@dataclass
class Problem:
    file: int
    line: int
    message: str
    text: str | None = None


@dataclass
class Event:
    file: int
    line: int
    record: dict[str, Any]


@dataclass
class SvodLog:
    files: list[tuple[str, str, str]] = field(default_factory=list)  # (path, kind, text)
    kernels: list[Kernel] = field(default_factory=list)
    schedule_stages: list[Stage] = field(default_factory=list)  # rangeify, tensor: before any kernel
    events: list[Event] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    raw_lines: int = 0
    tests: list[str] = field(default_factory=list)
    unplaced: list[Stage] = field(default_factory=list)  # stages no kernel or schedule can hold (with a problem)

    @property
    def stage_count(self) -> int:
        return len(self.schedule_stages) + len(self.unplaced) + sum(len(k.stages) for k in self.kernels)


def _message_labels() -> dict[str, str]:
    """tracing message -> stage label."""
    return {message: stage["label"] for stage in maps()["stages"] for message in stage.get("messages", [])}


class Segmenter:
    """Cuts what one program printed into the schedule and its kernels, by Svod's emission order
    (tgstore.svod.emission): within a kernel's optimization, and within a kernel's code generation, positions only
    grow, so a position that does not grow starts the next kernel. All kernels are optimized before any is compiled
    (`compile_missing_kernels`), so the n-th code-generation section belongs to the n-th optimized kernel. A new
    libtest test is a new program."""

    def __init__(self, log: SvodLog) -> None:
        self.log = log
        self.test: str | None = None
        self.labels = _message_labels()
        self._reset()

    def _reset(self) -> None:
        self.opt: list[Kernel] = []
        self.opt_last: int | None = None
        self.code: list[Kernel] = []  # code-generation sections, as kernels not yet paired
        self.code_last: int | None = None
        self.schedule_last: int | None = None

    def start_test(self, name: str) -> None:
        if name not in self.log.tests:
            self.log.tests.append(name)
        if name != self.test:
            self.finish()
            self.test = name

    def _kernel(self, file: int, line: int) -> Kernel:
        return Kernel(-1, file, line, self.test)

    def add(self, stage: Stage) -> None:
        label = stage.label
        if label == "kernel-initial-or-00":  # the first of a kernel, or its post-opt input (optimizer/mod.rs)
            opening = self.opt_last is None or not (0 <= self.opt_last < place("00-initial", "event").position)
            stage.label = label = "kernel-initial" if opening else "00-initial"
        where = place(label, stage.source)
        if where is None:
            self.log.problems.append(Problem(stage.file, stage.line, f"{stage.source} {label!r} is not a stage "
                                             "Svod's pipeline emits; kept apart from every kernel", None))
            self.log.unplaced.append(stage)
        elif where.phase == "schedule":
            self.schedule(stage, where.position)
        elif where.phase == "opt":
            if not self.opt or self.opt_last is None or where.position <= self.opt_last:
                self.opt.append(self._kernel(stage.file, stage.line))
            self.opt[-1].stages.append(stage)
            self.opt_last = where.position
        else:
            self._code_section(where.position, stage.file, stage.line).stages.append(stage)

    def _code_section(self, position: int, file: int, line: int) -> Kernel:
        if not self.code or self.code_last is None or position <= self.code_last:
            self.code.append(self._kernel(file, line))
        self.code_last = position
        return self.code[-1]

    def schedule(self, stage: Stage, position: int | None = None) -> None:
        if position is not None and self.schedule_last is not None and position <= self.schedule_last \
                and (self.opt or self.code):
            self.log.problems.append(Problem(stage.file, stage.line, f"{stage.label!r} of a second schedule (the "
                                             "program realizes more than once): stored with the first schedule's "
                                             "stages; compare one realize per log", None))
        if position is not None:
            self.schedule_last = position
        self.log.schedule_stages.append(stage)

    def code_text(self, text: str, kind: str, file: int, line: int) -> None:
        section = self._code_section(code_place("code").position, file, line)
        section.code, section.code_kind = text, kind
        section.name = kernel_name_of(text)

    def code_name(self, name: str, file: int, line: int) -> None:
        """A runtime event naming the kernel it compiles (`kernel.name`), after its code was rendered."""
        section = self._code_section(code_place("llvm-ir").position, file, line)
        section.name = section.name or name

    def finish(self) -> None:
        """Pair the program's optimized kernels with its code-generation sections, in order, and file them."""
        opt, code = self.opt, self.code
        if opt and code and len(opt) != len(code):
            first = code[min(len(opt), len(code)) - 1]
            self.log.problems.append(Problem(first.file, first.line, f"{len(opt)} kernels were optimized but "
                                             f"{len(code)} were compiled{f' in test {self.test}' if self.test else ''}"
                                             ": code paired with kernels by order, which may be wrong", None))
        self._check_alike(opt)
        for i in range(max(len(opt), len(code))):
            kernel = opt[i] if i < len(opt) else code[i]
            if i < len(opt) and i < len(code):
                section = code[i]
                kernel.stages += section.stages
                kernel.code, kernel.code_kind, kernel.name = section.code, section.code_kind, section.name
            kernel.index = len(self.log.kernels)
            self.log.kernels.append(kernel)
        self._reset()

    def _check_alike(self, kernels: list[Kernel]) -> None:
        """Every kernel of a run went through the same switches, so it prints the same kinds of stage; one that
        does not means kernels were optimized in parallel and their output interleaved (SVOD_THREADS > 1)."""
        kinds = [{(s.label, s.source) for s in k.stages} for k in kernels]
        every = set().union(*kinds) if kinds else set()
        for kernel, have in zip(kernels, kinds, strict=True):
            missing = every - have
            if missing:
                shown = ", ".join(f"{label} ({source})" for label, source in sorted(missing)[:4])
                self.log.problems.append(Problem(kernel.file, kernel.line, f"this kernel lacks {len(missing)} stages "
                                                 f"other kernels of the run have ({shown}): kernels optimized in "
                                                 "parallel interleave their output; run with SVOD_THREADS=1", None))


def kernel_name_of(code: str) -> str | None:
    """The kernel's function name in generated code (LLVM `define ... @name(`, `; ModuleID = 'name'`, C `void
    name(`, Metal `kernel void name(`)."""
    for pattern in (r"^define [^@\n]*@([\w.$]+)\(", r"^; ModuleID = '([^']+)'", r"^(?:kernel |extern \"C\" )?void "
                    r"([A-Za-z_]\w*)\(", r"\bvoid ([A-Za-z_]\w*)\("):
        m = re.search(pattern, code, re.M)
        if m:
            return m.group(1)
    return None


def tree_stage(stage: Stage, text: str, log: SvodLog, first_line: int) -> Stage:
    """Parse `text` into the stage's tree; a text that is not a tree is kept, with a problem at its line."""
    try:
        stage.tree = parse_tree(text)
        if stage.node_count is None:
            stage.node_count = stage.tree.node_count
    except TreeError as e:
        stage.tree_text = text
        log.problems.append(Problem(stage.file, first_line + e.line, f"tree of {stage.label!r} kept as text: {e}",
                                    text.split("\n")[e.line] if e.line < len(text.split("\n")) else None))
    return stage


# ------------------------------------------------------------------------------------------------- test logs


MAX_JSON_DEPTH = 200  # deeper JSON is refused as a problem of its line, not a RecursionError later
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(text: str) -> Any:
    """json.loads, but nesting is bounded and NaN/Infinity refused (ValueError for both): what is stored as JSON
    stays valid JSON, and no reader recurses without bound."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > MAX_JSON_DEPTH:
                raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None


def read_log(log: SvodLog, tracker: Segmenter, file: int, text: str) -> None:
    lines = text.split("\n")
    n = 0
    while n < len(lines):
        line_no, raw = n + 1, lines[n]
        line = strip_ansi(raw).rstrip("\r")
        n += 1
        if not line.strip():
            continue
        test = TEST_LINE.match(line)
        if test:
            if test.group("result"):  # `test x ... ok`: a result (after the test's output when tests run in parallel)
                if test.group("name") not in log.tests:
                    log.tests.append(test.group("name"))
                continue
            tracker.start_test(test.group("name"))  # `test x ... ` before its output: --test-threads=1
            tail = test.group("tail").strip()
            if tail:  # the test's first output line (JSON or stderr) follows the marker on the same line
                lines[n - 1] = tail
                n -= 1
            continue
        if line.startswith("{"):
            _event(log, tracker, file, line_no, line)
            continue
        m = PER_STAGE.match(line)
        if m:
            tracker.add(Stage(m.group("label"), "per-stage", file, line_no, node_count=int(m.group("count"))))
            continue
        m = DUMP.match(line)
        if m and not m.group("rest").strip():
            n = _dump_block(log, tracker, file, lines, n, m.group("kind"), m.group("label"))
            continue
        if m:  # `[dump-canonical] S : JSON error: ...` and the like
            log.problems.append(Problem(file, line_no, f"Svod could not dump {m.group('label')!r}:"
                                        f"{m.group('rest')}", line))
            continue
        log.raw_lines += 1


def _dump_block(log: SvodLog, tracker: Segmenter, file: int, lines: list[str], n: int, kind: str,
                label: str) -> int:
    """Read a [dump-stage]/[dump-canonical] block whose opening line was lines[n-1]; returns the next index."""
    start = n
    end_marker = f"[dump-{kind}] {label} : end"
    body: list[str] = []
    while n < len(lines) and strip_ansi(lines[n]).rstrip("\r") != end_marker:
        body.append(lines[n].rstrip("\r"))
        n += 1
    closed = n < len(lines)
    if not closed:
        log.problems.append(Problem(file, start, f"[dump-{kind}] {label} is never closed (no '{end_marker}'); "
                                    "its text is kept", None))
    text = "\n".join(body).strip("\n") + "\n"
    if kind == "stage":
        stage = Stage(label, "dump-stage", file, start)
        if closed:
            tree_stage(stage, text, log, start + 1)
        else:
            stage.tree_text = text
        tracker.add(stage)
    else:
        stage = Stage(label, "dump-canonical", file, start)
        try:
            stage.canonical = load_json(text)
        except ValueError as e:
            stage.tree_text = text
            log.problems.append(Problem(file, start + 1, f"canonical dump {label!r} is not JSON ({e}); kept as text"))
        tracker.add(stage)
    return n + 1 if closed else n


def _event(log: SvodLog, tracker: Segmenter, file: int, line_no: int, line: str) -> None:
    try:
        record = load_json(line)
    except ValueError as e:
        where = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        log.problems.append(Problem(file, line_no, f"not a JSON tracing event ({where})", line[:2000]))
        return
    if not isinstance(record, dict) or not isinstance(record.get("fields"), dict):
        log.problems.append(Problem(file, line_no, "a JSON line without the tracing `fields` object", line))
        return
    log.events.append(Event(file, line_no, record))
    fields = record["fields"]
    message = str(fields.get("message", ""))
    for key, kind in CODE_FIELDS.items():
        if isinstance(fields.get(key), str):
            tracker.code_text(fields[key], kind, file, line_no)
            return
    if "kernel.name" in fields and isinstance(fields["kernel.name"], str):
        tracker.code_name(fields["kernel.name"], file, line_no)
        return
    tree_field = next((f for f in TREE_FIELDS if isinstance(fields.get(f), str)), None)
    label = "kernel-initial-or-00" if message == "kernel initial" else tracker.labels.get(message)
    if tree_field is None and label is None:
        return
    stage = Stage(label or message, "event", file, line_no, message=message,
                  node_count=fields.get("node_count") if isinstance(fields.get("node_count"), int) else None,
                  elapsed_ms=fields.get("elapsed_ms") if isinstance(fields.get("elapsed_ms"), int) else None)
    if tree_field is not None:
        tree_stage(stage, fields[tree_field], log, line_no)
    if label is None and tree_field in ("uop.tree", "tree"):  # a rangeify/kernel-split tree tgstore has no label for
        tracker.schedule(stage)
    elif label is None:
        log.problems.append(Problem(file, line_no, f"an event with a tree but a message Svod's optimizer does not "
                                    f"emit ({message!r}); kept apart from every kernel", None))
        log.unplaced.append(stage)
    else:
        tracker.add(stage)


# ------------------------------------------------------------------------------------------------- extract-ir.sh


def read_extract_ir(log: SvodLog, tracker: Segmenter, file: int, text: str) -> None:
    """extract-ir.sh's collated file: the same events, folded into `--- message ---` sections."""
    lines = text.split("\n")
    n = 0
    in_kernel = False
    while n < len(lines):
        line = lines[n].rstrip("\r")
        n += 1
        if not line.strip() or set(line.strip()) == {"="}:
            continue
        if KERNEL_BANNER.match(line):
            in_kernel = True
            continue
        if line.strip() == "--- post-optimization ---" or line.strip().startswith("RANGEIFY PHASE"):
            continue
        if CODE_HEADER.match(line):
            start, body = n, []
            while n < len(lines) and not lines[n].startswith(("--- ", "=====")):
                body.append(lines[n])
                n += 1
            tracker.code_text("\n".join(body).strip("\n") + "\n", "c" if "C KERNEL" in line else "llvm", file,
                              start)
            continue
        m = HEADER.match(line)
        if not m:
            log.problems.append(Problem(file, n, "not an extract-ir.sh line", line))
            continue
        start, body = n, []
        while n < len(lines) and not lines[n].startswith(("--- ", "=====", "  KERNEL", "  --- ")):
            body.append(lines[n].rstrip("\r"))
            n += 1
        message = m.group("message")
        if message == "INITIAL: kernel input":
            message = "kernel initial"
        label = "kernel-initial-or-00" if message == "kernel initial" else tracker.labels.get(message)
        stage = Stage(label or message, "extract-ir", file, start, message=message,
                      node_count=int(m.group("nodes")) if m.group("nodes") else None,
                      elapsed_ms=int(m.group("ms")) if m.group("ms") else None)
        tree_text = "\n".join(body).strip("\n")
        if tree_text:
            tree_stage(stage, tree_text + "\n", log, start + 1)
        if label is None and not in_kernel:
            tracker.schedule(stage)
        elif label is None:
            log.problems.append(Problem(file, start, f"section {message!r} is not a stage tgstore knows; kept apart "
                                        "from every kernel", None))
            log.unplaced.append(stage)
        else:
            tracker.add(stage)


# ------------------------------------------------------------------------------------------------- files


def read_linear_dump(log: SvodLog, file: int, text: str, name: str) -> Stage:
    """tree_<id>.txt / linear_<id>.txt: one line per UOp, its op as `Discriminant(N)` (not a name)."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    for n, line in enumerate(lines, start=1):
        if not LINEAR_LINE.match(line):
            log.problems.append(Problem(file, n, "not a SVOD_DUMP_LINEAR line", line))
    kind = name.split("_", 1)[0]
    return Stage("linear" if kind == "linear" else "linear-tree", "linear", file, 1, node_count=len(lines),
                 tree_text=text, message=name)


def read_capture(tracker: Segmenter, file: int, document: dict[str, Any]) -> None:
    tracker.add(Stage(str(document.get("stage")), "capture", file, 1, canonical=document))


def place_files(log: SvodLog, linear: list[tuple[int, str, str]], llvm: list[tuple[int, str, str]]) -> None:
    """SVOD_DUMP_LINEAR and SVOD_DUMP_LLVM_IR files of the same run as the log(s): an `.ll` file goes to the kernel
    of its name; LINEAR files (named by the id of the kernel's sink, allocated in compile order) go to the kernels
    in order when there are as many ids as kernels. With no kernel in the logs each file is a kernel of its own."""
    from_logs = bool(log.kernels)
    for file, name, text in llvm:
        kernel_name = name.removesuffix(".post.ll").removesuffix(".ll")
        kernel = next((k for k in log.kernels if k.name == kernel_name), None)
        if kernel is None and from_logs:
            log.problems.append(Problem(file, 1, f"{name}: no kernel named {kernel_name!r} in the log (a log without "
                                        "generated code names no kernel: add svod_codegen=trace to RUST_LOG); the file "
                                        "is kept, not placed", None))
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


def classify(name: str, text: str) -> str:
    """log | extract-ir | capture | linear | llvm-ir"""
    if name.endswith(".ll"):
        return "llvm-ir"
    if re.fullmatch(r"(tree|linear)_\d+\.txt", name):
        return "linear"
    stripped = text.lstrip()
    if stripped.startswith("{") and not stripped.startswith('{"timestamp"'):
        try:
            document = load_json(stripped)
            if isinstance(document, dict) and "schema_version" in document:
                return "capture"
        except ValueError:
            pass
    if re.search(r"^={60}$", text, re.M) and re.search(r"^--- .* ---$", text, re.M) \
            and not re.search(r'^\{"timestamp"', text, re.M):
        return "extract-ir"
    return "log"


def read_files(files: list[tuple[str, str]]) -> SvodLog:
    """Read files (name, text) that belong to one Svod run: its log(s) in order, then its dump files."""
    log = SvodLog()
    tracker = Segmenter(log)
    linear: list[tuple[int, str, str]] = []
    llvm: list[tuple[int, str, str]] = []
    for index, (name, text) in enumerate(files):
        base = name.rsplit("/", 1)[-1]
        kind = classify(base, text)
        log.files.append((name, kind, text))
        if kind == "log":
            read_log(log, tracker, index, text)
        elif kind == "extract-ir":
            read_extract_ir(log, tracker, index, text)
        elif kind == "capture":
            read_capture(tracker, index, load_json(text))
        elif kind == "linear":
            linear.append((index, base, text))
        else:
            llvm.append((index, base, text))
    tracker.finish()
    place_files(log, linear, llvm)
    backends = {t.rsplit("::", 1)[-1] for t in log.tests if "::" in t}
    if len(backends) > 1 and not any(k.test for k in log.kernels):
        log.problems.append(Problem(0, 0, f"the log holds tests of {len(backends)} backends "
                                    f"({', '.join(sorted(backends))}) run in parallel: their kernels cannot be told "
                                    "apart; run one backend, or --test-threads=1"))
    return log
