"""Svod programs as Svod's code prints them under its default thread count: a generator of random logs, with the truth
of which kernel printed each line, for the property test of the reader (tests/test_svod_concurrency.py).

Modelled from Svod's source (npatsakula/svod at 3e06443b463c0ad45124ec0214be4d6166821082 unless said; facts, not
code):
* node ids (`ir/src/uop/hash_consing.rs`, read in npatsakula/svod's copy and npatsakula/morok@0b3ec686): one
  process-wide `UOP_ID_COUNTER` and one global table of live UOps keyed by (op, dtype, arg, source ids); building a
  UOp equal to a live one returns that one, from any thread. So kernels share the ids of identical sub-graphs, a pass
  keeps the ids of the nodes it does not touch, and threads allocate new ids in the order their work interleaves.
* `tensor/src/realize.rs` `compile_missing_kernels`: every distinct kernel is optimized (`map_on_threads`: inline
  when `SVOD_THREADS` is 1, rayon otherwise; the default is `thread_budget()`, `schedule/src/optimizer/config.rs`),
  then named in schedule order (`finalize_kernel_name`: `KERNEL_NAME_COUNTS`, `schedule/src/optimizer/scheduler.rs`,
  the n-th kernel of a name gets `n{n-1}`), then compiled on those threads again.
* `schedule/src/optimizer/mod.rs`: `apply_pre_optimization` (TRACE `kernel initial`, five DEBUG `pre-opt:` events),
  `dump_canonical_stage("optimized")`, `("postrange")`, `apply_post_optimization_configured_with_capture` (TRACE
  `kernel initial` again, `print_stage("00-initial")`, then per stage a DEBUG event and `print_stage`, canonical
  `expanded`/`coalesced`/`gated` after 09/17-bottom_up/19e and `final_rewrite` at the end). `print_stage` is
  `eprintln!("[per-stage] {} : node_count={}")` and three `eprintln!`s for a dump.
* tracing's JSON formatter (`schedule/src/testing.rs`, `with_test_writer()`): one `print!` per event, whole on its
  line. Rust's `eprintln!` writes each piece of its format string to unbuffered stderr separately; the stderr lock
  keeps other `eprintln!`s out but not stdout, so an event can land between two pieces.
* code generation: canonical `program` (`program_from_sink`), `linearized` (`do_linearize`), TRACE `llvm codegen:
  final generated code` (`svod_codegen::llvm::text`), the runtime's DEBUG `Compiling LLVM IR` with `kernel.name`.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field

from svod_fixtures import OPT, POST, PRE

AFTER = {"09-pre_expand": "expanded", "17-bottom_up_ew_image": "coalesced", "19e-move_gates_from_index": "gated"}
SHAPES = [(8, 64), (16, 32), (4, 16), (8, 8)]
ALU = ["Add", "Mul", "Max"]


@dataclass(frozen=True)
class Switches:
    rust_log: str  # "trace" | "debug" | "none": the optimizer's level
    codegen: bool  # svod_codegen=trace (generated code, named)
    per_stage: bool
    dump_stage: str | None
    canonical: str | None
    threads: int
    patterns: int = 0  # RUST_LOG=svod_ir::pattern::simplified=trace: `pattern matched` events per stage's rewrite

    def describe(self) -> str:
        return (f"RUST_LOG=optimizer:{self.rust_log}{',codegen' if self.codegen else ''} per_stage={self.per_stage} "
                f"dump={self.dump_stage!r} canonical={self.canonical!r} SVOD_THREADS={self.threads}")


class Interner:
    """Svod's hash-consing: a structure equal to one built before (by any kernel) is that node, with its id."""

    def __init__(self, start: int) -> None:
        self.next = start
        self.ids: dict[tuple, int] = {}
        self.texts: dict[tuple, tuple[str, int]] = {}
        self.heads: dict[tuple, str] = {}  # a node's line after its tree prefix

    def intern(self, node: tuple) -> int:
        found = self.ids.get(node)
        if found is not None:
            return found
        for child in node[3]:
            self.intern(child)
        found = self.ids[node] = self.next
        self.next += 1
        return found

    def tree(self, root: tuple) -> tuple[str, int]:
        """`UOp::tree()` (ir/src/uop/tree.rs) of an interned graph, and its node count."""
        cached = self.texts.get(root)
        if cached is None:
            lines: list[str] = []
            seen: set[int] = set()
            self._lines(root, "", "", seen, lines)
            cached = self.texts[root] = ("\n".join(lines) + "\n", len(seen))
        return cached

    def _lines(self, node: tuple, lead: str, branch: str, seen: set[int], out: list[str]) -> None:
        nid = self.ids[node]
        if nid in seen:
            out.append(f"{lead}{branch}[{nid}] → (see above)")
            return
        seen.add(nid)
        head = self.heads.get(node)
        if head is None:
            op, dtype, arg, children = node
            if op == "REDUCE":
                arg = f"{arg}, ranges=[{', '.join(str(self.ids[c]) for c in children[1:])}]"
            label = f"{op}({arg})" if arg else op
            head = self.heads[node] = f"[{nid}] {label} : {dtype}{'' if op == 'SINK[KERNEL]' else ' shape=[]'}"
        out.append(lead + branch + head)
        children = node[3]
        if children:
            child_lead = lead + ("" if not branch else "│   " if branch == "├── " else "    ")
            for child in children[:-1]:
                self._lines(child, child_lead, "├── ", seen, out)
            self._lines(children[-1], child_lead, "└── ", seen, out)


class UOp(tuple):
    """A graph node (op, dtype, arg, sources), made once per structure by `uop` (as Svod's table does): equal
    structures are the same object, so a node hashes and compares by identity, not by walking its sub-graph."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other


_MADE: dict[tuple, UOp] = {}


def uop(op: str, dtype: str, arg: str, src: tuple = ()) -> UOp:
    key = (op, dtype, arg, tuple(map(id, src)))
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = UOp((op, dtype, arg, tuple(src)))
    return made


def const(value: int, dtype: str = "Scalar(WeakInt)") -> UOp:
    return uop("CONST", dtype, f"Int({value})")


@dataclass
class KernelPlan:
    """One kernel of the program: its AST and the graph after each of its stages (a structure; ids come later)."""

    index: int  # its place in the schedule
    bare: str
    stages: list[tuple[str, str, tuple]] = field(default_factory=list)  # (label, message, graph) in print order
    name: str = ""  # its final name, given in schedule order


def plan_kernel(index: int, shape: tuple[int, int], alu: str, c: int, rng: random.Random, depth: int = 0,
                change: float = 0.5) -> KernelPlan:
    """A reduce kernel as rangeify cuts it, and its graphs through Svod's passes: a pass that changes something
    (with probability `change`) rebuilds the path to the root (new nodes), the rest keeps its nodes. `depth` more
    elementwise ops before the reduce make a bigger kernel (the bench's)."""
    m, n = shape
    p0 = uop("PARAM", "Scalar(Float32)", "slot=0", (const(m),))
    p1 = uop("PARAM", "Scalar(Float32)", "slot=1", (const(m * n),))
    r1 = uop("RANGE", "Scalar(WeakInt)", "R1, Weak", (const(m),))
    r0 = uop("RANGE", "Scalar(WeakInt)", "R0, Reduce", (const(n),))
    r0a = uop("RANGE", "Scalar(WeakInt)", "R0, Reduce", (const(n // 4),))
    r2 = uop("RANGE", "Scalar(WeakInt)", "R2, Unroll", (const(4),))

    def loaded(reduce_index: tuple) -> tuple:
        at = uop("Add", "Scalar(WeakInt)", "", (uop("Mul", "Scalar(WeakInt)", "", (r1, const(n))), reduce_index))
        load = uop("INDEX", "Scalar(Float32)", "", (p1, at))
        value = uop(alu, "Scalar(Float32)", "", (load, uop("CONST", "Scalar(Float32)", f"Float({c}.0)")))
        for d in range(depth):
            value = uop(ALU[d % 3], "Scalar(Float32)", "", (value, uop("CONST", "Scalar(Float32)",
                                                                          f"Float({c + d}.5)")))
        return value

    value = loaded(r0)
    # the optimizer's UPCAST/UNROLL of the reduce axis by 4: R0 becomes R0' * 4 + R2 (its name is these ranges)
    value_opt = loaded(uop("Add", "Scalar(WeakInt)", "", (uop("Mul", "Scalar(WeakInt)", "", (r0a, const(4))), r2)))
    out = uop("INDEX", "Scalar(Float32)", "", (p0, r1))

    def sink(val: tuple, ranges: tuple = (r0,), marks: tuple = ()) -> tuple:
        red = uop("REDUCE", "Scalar(Float32)", f"Add, num_axes={len(ranges) - 1}", (val, *ranges))
        top = red
        for mark in marks:
            top = uop(mark[0], "Scalar(Float32)", "", (top, const(mark[1], "Scalar(Int32)")))
        store = uop("STORE", "Scalar(Void)", "", (out, top))
        return uop("SINK[KERNEL]", "Scalar(Void)", "", (uop("END", "Scalar(Void)", "", (store, r1)),))

    plan = KernelPlan(index, f"r_{m}_{n // 4}_4")
    graph = sink(value)
    plan.stages.append(("kernel-initial", "kernel initial", graph))
    marks: tuple = ()
    for step, message in enumerate(PRE):
        if rng.random() < 0.8 * change:
            marks = ((ALU[step % 3], 100 + step),)
            graph = sink(value, marks=marks)
        plan.stages.append((f"pre-{step}", message, graph))
    optimized = sink(value_opt, (r0a, r2), marks)
    plan.stages.append(("00-initial", "kernel initial", optimized))
    graph = optimized
    for step, (label, message) in enumerate(POST):
        if rng.random() < change:
            marks = ((ALU[step % 3], 200 + step),)
            graph = sink(value_opt, (r0a, r2), marks)
        plan.stages.append((label, message, graph))
    return plan


def plan_program(rng: random.Random, kernels: int, depth: int = 0, change: float = 0.5) -> list[KernelPlan]:
    """`kernels` distinct kernels (distinct ASTs: the jobs `compile_missing_kernels` deduplicates by content), some of
    one shape (one bare name), named in schedule order with the process-wide counter, maybe already advanced by
    earlier tests of the process."""
    combos = [(s, a, c) for s in SHAPES for a in ALU for c in range(1, 4 + kernels // 12)]
    chosen = rng.sample(combos, kernels)
    plans = [plan_kernel(i, shape, alu, c, rng, depth, change) for i, (shape, alu, c) in enumerate(chosen)]
    # sorted: a set of strings iterates in the process's hash order, and the seed must give the same log everywhere
    counts: dict[str, int] = {bare: rng.choice([0, 0, 1, 2]) for bare in sorted({p.bare for p in plans})}
    for plan in plans:
        counts[plan.bare] += 1
        plan.name = plan.bare if counts[plan.bare] == 1 else f"{plan.bare}n{counts[plan.bare] - 1}"
    return plans


@dataclass
class Truth:
    kernels: list[str]  # final names in schedule order
    stages: dict[tuple[int, str], int]  # (line, source) -> schedule index, for every stage printed
    per_stage: dict[int, tuple[str, int]]  # line -> (label, count) of every [per-stage] line
    events: set[int]  # the line of every JSON event
    threads: int
    blocks: list[dict] = field(default_factory=list)  # every [dump-stage] block: kernel, label, header, tree, end lines
    level: str = "trace"  # the optimizer's RUST_LOG level: "trace" | "debug" | "none"


class Printer:
    """The file both streams write into, in the order the writes happen (each write with its stream, `out` or
    `err`); each write's first line is recorded."""

    def __init__(self, first_line: int) -> None:
        self.parts: list[str] = []
        self.streams: list[str] = []
        self.line = first_line

    def write(self, text: str, stream: str = "out") -> int:
        at = self.line
        self.parts.append(text)
        self.streams.append(stream)
        self.line += text.count("\n")
        return at

    def text(self, stream: str | None = None) -> str:
        return "".join(t for t, s in zip(self.parts, self.streams, strict=True) if stream in (None, s))


def _event(clock: list[int], level: str, target: str, message: str, **fields: object) -> str:
    clock[0] += 137
    stamp = f"2026-05-07T18:07:{43 + clock[0] // 1_000_000:02d}.{clock[0] % 1_000_000:06d}Z"
    return _JSON.encode({"timestamp": stamp, "level": level, "fields": {"message": message, **fields},
                         "target": target}) + "\n"


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # tracing's JSON: compact, UTF-8


NODE = """    {{
      "id": {id},
      "op": "{op}",
      "dtype": {{
        "kind": "scalar",
        "name": "{dtype}"
      }},
      "shape": null,
      "arg": {arg},
      "src": {src}
    }}"""
SINK_ARG = """{{
        "kind": "sink",
        "name": "{name}"
      }}"""
NONE_ARG = """{
        "kind": "none"
      }"""


@functools.lru_cache(maxsize=4096)
def _document(stage: str, graph: tuple, name: str) -> str:
    """A canonical document (schema 7, dense ids, pretty-printed as serde_json's `to_string_pretty` does: two spaces,
    one field a line) whose SINK names the kernel."""
    nodes: list[str] = []
    index: dict[tuple, int] = {}

    def visit(node: tuple) -> int:
        if node in index:
            return index[node]
        src = [visit(c) for c in node[3]]
        index[node] = len(nodes)
        op = node[0].split("[")[0].upper()
        sources = "[]" if not src else "[\n" + ",\n".join(f"        {n}" for n in src) + "\n      ]"
        nodes.append(NODE.format(id=len(nodes), op=op, dtype="void" if op in ("SINK", "END", "STORE") else "float32",
                                 arg=SINK_ARG.format(name=name) if op == "SINK" else NONE_ARG, src=sources))
        return index[node]

    root = visit(graph)
    return (f'{{\n  "schema_version": 7,\n  "stage": "{stage}",\n  "roots": [\n    {root}\n  ],\n  "nodes": [\n'
            + ",\n".join(nodes) + "\n  ]\n}")


class Job:
    """One kernel's work on one thread: steps, each one write (or an allocation); `eprintln!` pieces hold stderr."""

    def __init__(self, kernel: int) -> None:
        self.kernel = kernel  # its place in the schedule
        self.steps: list[tuple] = []  # ("alloc", graph) | ("out", builder) | ("err", [pieces], record)


def optimize_job(plan: KernelPlan, s: Switches, interner: Interner, clock: list[int], truth: Truth) -> Job:
    job = Job(plan.index)
    k = plan.index
    debug = s.rust_log in ("debug", "trace")

    def event(level: str, message: str, field_name: str, graph: tuple, label: str, elapsed: bool) -> tuple:
        def build(printer: Printer) -> None:
            text, count = interner.tree(graph)
            fields = {field_name: text, "node_count": count} | ({"elapsed_ms": 1} if elapsed else {})
            line = printer.write(_event(clock, level, OPT, message, **fields))
            truth.stages[(line, "event")] = k
            truth.events.add(line)
        return ("out", build)

    def print_stage(label: str, graph: tuple) -> None:
        if s.per_stage:
            job.steps.append(("err", ["[per-stage] ", label, " : node_count=", ("count", graph), "\n"],
                              ("per-stage", label, graph)))
        if s.dump_stage is not None and label.startswith(s.dump_stage):
            job.steps.append(("err", ["[dump-stage] ", label, " :\n"], ("dump-header", label, graph)))
            job.steps.append(("err", [("tree", graph), "\n"], ("dump-stage", label, graph)))
            job.steps.append(("err", ["[dump-stage] ", label, " : end\n"], ("dump-end", label, graph)))
        canonical(label, graph)

    def canonical(stage: str, graph: tuple) -> None:
        if s.canonical is not None and stage.startswith(s.canonical):
            job.steps.append(("err", ["[dump-canonical] ", stage, " :\n"], None))
            job.steps.append(("err", [("doc", stage, graph, plan.bare), "\n"], ("dump-canonical", stage, graph)))
            job.steps.append(("err", ["[dump-canonical] ", stage, " : end\n"], None))

    stages = plan.stages
    job.steps.append(("alloc", stages[0][2]))
    if s.rust_log == "trace":
        job.steps.append(event("TRACE", "kernel initial", "ast.initial", stages[0][2], "kernel-initial", False))
    for label, message, graph in stages[1:6]:
        job.steps.append(("alloc", graph))
        if debug:
            job.steps.append(event("DEBUG", message, "ast.pre", graph, label, True))
    optimized = stages[6][2]
    job.steps.append(("alloc", optimized))
    canonical("optimized", optimized)
    canonical("postrange", optimized)
    if s.rust_log == "trace":
        job.steps.append(event("TRACE", "kernel initial", "ast.initial", optimized, "00-initial", False))
    print_stage("00-initial", optimized)
    for step, (label, message, graph) in enumerate(stages[7:]):
        job.steps.append(("alloc", graph))
        for i in range(s.patterns):  # the stage's rewrite: one event per match (ir/src/pattern/simplified.rs)
            job.steps.append(("out", pattern_event(clock, OP_KEYS[(step + i) % len(OP_KEYS)], truth)))
        if debug:
            job.steps.append(event("DEBUG", message, "ast.optimized", graph, label, True))
        print_stage(label, graph)
        if label in AFTER:
            canonical(AFTER[label], graph)
    canonical("final_rewrite", stages[-1][2])
    return job


OP_KEYS = ["Binary(Add)", "Binary(Mul)", "Const", "Range", "Index", "Ternary(Where)", "Unary(Neg)", "Load"]


def pattern_event(clock: list[int], key: str, truth: Truth):
    def build(printer: Printer) -> None:
        truth.events.add(printer.write(_event(clock, "TRACE", "svod_ir::pattern::simplified", "pattern matched",
                                              op_key=key)))
    return build


METAL = ("#include <metal_stdlib>\nusing namespace metal;\nkernel void {name}(device float* data0, device const float* "
         "data1, uint3 gid [[threadgroup_position_in_grid]], uint3 lid [[thread_position_in_threadgroup]]) {{\n"
         "  int gidx0 = gid.x; /* CDialect::Metal, codegen/src/c/metal.rs */\n  *(data0+gidx0) = *(data1+gidx0);\n}}\n")
C = "void {name}(float* restrict data0, const float* restrict data1) {{\n  *(data0+0) = *(data1+0);\n}}\n"
LLVM = "; ModuleID = '{name}'\ndefine void @{name}(ptr noalias %data0, ptr noalias %data1) {{\nentry:\n  ret void\n}}\n"


def code_event(clock: list[int], backend: str, name: str) -> str:
    """The renderer's TRACE event: LLVM text (`svod_codegen::llvm::text`, `generated_code`), or the C renderer's,
    Metal's dialect included (`svod_codegen::c`, `generated_c`)."""
    if backend == "llvm":
        return _event(clock, "TRACE", "svod_codegen::llvm::text", "llvm codegen: final generated code",
                      generated_code=LLVM.format(name=name))
    return _event(clock, "TRACE", "svod_codegen::c", "c codegen: final generated code",
                  generated_c=(METAL if backend == "metal" else C).format(name=name))


def compile_job(plan: KernelPlan, s: Switches, clock: list[int], truth: Truth, backend: str = "llvm") -> Job:
    job = Job(plan.index)
    final = plan.stages[-1][2]
    k = plan.index

    def document(stage: str) -> None:
        if s.canonical is not None and stage.startswith(s.canonical):
            job.steps.append(("err", ["[dump-canonical] ", stage, " :\n"], None))
            job.steps.append(("err", [("doc", stage, final, plan.name), "\n"], ("dump-canonical", stage, final)))
            job.steps.append(("err", ["[dump-canonical] ", stage, " : end\n"], None))

    document("program")
    document("linearized")
    if s.codegen:
        def build(printer: Printer) -> None:
            line = printer.write(code_event(clock, backend, plan.name))
            truth.stages[(line, "code")] = k
            truth.events.add(line)
        job.steps.append(("out", build))
    return job


def run_threads(jobs: list[Job], threads: int, rng: random.Random, interner: Interner, printer: Printer,
                truth: Truth, whole_lines: bool = False) -> None:
    """`map_on_threads`: each thread takes a job when idle (rayon splits the list; which thread takes which is the
    scheduler's), and at each moment one runnable thread does its next step. A thread inside an `eprintln!` holds
    the stderr lock until its last piece; others may still print events."""
    pending = [i for i, job in enumerate(jobs) if job.steps]
    running: list[list | None] = [None] * threads  # [job, step index, piece index]
    owner: int | None = None
    random = rng.random
    live: list[int] = []
    refill = True
    while True:
        if refill:
            for t in range(threads):
                if running[t] is None and pending:
                    pick = pending.pop(0 if threads == 1 or random() < 0.5 else int(random() * len(pending)))
                    running[t] = [jobs[pick], 0, 0]
            live = [t for t in range(threads) if running[t] is not None]
            if not live:
                return
            refill = False
        ready = live if owner is None else [t for t in live if t == owner or running[t][0].steps[running[t][1]][0]
                                            != "err"]
        t = ready[int(random() * len(ready))]
        state = running[t]
        job, i, piece = state
        step = job.steps[i]
        done = True
        if step[0] == "alloc":
            interner.intern(step[1])
        elif step[0] == "out":
            step[1](printer)
        else:
            owner = t
            text = "".join(_piece(p, interner) for p in step[1]) if whole_lines else _piece(step[1][piece], interner)
            line = printer.write(text, "err")
            if piece == 0 and step[2] is not None:
                _record(step[2], line, truth, job.kernel, interner)
            done = whole_lines or piece + 1 == len(step[1])
            if done:
                owner = None
            else:
                state[2] = piece + 1
        if done:
            state[1], state[2] = i + 1, 0
            if state[1] == len(job.steps):
                running[t] = None
                refill = True


def _piece(piece: object, interner: Interner) -> str:
    if isinstance(piece, str):
        return piece
    if piece[0] == "count":
        return str(interner.tree(piece[1])[1])
    if piece[0] == "tree":
        return interner.tree(piece[1])[0]
    return _document(piece[1], piece[2], piece[3])


def _record(record: tuple, line: int, truth: Truth, kernel: int, interner: Interner) -> None:
    source, label, graph = record
    if source == "dump-header":  # a thread has one block open at a time: its last one is this kernel's open one
        truth.blocks.append({"kernel": kernel, "label": label, "header": line, "tree": None, "end": None})
        return
    if source in ("dump-stage", "dump-end"):
        block = next(b for b in reversed(truth.blocks) if b["kernel"] == kernel and b["label"] == label)
        block["tree" if source == "dump-stage" else "end"] = line
        if source == "dump-end":
            return
    truth.stages[(line, source)] = kernel
    if source == "per-stage":
        truth.per_stage[line] = (label, interner.tree(graph)[1])


PREAMBLE = ["   Compiling svod-tensor v0.9.0 (/src/svod/tensor)",
            "    Finished `test` profile [unoptimized + debuginfo] target(s) in 41.87s",
            "     Running unittests src/lib.rs (target/debug/deps/svod_tensor-5f1c0c4d9e2ab7aa)", "", "running 1 test"]


def emit_program(rng: random.Random, switches: Switches, plans: list[KernelPlan], printer: Printer, truth: Truth,
                 interner: Interner, clock: list[int], *, backend: str = "llvm", whole_lines: bool = False,
                 staggered: str | None = None) -> None:
    """One realize's optimize and compile phases (`compile_missing_kernels`) into `printer`. `staggered`: Svod's
    threads, but no two kernels' work overlapped (workers that never got a core): each phase prints whole kernels one
    after another, what one thread prints. "rayon": in the schedule's order, as rayon runs a `join` nobody stole (the
    calling thread runs the left half, then pops the right one back); "any": each phase in an order of its own (a
    thief that ran a right half while the owner was preempted): not the schedule's."""
    for plan in plans:  # the schedule's kernel ASTs exist before any optimization starts
        interner.intern(plan.stages[0][2])
    opt_jobs = [optimize_job(p, switches, interner, clock, truth) for p in plans]
    compile_jobs = [compile_job(p, switches, clock, truth, backend) for p in plans]
    threads = switches.threads
    if staggered:
        if staggered == "any":
            rng.shuffle(opt_jobs)
            rng.shuffle(compile_jobs)
        threads = 1
    run_threads(opt_jobs, threads, rng, interner, printer, truth, whole_lines)
    run_threads(compile_jobs, threads, rng, interner, printer, truth, whole_lines)


def generate(seed: int, switches: Switches | None = None, kernels: int | None = None, *, depth: int = 0,
             change: float = 0.5, staggered: str | None = None) -> tuple[str, Truth]:
    """One `cargo test NAME -- --nocapture --test-threads=1` log of one program and its truth."""
    rng = random.Random(seed)
    switches = switches or random_switches(rng)
    kernels = kernels or rng.randint(2, 8)
    plans = plan_program(rng, kernels, depth, change)
    interner = Interner(rng.randrange(0, 5000))
    clock = [rng.randrange(1000)]
    truth = Truth([p.name for p in plans], {}, {}, set(), switches.threads, level=switches.rust_log)
    test = f"ops::program_{seed}::llvm"
    printer = Printer(len(PREAMBLE) + 1)
    printer.write(f"test {test} ... ")
    emit_program(rng, switches, plans, printer, truth, interner, clock, staggered=staggered)
    body = printer.text()
    text = "\n".join(PREAMBLE) + "\n" + body + ("" if body.endswith("\n") else "\n") + "ok\n\ntest result: ok. 1 " \
        "passed; 0 failed; 0 ignored; 0 measured; 811 filtered out; finished in 0.21s\n"
    return text, truth


def bench_log(kernels: int = 300, threads: int = 1, seed: int = 1) -> str:
    """The bench's heavy log (bench/bench_svod_log.py): `kernels` distinct kernels of ~40 nodes at trace level, a tree
    in every stage event, `[per-stage]` lines, every stage dumped (SVOD_DUMP_STAGE=), generated code, and four
    `pattern matched` events per stage (RUST_LOG=trace turns svod_ir's on too); most stages change the tree."""
    switches = Switches("trace", True, True, "", None, threads, patterns=4)
    return generate(seed, switches, kernels, depth=4, change=0.9)[0]


def random_switches(rng: random.Random) -> Switches:
    rust_log = rng.choice(["trace", "trace", "debug", "none"])
    return Switches(rust_log, rng.random() < 0.7, rng.random() < 0.6, rng.choice([None] * 6 + ["", "1", "0"]),
                    rng.choice([None] * 10 + ["o", "p", "f", "l", ""]), rng.choice([1, 2, 2, 4, 8]))
