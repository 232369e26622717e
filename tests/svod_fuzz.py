"""Mutations of real-looking Svod output (tests/svod_runs.py, tests/svod_fixtures.py), seeded: lines cut, repeated,
swapped, deleted, bytes flipped, files truncated. Used by tests/test_svod_fuzz.py and bench/bench_svod_fuzz.py."""

from __future__ import annotations

import random

from svod_fixtures import worked_example_log
from svod_runs import DISTINCT, libtest_threads_session, panic_session, serial_session, threaded_log


def seeds_texts() -> list[tuple[str, str]]:
    """The fixture logs the mutations start from (name, text)."""
    return [("worked.log", worked_example_log(kernels=2)), ("serial.log", serial_session()),
            ("panic.log", panic_session()), ("threads.log", threaded_log(3, 1, per_stage=True, dump=True)),
            ("docs.log", threaded_log(3, 2, names=DISTINCT, trees=False, documents=True)),
            ("libtest.log", libtest_threads_session(("llvm",))), *_as_svod_runs()]


def _as_svod_runs() -> list[tuple[str, str]]:
    """Issue 37's logs, as Svod and its runners print them (tests/svod_concurrency.py, tests/svod_runners.py):
    default threads with cut lines and documents, nextest's blocks, libtest's capture and failures block with ANSI
    colours, BEAM's worker output."""
    from svod_concurrency import Switches, generate
    from svod_runners import assertion_panic, beam_log, libtest_capture, nextest, run_test

    threaded = generate(5, Switches("trace", True, True, "1", "p", 4), kernels=2)[0]
    one = Switches("debug", True, True, None, None, 1)
    tests = [run_test("ops::a::llvm", 1, one, 1), run_test("ops::b::llvm", 2, Switches("none", True, True, "1",
                                                                                        None, 2), 2)]
    failing = run_test("ops::c::llvm", 3, one, 1, panic=assertion_panic("ops::c::llvm"))
    return [("threads-model.log", threaded), ("nextest.log", nextest(tests)),
            ("capture.log", libtest_capture([*tests, failing], ansi=True)), ("beam.log", beam_log(4, 1, 2)[0])]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(6)
    i = rng.randrange(len(lines))
    if kind == 0:  # a line cut short
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    elif kind == 1:  # a line repeated
        lines.insert(i, lines[i])
    elif kind == 2:  # two lines swapped
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3:  # a line dropped
        del lines[i]
    elif kind == 4:  # a byte flipped (kept printable UTF-8: what a reader gets past the UTF-8 check)
        if lines[i]:
            at = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:at] + chr(rng.choice([*range(32, 127), 0x2502, 0x251c])) + lines[i][at + 1:]
    else:  # the file truncated
        return text[:rng.randrange(len(text) + 1)]
    return "\n".join(lines)


def inputs(count: int, seed: int = 20261204) -> list[tuple[str, str]]:
    """`count` mutated logs (name, text), 1 to 3 mutations each, from every seed log in turn."""
    rng = random.Random(seed)
    base = seeds_texts()
    out = []
    for n in range(count):
        name, text = base[n % len(base)]
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        out.append((f"{n}-{name}", text))
    return out
