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
`kernel initial` (TRACE) is emitted twice per kernel, before each of the first two. `KernelTracker` starts a kernel
when a pre-opt stage follows anything but pre-opt, when a post-opt stage follows nothing or codegen, and when a
second `00-initial` arrives for the current kernel. Nothing read is dropped: what is not a stage or an event is a
raw line, what is malformed is a problem with its line, and a tree that does not parse is kept as text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

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
POST_LABEL = re.compile(r"^(0\d|1\d|20)[a-z]?-")
SCHEDULE_CANONICAL = {"tensor", "pre_multi", "post_multi", "rangeified", "scheduled"}


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

    @property
    def stage_count(self) -> int:
        return len(self.schedule_stages) + sum(len(k.stages) for k in self.kernels)


def _message_labels() -> dict[str, tuple[str, str]]:
    """tracing message -> (stage label, scope)."""
    found = {}
    for stage in maps()["stages"]:
        for message in stage.get("messages", []):
            found[message] = (stage["label"], stage["scope"])
    return found


PRE_LABELS = {"pre-movement", "pre-load-collapse", "pre-split-ranges", "pre-symbolic", "pre-simplify-ranges"}


class KernelTracker:
    """Assigns stages to kernels as they are read (see the module docstring for the rules)."""

    def __init__(self, log: SvodLog) -> None:
        self.log = log
        self.phase: str | None = None  # None | pre | post | code
        self.test: str | None = None
        self.pending_asts: list[Stage] = []  # kernel_ast canonical dumps, made at the kernel cut, before any kernel
        self.labels = _message_labels()

    @property
    def current(self) -> Kernel | None:
        return self.log.kernels[-1] if self.log.kernels else None

    def new_kernel(self, file: int, line: int) -> Kernel:
        kernel = Kernel(len(self.log.kernels), file, line, self.test)
        self.log.kernels.append(kernel)
        if self.pending_asts:
            kernel.stages.append(self.pending_asts.pop(0))
        return kernel

    def start_test(self, name: str) -> None:
        if name not in self.log.tests:
            self.log.tests.append(name)
        if name != self.test:
            self.test, self.phase = name, None

    def add(self, stage: Stage) -> None:
        label = stage.label
        if stage.source == "dump-canonical" and label in SCHEDULE_CANONICAL:
            self.log.schedule_stages.append(stage)
            return
        if stage.source == "dump-canonical" and label == "kernel_ast":
            self.pending_asts.append(stage)
            return
        kernel = self.current
        if label == "kernel-initial-or-00":  # a `kernel initial` event: the first of a kernel or its post-opt input
            if self.phase == "pre" and kernel is not None:
                stage.label, self.phase = "00-initial", "post"
            else:
                kernel, stage.label, self.phase = self.new_kernel(stage.file, stage.line), "kernel-initial", "pre"
        elif label in PRE_LABELS:
            if self.phase != "pre" or kernel is None:
                kernel = self.new_kernel(stage.file, stage.line)
            self.phase = "pre"
        elif label == "00-initial" or POST_LABEL.match(label) or label in ("optimized", "postrange", "expanded",
                                                                            "coalesced", "gated"):
            again = label == "00-initial" and kernel is not None and any(
                s.label == "00-initial" and s.source == stage.source for s in kernel.stages)
            if kernel is None or self.phase in (None, "code") or again:
                kernel = self.new_kernel(stage.file, stage.line)
            self.phase = "post"
        elif kernel is None:
            kernel = self.new_kernel(stage.file, stage.line)
        kernel.stages.append(stage)

    def schedule(self, stage: Stage) -> None:
        self.log.schedule_stages.append(stage)

    def code(self, text: str, kind: str, file: int, line: int) -> None:
        kernel = self.current if self.current is not None and self.phase != "code" else None
        if kernel is None or kernel.code is not None:
            kernel = self.new_kernel(file, line)
        kernel.code, kernel.code_kind = text, kind
        kernel.name = kernel.name or kernel_name_of(text)
        self.phase = "code"


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


def read_log(log: SvodLog, tracker: KernelTracker, file: int, text: str) -> None:
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
            if tail.startswith("{"):  # the test's first JSON line follows the marker on the same line
                _event(log, tracker, file, line_no, tail)
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


def _dump_block(log: SvodLog, tracker: KernelTracker, file: int, lines: list[str], n: int, kind: str,
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


def _event(log: SvodLog, tracker: KernelTracker, file: int, line_no: int, line: str) -> None:
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
            tracker.code(fields[key], kind, file, line_no)
            return
    if "kernel.name" in fields and tracker.current is not None and not tracker.current.name:
        tracker.current.name = str(fields["kernel.name"])
    tree_field = next((f for f in TREE_FIELDS if isinstance(fields.get(f), str)), None)
    label, scope = tracker.labels.get(message, (None, None))
    if message == "kernel initial":
        label, scope = "kernel-initial-or-00", "lower"
    if tree_field is None and label is None:
        return
    stage = Stage(label or message, "event", file, line_no, message=message,
                  node_count=fields.get("node_count") if isinstance(fields.get("node_count"), int) else None,
                  elapsed_ms=fields.get("elapsed_ms") if isinstance(fields.get("elapsed_ms"), int) else None)
    if tree_field is not None:
        tree_stage(stage, fields[tree_field], log, line_no)
    if scope == "schedule" or (label is None and tree_field in ("uop.tree", "tree")):
        tracker.schedule(stage)
    else:
        tracker.add(stage)


# ------------------------------------------------------------------------------------------------- extract-ir.sh


def read_extract_ir(log: SvodLog, tracker: KernelTracker, file: int, text: str) -> None:
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
            tracker.code("\n".join(body).strip("\n") + "\n", "c" if "C KERNEL" in line else "llvm", file, start)
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
        label, scope = tracker.labels.get(message, (None, None))
        if message == "kernel initial":
            label, scope = "kernel-initial-or-00", "lower"
        stage = Stage(label or message, "extract-ir", file, start, message=message,
                      node_count=int(m.group("nodes")) if m.group("nodes") else None,
                      elapsed_ms=int(m.group("ms")) if m.group("ms") else None)
        tree_text = "\n".join(body).strip("\n")
        if tree_text:
            tree_stage(stage, tree_text + "\n", log, start + 1)
        if scope == "schedule" or (label is None and not in_kernel):
            tracker.schedule(stage)
        else:
            tracker.add(stage)


# ------------------------------------------------------------------------------------------------- files


def read_linear_dump(log: SvodLog, tracker: KernelTracker, file: int, text: str, name: str) -> None:
    """tree_<id>.txt / linear_<id>.txt: one line per UOp, its op as `Discriminant(N)` (not a name)."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    for n, line in enumerate(lines, start=1):
        if not LINEAR_LINE.match(line):
            log.problems.append(Problem(file, n, "not a SVOD_DUMP_LINEAR line", line))
    kind, sink = name.split("_", 1)
    sink_id = sink.split(".")[0]
    kernel = next((k for k in log.kernels if k.test == f"linear:{sink_id}"), None)
    if kernel is None:
        kernel = Kernel(len(log.kernels), file, 1, f"linear:{sink_id}")
        log.kernels.append(kernel)
    kernel.stages.append(Stage("linear" if kind == "linear" else "linear-tree", "linear", file, 1,
                               node_count=len(lines), tree_text=text))


def read_llvm_ir(log: SvodLog, file: int, text: str, name: str) -> None:
    post = name.endswith(".post.ll")
    kernel_name = name.removesuffix(".post.ll").removesuffix(".ll")
    kernel = next((k for k in log.kernels if k.name == kernel_name), None)
    if kernel is None:
        kernel = Kernel(len(log.kernels), file, 1, name=kernel_name)
        log.kernels.append(kernel)
    if post:
        kernel.stages.append(Stage("llvm-ir-post-o2", "llvm-ir", file, 1, tree_text=text))
    else:
        kernel.code, kernel.code_kind = text, "llvm"
        kernel.name = kernel_name_of(text) or kernel_name


def read_capture(log: SvodLog, tracker: KernelTracker, file: int, document: dict[str, Any]) -> None:
    stage = Stage(str(document.get("stage")), "capture", file, 1, canonical=document)
    if stage.label in SCHEDULE_CANONICAL:
        log.schedule_stages.append(stage)
    else:
        (tracker.current or tracker.new_kernel(file, 1)).stages.append(stage)


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
    """Read files (name, text) that belong to one Svod run, in order."""
    log = SvodLog()
    tracker = KernelTracker(log)
    for index, (name, text) in enumerate(files):
        kind = classify(name.rsplit("/", 1)[-1], text)
        log.files.append((name, kind, text))
        base = name.rsplit("/", 1)[-1]
        if kind == "log":
            read_log(log, tracker, index, text)
        elif kind == "extract-ir":
            read_extract_ir(log, tracker, index, text)
        elif kind == "capture":
            read_capture(log, tracker, index, load_json(text))
        elif kind == "linear":
            read_linear_dump(log, tracker, index, text, base)
        else:
            read_llvm_ir(log, index, text, base)
    if tracker.pending_asts:
        for stage in tracker.pending_asts:
            log.problems.append(Problem(stage.file, stage.line, "a kernel_ast canonical dump with no kernel after it"))
        log.schedule_stages += tracker.pending_asts
    backends = {t.rsplit("::", 1)[-1] for t in log.tests if "::" in t}
    if len(backends) > 1 and not any(k.test for k in log.kernels):
        log.problems.append(Problem(0, 0, f"the log holds tests of {len(backends)} backends "
                                    f"({', '.join(sorted(backends))}) run in parallel: their kernels cannot be told "
                                    "apart; run one backend, or --test-threads=1"))
    return log
