"""readers/untangle.py: libtest's result lines torn by Svod's stderr put back apart. The shapes below are lines the
real emitter printed (tests/svod_emitter/, libtest's threads, `--nocapture`); the random test interleaves the two
streams' writes as Rust's std makes them (libtest: `test NAME ... `, the word, `\\n`, each flushed; `eprintln!`:
each literal and argument of its format string; tracing's JSON: one write per event) and checks that every line
comes back whole, the file keeps its number of lines, and each stderr line stays on the line it started on."""

from __future__ import annotations

import random

import pytest

from tgstore.svod.readers.untangle import untangle

EVENT = '{"timestamp":"2026-12-06T23:03:19.734521Z","level":"DEBUG","fields":{"message":"x"},"target":"svod"}'
THREADED = "running 10 tests\n[per-stage] 00-initial : node_count=22\n"  # output before the first test: threads


@pytest.mark.parametrize(("torn", "apart"), [
    # the word after the stderr line's last piece, libtest's newline after stderr's
    ("[per-stage] 20-final_rewrite : node_count=test two_programs::amd ... 24ok\n\n",
     "[per-stage] 20-final_rewrite : node_count=24\ntest two_programs::amd ... ok\n"),
    # libtest's newline cutting the stderr line in two
    ("test two_programs::clang ... [per-stage] ok19e-move_gates_from_index\n : node_count=23\n",
     "[per-stage] 19e-move_gates_from_index : node_count=23\ntest two_programs::clang ... ok\n"),
    # stderr's newline between the name and the word
    (f"[per-stage] 16-extra_symbolic : node_count=24test sum_rows::cuda ... \nok\n{EVENT}\n",
     f"[per-stage] 16-extra_symbolic : node_count=24\ntest sum_rows::cuda ... ok\n{EVENT}\n"),
    (f"[per-stage] 00-initial : node_count=test sum_rows::cuda ... 24\nok\n{EVENT}\n",
     f"[per-stage] 00-initial : node_count=24\ntest sum_rows::cuda ... ok\n{EVENT}\n"),
    # other threads' whole events between libtest's newline and the rest of the stderr line
    (f"[per-stage] 16-memory_coalescing : node_count=test two_programs::cuda ... ok\n{EVENT}\n{EVENT}\n23\n",
     f"[per-stage] 16-memory_coalescing : node_count=23\n{EVENT}\n{EVENT}\ntest two_programs::cuda ... ok\n"),
    # ... eight of them, seen on a loaded machine (the window reads on over a run of whole events)
    (f"[per-stage] 19c-dtype_decompositionstest sum_rows::cuda ... ok\n{(EVENT + chr(10)) * 8} : node_count=24\n",
     f"[per-stage] 19c-dtype_decompositions : node_count=24\n{(EVENT + chr(10)) * 8}test sum_rows::cuda ... ok\n"),
    # another thread's whole event between two pieces of a stderr line (libtest's threads)
    (f"[per-stage] 15-early_symbolic : node_count={EVENT}\n24\n",
     f"[per-stage] 15-early_symbolic : node_count=24\n{EVENT}\n"),
    (f"thread '<unnamed>{EVENT}\n' (25813) panicked at src/pipeline.rs:219:17:\n",
     f"thread '<unnamed>' (25813) panicked at src/pipeline.rs:219:17:\n{EVENT}\n"),
    # with libtest's threads, another thread's event between the name and the word
    (f"test sum_rows::llvm ... {EVENT}\n[per-stage] 16-memory_coalescing : node_count=23\nok\n{EVENT}\n",
     f"{EVENT}\n[per-stage] 16-memory_coalescing : node_count=23\ntest sum_rows::llvm ... ok\n{EVENT}\n"),
])
def test_real_tearings_are_put_back(torn: str, apart: str) -> None:
    assert untangle(THREADED + torn) == THREADED + apart


def test_one_thread_forms_are_left_as_they_are() -> None:
    """`--test-threads=1`: libtest writes the name before the test runs, its first output line joins it, the word
    comes after the output; and a whole result. Nothing is torn: the same text comes back."""
    text = (f"running 2 tests\ntest a::llvm ... {EVENT}\n[per-stage] 00-initial : node_count=3\nok\n"
            f"test b::amd ... amd codegen_tests variant: skipped (no supported AMD GPU)\nok\n")
    assert untangle(text) is text


def _pieces_of_stderr(line: str) -> list[str]:
    """How `eprintln!("[per-stage] {} : node_count={}", label, n)` reaches the file: literal, argument, ..."""
    label, count = line.removeprefix("[per-stage] ").split(" : node_count=")
    return ["[per-stage] ", label, " : node_count=", count, "\n"]


def test_random_interleavings_come_back_whole() -> None:
    for seed in range(2000):
        _interleaving(seed)


def _interleaving(seed: int) -> None:
    rng = random.Random(seed)
    labels = ["08-post_opt_sym", "09-pre_expand", "16-memory_coalescing", "19e-move_gates_from_index"]
    stderr_lines = [f"[per-stage] {rng.choice(labels)} : node_count={rng.randint(1, 99)}" for _ in range(6)]
    tests = [f"sum_rows::{v}" for v in rng.sample(["clang", "llvm", "amd", "cuda", "metal"], 3)]
    # stdout: whole events and libtest's results, in one order (one handle); stderr: one thread's pieces
    stdout: list[list[str]] = [[EVENT + "\n"] for _ in range(rng.randint(0, 3))]
    stdout += [[f"test {t} ... ", rng.choice(["ok", "FAILED", "\x1b[32mok\x1b[0m"]), "\n"] for t in tests]
    rng.shuffle(stdout)
    err = [w for line in stderr_lines for w in _pieces_of_stderr(line)]
    text, j = [THREADED], 0
    for writes in stdout:  # each stdout group lands at a random point of stderr's pieces, a few of stderr's pieces
        # between its writes (libtest flushes each one); one tearing at a time: a group starts after a whole
        # stderr line has followed the last one (two tests ending within a few writes: not modelled, closing note)
        ends = [n + 1 for n in range(j, len(err)) if err[n] == "\n"]
        stop = rng.choice([j, *ends]) if ends else len(err)
        stop = rng.randint(stop, min(len(err), stop + 4))
        text += err[j:stop]
        j = stop
        for n, write in enumerate(writes):
            text.append(write)
            between = 0 if n == len(writes) - 1 else rng.choices([0, 1, 2], [5, 3, 2])[0]
            text += err[j:j + between]
            j = min(len(err), j + between)
        # other threads' events, whole (on a loaded machine many land there: 8 were seen in the real emitter's)
        text += [EVENT + "\n"] * rng.choices([0, 1, 2, rng.randint(3, 12)], [6, 2, 2, 2])[0]
        ends = [n + 1 for n in range(j, len(err)) if err[n] == "\n"]
        text += err[j:ends[0]] if ends else err[j:]
        j = ends[0] if ends else len(err)
    text += err[j:]
    torn = "".join(text)
    apart = untangle(torn)
    assert apart.count("\n") == torn.count("\n")
    got = apart.split("\n")[THREADED.count("\n"):]
    assert [line for line in got if line.startswith("[per-stage]")] == stderr_lines, (seed, torn)
    assert sorted(line.split(" ... ")[0] for line in got if line.startswith("test ")) == sorted(
        f"test {t}" for t in tests), (seed, torn)
    for line in stderr_lines:  # each stderr line stays on the line its first piece is on
        starts = [n for n, raw in enumerate(torn.split("\n")[THREADED.count("\n"):]) if "[per-stage] " in raw]
        assert got.index(line) in starts or got.index(line) - 1 in starts, (seed, line, torn)
