"""A test session written to two files (`cargo test ... >out.log 2>err.log`): libtest's lines and the events are in
stdout, Svod's stderr lines (`[per-stage]`, dumps, skip lines, panics) in the other file, with nothing around them
naming a test. Under `--test-threads=1` the tests ran one after another, so stderr is their output in the same
order; lines that name their test anchor it: a skip line names its variant (outcomes.SKIP_LINES: the k-th `amd`
skip line is the k-th `::amd` test's), a panic its thread (libtest names a test's thread after the test). The
stretch between two anchors goes to the one test that can have printed it (the only test between them that ran);
where several could have, the ones whose stdout holds Svod's events (a `[per-stage]` line follows its stage's event,
schedule/src/optimizer/mod.rs `print_stage`, at any level that prints events), else it stays outside every test.
"""

from __future__ import annotations

from tgstore.svod.readers import outcomes
from tgstore.svod.readers.grammar import PANIC
from tgstore.svod.readers.lines import Lines
from tgstore.svod.readers.panics import find_panic
from tgstore.svod.readers.sessions import TestPart, has_output, variant_of

RAN = (outcomes.OK, outcomes.FAILED, None)


def split_streams(by_file: dict[int, list[TestPart]]) -> None:
    """Give each test its stderr lines from a file of no tests beside a file of tests (in place)."""
    programs = [i for i, parts in by_file.items() if len(parts) == 1 and parts[0].program]
    loose = [i for i, parts in by_file.items() if parts and all(p.name is None for p in parts)]
    if len(programs) == 1 and len(loose) == 1 and len(by_file) == 2:
        # `cargo run` apart: cargo's `Running` line (and the panic, the exit status) on stderr, the events on stdout
        (program,), (out,) = by_file[programs[0]], by_file[loose[0]]
        out.name, out.program, out.outcome, out.stream, program.stream = program.name, True, program.outcome, 1, 2
        return
    tested = [i for i, parts in by_file.items() if any(p.name is not None and not p.program for p in parts)]
    loose = [i for i, parts in by_file.items() if parts and all(p.name is None for p in parts)]
    if len(tested) != 1 or len(loose) != 1:
        return
    tests = [p for p in by_file[tested[0]] if p.name is not None]
    (outside,) = by_file[loose[0]]
    if not has_output(outside) and not any(outcomes.skip_line(text) or PANIC.match(text) for _n, text in outside.lines):
        by_file[loose[0]] = []  # an empty stream, or one holding nothing of Svod's: no run of its own
        return
    anchors: list = []  # (index in stderr's lines, test index, skip | panic)
    at = 0
    for n, (_number, text) in enumerate(outside.lines):
        skip = outcomes.skip_line(text)
        if skip is not None and skip.known:
            found = next((k for k in range(at, len(tests)) if variant_of(tests[k].name) == skip.variant), None)
            if found is not None:
                anchors.append((n, found, "skip"))
                at = found + 1
            continue
        panic = PANIC.match(text)
        if panic:
            found = next((k for k in range(at, len(tests)) if tests[k].name == panic.group("thread")), None)
            if found is not None:
                anchors.append((n, found, "panic"))
                at = found + 1
    anchors = _with_messages(anchors, outside.lines)
    if not anchors and len(tests) > 1:
        return
    lines = outside.lines
    given: dict[int, Lines] = {}
    left = Lines(lines.file)
    ends = {n: last for n, _k, _kind, last in anchors}
    bounds = [(-1, -1, "start", -1), *anchors, (len(lines), len(tests), "end", len(lines))]
    for (_start, low, low_kind, start), (end, high, high_kind, _last) in zip(bounds, bounds[1:], strict=False):
        first = low + 1 if low_kind != "start" else 0
        last = high + 1 if high_kind == "panic" else high
        can = [k for k in range(first, last) if tests[k].outcome in RAN]
        printing = [k for k in can if has_output(tests[k])]
        if printing and any(has_output(t) for t in tests):  # Svod's stderr lines follow its events (print_stage)
            can = printing
        owner = can[0] if len(can) == 1 else None
        for n in range(start + 1, end):
            _add(given.setdefault(owner, Lines(lines.file)) if owner is not None else left, lines, n)
        if high_kind in ("skip", "panic"):
            for n in range(end, ends.get(end, end) + 1):  # a panic with its message and backtrace
                _add(given.setdefault(high, Lines(lines.file)), lines, n)
            if high_kind == "skip":
                tests[high].outcome = outcomes.SKIPPED
    for test in tests:
        test.stream = 1
    parts: list[TestPart] = []
    for k, mine in sorted(given.items()):
        part = TestPart(tests[k].name, mine, outcome=tests[k].outcome, stream=2)
        part.panic = tests[k].panic or find_panic(mine)
        tests[k].panic = part.panic
        parts.append(part)
    outside.lines = left
    outside.stream = 2
    by_file[loose[0]] = ([outside] if has_output(outside) else []) + parts


MESSAGE_ENDS = ("[per-stage]", "[dump-", "{", "thread '")


def _with_messages(anchors: list[tuple[int, int, str]], lines: Lines) -> list[tuple[int, int, str, int]]:
    """Each anchor with the index of its last line: a panic's message, `note:` and backtrace lines are its."""
    out = []
    for n, test, kind in anchors:
        last = n
        if kind == "panic":
            while last + 1 < len(lines) and not lines[last + 1][1].startswith(MESSAGE_ENDS) \
                    and outcomes.skip_line(lines[last + 1][1]) is None:
                last += 1
        out.append((n, test, kind, last))
    return out


def _add(target: Lines, lines: Lines, n: int) -> None:
    number, text = lines[n]
    target.add(number, None if text == lines.file.line(number) else text)
