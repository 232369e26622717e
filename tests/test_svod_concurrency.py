"""The reader against Svod's emission model (tests/svod_concurrency.py: hash-consed ids from one counter shared by
the threads, whole events interleaved, `eprintln!` pieces cut by other threads' events, `kernel initial` twice per
kernel, code generation after every optimization, names in schedule order), drawn at random: 2-8 kernels under
Svod's default thread count (and sometimes SVOD_THREADS=1). On every log: no stage filed under a kernel that did not
print it, no kernel invented (never more than the schedule's, each a real one, numbered in schedule order where the
log says it proves the order), no event and no `[per-stage]` value lost without a problem at its line.
10,000 logs in the slow tier, a sample in the fast one."""

from __future__ import annotations

import pytest
from svod_concurrency import Switches, Truth, generate

from tgstore.nogc import gc_paused
from tgstore.svod.readers import read_runs
from tgstore.svod.readers.model import bare_name, document_name

FAST = 60
SLOW = 10_000
CHUNKS = 10


def check(seed: int, switches: Switches | None = None, kernels: int | None = None, staggered: str | None = None
          ) -> dict[str, int]:
    """Read one generated log; assert the properties; return what was filed (for the totals)."""
    with gc_paused():  # as ingest reads: the generator's and reader's objects hold no cycle
        text, truth = generate(seed, switches, kernels, staggered=staggered)
        # a log of SVOD_THREADS=1 is read as the advice says: `ingest-svod --svod-threads 1` (the log cannot show it)
        (run,) = read_runs([(f"{seed}.log", text)], threads_stated=1 if truth.threads == 1 else None)
    problem_lines = {p.line for p in run.problems}
    where = f"seed {seed}"
    true_of: dict[int, int] = {}  # stored kernel index -> schedule index
    for kernel in run.kernels:
        owners = {truth.stages.get((s.line, _source(s))) for s in kernel.stages} - {None}
        if kernel.name is not None:  # named by the compile phase only: its final name
            assert kernel.name in truth.kernels, (where, kernel.name)
            owners.add(truth.kernels.index(kernel.name))
        assert len(owners) == 1, (where, kernel.index, kernel.name, owners)  # one kernel's stages only
        true_of[kernel.index] = owners.pop()
    assert len(set(true_of.values())) == len(true_of) <= len(truth.kernels), (where, true_of)  # none invented
    if run.order_proven and staggered != "any":  # "any": one thread's shape, other orders (see the test)
        assert all(index == true for index, true in true_of.items()), (where, true_of)  # schedule order
    stored = {(s.line, _source(s)): s for s in [*(s for k in run.kernels for s in k.stages), *run.unattributed,
                                                 *run.unplaced]}
    for (line, source), _kernel in truth.stages.items():
        if source not in ("event", "code"):
            assert (line, source) in stored or line in problem_lines, (where, line, source)
    for line, (label, count) in truth.per_stage.items():
        found = stored.get((line, "per-stage"))
        assert (found and (found.label, found.node_count) == (label, count)) or line in problem_lines, \
            (where, line, label, count)
    events = {e.line for e in run.events}
    assert all(line in events or line in problem_lines for line in truth.events), where
    fragments: dict[int, set[int | None]] = {}
    for stage in run.unattributed:  # a fragment holds one kernel's stages only
        if stage.fragment is not None:
            fragments.setdefault(stage.fragment, set()).add(truth.stages.get((stage.line, _source(stage))))
    assert all(len(owners) == 1 and None not in owners for owners in fragments.values()), (where, fragments)
    filed = {id(s) for k in run.kernels for s in k.stages}
    for stage in [*(s for k in run.kernels for s in k.stages), *run.unattributed]:
        if stage.source == "dump-stage" and (id(stage) in filed or stage.fragment is not None
                                             or stage.node_count is not None):
            assert _block_of(truth, stage) is not None and _block_of(truth, stage)["tree"] == stage.line, \
                (where, "a dump body tied to a kernel, fragment or count that a reader of the log cannot pair with "
                 "its header", stage.line, stage.label)
    # One optimizing thread, with the optimizer's events (what the problems' SVOD_THREADS=1 advice asks for):
    # everything filed, in order, nothing unattributed. Without its events a log of one thread can be one that
    # several threads printed (a document or [per-stage] block per kernel, in completion order): nothing to assert.
    if truth.threads == 1 and truth.level != "none":
        assert not run.unattributed and [k.name for k in run.kernels][:len(truth.kernels)] == \
            ([*truth.kernels] if any(k.name for k in run.kernels) else [None] * len(run.kernels)), where
    filed = sum(len(k.stages) for k in run.kernels)
    return {"filed": filed, "unattributed": len(run.unattributed), "kernels": len(run.kernels)}


def _block_of(truth: Truth, stage) -> dict | None:
    """The block a reader of the log pairs a dump body with: the nearest header of its label above it whose block is
    still open there (Svod prints header, tree and end with three `eprintln!`s; other threads' blocks of the same
    label may be open at once, and then the text does not say which tree ends which)."""
    open_blocks = [b for b in truth.blocks if b["label"] == stage.label and b["header"] < stage.line
                   and (b["end"] is None or stage.line < b["end"])]
    return max(open_blocks, key=lambda b: b["header"], default=None)


def _source(stage) -> str:
    return "code" if stage.source == "code" else stage.source


def test_a_sample_of_random_default_thread_logs() -> None:
    totals = {"filed": 0, "unattributed": 0, "kernels": 0}
    for seed in range(FAST):
        for key, value in check(seed).items():
            totals[key] += value
    assert totals["filed"] > 0 and totals["kernels"] > 0, totals


@pytest.mark.parametrize("level", ["trace", "debug", "none"])
def test_one_thread_files_every_stage(level: str) -> None:
    """What the problems' `SVOD_THREADS=1` advice promises, at every level of the optimizer's events: with one
    optimizing thread every stage is filed, on the right kernel (check() asserts the kernels and names where the
    optimizer's events show; without them the `[per-stage]` lines, a whole block per kernel, are the proof)."""
    for seed in range(8):
        for codegen in (True, False):
            filed = check(1000 + seed, Switches(level, codegen, True, "" if seed % 2 else None,
                                                "" if seed % 3 else None, 1), kernels=2 + seed % 7)
            assert filed["unattributed"] == 0 and filed["filed"] > 0, (level, seed, codegen, filed)


@pytest.mark.parametrize("staggered", ["rayon", "any"])
@pytest.mark.parametrize("level", ["trace", "debug"])
def test_threads_whose_kernels_did_not_overlap(level: str, staggered: str) -> None:
    """Under Svod's threads a run whose kernels never overlapped prints what one thread prints, and nothing in a JSON
    log without thread ids tells it from one thread. Kernels whose bare names differ: each block's trees spell its
    name (tgstore/svod/readers/naming.py), so every stage is filed on its kernel, whether rayon ran a join nobody
    stole (both phases in the schedule's order) or each phase ran in an order of its own (a thief running a right
    half while the owner was preempted). Kernels sharing a bare name print alike: their blocks are never filed on one
    of them (check() asserts every filed stage is its kernel's), and the schedule's order is never claimed."""
    unattributed = {"distinct": 0, "shared": 0}
    drawn = {"distinct": 0, "shared": 0}
    for seed in range(3000, 3400):
        switches = Switches(level, True, True, None, None, 4)
        _text, truth = generate(seed, switches, 2 + seed % 4, staggered=staggered)
        names = "distinct" if len({bare_name(n) for n in truth.kernels}) == len(truth.kernels) else "shared"
        if drawn[names] == 15:
            continue
        drawn[names] += 1
        unattributed[names] += check(seed, switches, 2 + seed % 4, staggered=staggered)["unattributed"] > 0
    assert drawn == {"distinct": 15, "shared": 15}, drawn
    assert unattributed == {"distinct": 0, "shared": 15}, unattributed


def test_the_canonical_documents_advice_holds() -> None:
    """The other advice, which keeps the run's kernels: with `SVOD_DUMP_CANONICAL_STAGE=` under default threads every
    document whose kernel's bare name no other kernel of the program has is filed on that kernel (check() asserts the
    kernel is the right one); and a log that already has the documents is not told to add them."""
    for seed in range(12):
        text, truth = generate(2000 + seed, Switches("trace", True, True, None, "", 4), kernels=3 + seed % 4)
        check(2000 + seed, Switches("trace", True, True, None, "", 4), kernels=3 + seed % 4)
        (run,) = read_runs([("t.log", text)])
        bares = [bare_name(name) for name in truth.kernels]
        loose = [s for s in run.unattributed if s.source == "dump-canonical" and s.label not in ("tensor",)]
        assert not [s for s in loose if bares.count(document_name(s.canonical)) == 1], seed
        assert not any("add SVOD_DUMP_CANONICAL_STAGE" in p.message for p in run.problems), seed


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_ten_thousand_random_default_thread_logs(chunk: int) -> None:
    per = SLOW // CHUNKS
    for seed in range(100_000 + chunk * per, 100_000 + (chunk + 1) * per):
        check(seed)


def test_truth_records_every_line() -> None:
    """The generator's truth covers what it printed: each event line starts with an event, each [per-stage] line
    with its piece."""
    text, truth = generate(7, Switches("trace", True, True, "", "o", 4), kernels=4)
    lines = text.split("\n")
    assert isinstance(truth, Truth) and truth.events
    for line in truth.events:
        assert lines[line - 1].removeprefix("test ops::program_7::llvm ... ").find('{"timestamp"') >= 0, line
    for line in truth.per_stage:
        assert "[per-stage] " in lines[line - 1], (line, lines[line - 1])
