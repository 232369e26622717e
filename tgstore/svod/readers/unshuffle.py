"""A panic's first line and one Svod stderr line written at the same time, piece by piece, put back apart (issue 44).

std's panic hook writes to stderr without stderr's lock (library/std/src/panicking.rs, `default_hook`): in one write
where the message fits its 512-byte buffer, else piece by piece (`\\nthread '`, the thread's name, `' (`, its id,
`) panicked at `, the location's file, `:`, line, `:`, column, `:\\n`, then the message). Svod's `eprintln!`s write
their pieces one by one too (pieces.py), so a worker's panic with a UOp tree in its message and another worker's
`[per-stage]` or dump line interleave piece by piece, as the real emitter shows (tests/svod_emitter/):

    [dump-stage]
    thread '20-final_rewrite<unnamed> : end
    ' (9716) panicked at src/pipeline.rs:219:17:

Every way of taking one Svod line's pieces out of the lines around a torn panic line is tried (its label one that
Svod's source prints: tgstore.svod.emission). Where what is left holds the hook's first line and every such way
agrees on its thread, id and location, the lines are rewritten: the Svod line whole, on the line the hook's blank
line had (or the first line), then the hook's first line, the file's number of lines kept. Anything else is left as
it is, and the panic reader says the panic's first line is torn past reading (tgstore.svod.readers.runs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

from tgstore.svod import emission
from tgstore.svod.readers.lines import find_all
from tgstore.svod.readers.pieces import PIECE_STARTS, complete_piece

PANIC_HEAD = re.compile(r"\nthread '(?P<thread>[^'\n]*)'(?: \((?P<tid>\d+)\))? panicked at "
                        r"(?P<location>[^\s]+:\d+:\d+):\n")
BEFORE, AFTER = 1, 2  # the lines around a torn `thread '` line the other line's pieces may be on
COUNT_DIGITS = 7  # a node count's digits at most
READINGS = 4096  # ways of taking the pieces out tried at most (a window is a few lines)


@cache
def _labels() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the post-opt labels `[per-stage]` and `[dump-stage]` print, the stages `[dump-canonical]` prints)."""
    post = tuple(emission.post_labels())
    canonical = (*post, *emission.CANONICAL_AFTER.values(), *emission.SCHEDULE_CANONICAL, *emission.CODE_CANONICAL,
                 *emission.HEURISTIC_ONLY)
    return post, tuple(dict.fromkeys(canonical))


def _formats() -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Svod's stderr lines as pieces: (start, labels, the pieces after the label; "#" a count, one write)."""
    post, canonical = _labels()
    return [("[per-stage] ", post, (" : node_count=", "#", "\n")),
            ("[dump-stage] ", post, (" :\n",)), ("[dump-stage] ", post, (" : end\n",)),
            ("[dump-canonical] ", canonical, (" :\n",)), ("[dump-canonical] ", canonical, (" : end\n",))]


def unshuffle(text: str) -> str:
    """The text with each panic first line torn by one Svod line's pieces put back apart (the same text where none
    is)."""
    if "panicked at " not in text:
        return text
    out: list[str] = []
    done = 0
    at = text.find("thread '")
    while at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        if line_start >= done and not _whole_head(text, line_start):
            window = _window(text, line_start)
            fixed = _unshuffled(text[window[0]:window[1]])
            if fixed is not None:
                out += [text[done:window[0]], fixed]
                done = window[1]
        at = text.find("thread '", max(at + 8, done))
    return text if not out else "".join([*out, text[done:]])


def _whole_head(text: str, line_start: int) -> bool:
    return PANIC_HEAD.match(text, line_start - 1) is not None if line_start else \
        PANIC_HEAD.match("\n" + text[:text.find("\n") + 1]) is not None


def _window(text: str, line_start: int) -> tuple[int, int]:
    """From BEFORE lines above the line to the end of AFTER lines below it (each line with its newline)."""
    start = line_start
    for _ in range(BEFORE):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    end = line_start
    for _ in range(AFTER + 1):
        newline = text.find("\n", end)
        if newline < 0:
            return start, len(text)
        end = newline + 1
    return start, end


def _unshuffled(window: str) -> str | None:
    """The window put back apart, where every reading that leaves a panic's first line gives the same lines (blank
    lines aside: where a lone newline went is all two such readings can differ in); else None (not proven). Of
    those, the one with fewest writers."""
    if " panicked at " not in window:
        return None
    readings: dict[str, tuple[bool, str]] = {}
    for spans, line, lone in _readings(window):
        rest = _cut(window, spans)
        head = PANIC_HEAD.search("\n" + rest)
        if head is None or not _explains(window, spans, rest, head) or not _no_pieces_left(rest):
            continue
        placed = _placed(rest, head.start(), line, lone)
        lines = "\n".join(kept for kept in placed.split("\n") if kept)
        readings[lines] = min(readings.get(lines, (lone, placed)), (lone, placed))
        if len(readings) > 1:
            return None  # two readings disagree: which is true is not proven
    return next(iter(readings.values()))[1] if readings else None


def _explains(window: str, spans: list[tuple[int, int]], rest: str, head: re.Match[str]) -> bool:
    """The pieces taken out each lie between two of the hook's pieces (a write is never split), all before the end
    of its first line (inside its message, whose pieces are not known, nothing is taken), and what is left before
    the hook's newline is whole lines (every other writer's line ends in a newline: Svod's lines are those taken
    out, stdout's are whole writes)."""
    before = rest[:max(head.start() - 1, 0)]
    if before and not before.endswith("\n"):
        return False
    bounds = _hook_bounds(head)  # in "\n" + rest
    removed = 0
    for a, b in spans:
        at = a - removed + 1  # where the span was, in "\n" + rest
        if at >= head.start() and at not in bounds:
            return False
        removed += b - a
    return True


def _hook_bounds(head: re.Match[str]) -> set[int]:
    """Where one of the hook's writes ends and the next begins in its first line (and its ends): `\nthread '`, the
    name, `' (`, the id, `) panicked at `, the file, `:`, the line, `:`, the column, `:\n`."""
    location = head.start("location")
    file_end = location + len(head["location"].rsplit(":", 2)[0])
    line_end = head["location"].rfind(":") + location
    ends = [head.start(), head.start("thread"), head.end("thread"), location, file_end, file_end + 1, line_end,
            line_end + 1, head.end("location"), head.end()]
    if head["tid"] is not None:
        ends += [head.start("tid"), head.end("tid")]
    return set(ends)


def _no_pieces_left(rest: str) -> bool:
    """Every Svod stderr line left in the text is whole: a reading that leaves another line's pieces explains
    part of the tearing only."""
    return all(line.startswith(PIECE_STARTS) and complete_piece(line) for line in rest.split("\n")
               if any(start in line for start in PIECE_STARTS))


def _placed(rest: str, head_start: int, line: str | None, lone: bool) -> str:
    """The window with the Svod line whole, on a line of its own before the hook's newline and `thread '`; the lone
    newline (the last piece of an `eprintln!` whose text came before) back at the end of the text before the panic.
    The pieces took their newlines with them, and get them back. `head_start`: where the hook's newline is in a
    newline + rest (0: the panic starts the window)."""
    cut = max(head_start - 1, 0)
    before, panic = rest[:cut], rest[cut:]
    if lone:
        before += "\n"
    return before + panic if line is None else before + line + "\n" + panic


def _readings(window: str) -> Iterator[tuple[list[tuple[int, int]], str | None, bool]]:
    """(the spans of the window another writer wrote, the Svod line they make or None, whether a lone newline is
    among them): one Svod line's pieces, a lone newline, or both, every way they can lie in order."""
    tried = 0
    newlines = list(find_all(window, "\n", 0))
    for spans, line in [([], None), *_one_line(window)]:
        taken = {a for a, _b in spans}
        readings = [(spans, line, False)] if line is not None else []
        # the last piece of an `eprintln!` begun before the window (`{}` then `\n`: a dump body's newline)
        readings += [(sorted([*spans, (at, at + 1)]), line, True) for at in newlines if at not in taken]
        for reading in readings:
            tried += 1
            if tried > READINGS:
                return
            yield reading


def _one_line(window: str) -> Iterator[tuple[list[tuple[int, int]], str]]:
    """(the spans of one Svod line's pieces, that line whole), every way its pieces can lie in order."""
    for start, labels, tail in _formats():
        for first in find_all(window, start, 0):
            after_start = first + len(start)
            for label in labels:
                for at in find_all(window, label, after_start):
                    for spans in _tail_spans(window, at + len(label), tail):
                        cut = [(first, after_start), (at, at + len(label)), *spans]
                        yield cut, "".join(window[a:b] for a, b in cut).rstrip("\n")


def _tail_spans(window: str, at: int, tail: tuple[str, ...]) -> Iterator[list[tuple[int, int]]]:
    if not tail:
        yield []
        return
    piece, rest = tail[0], tail[1:]
    if piece == "#":  # a count is one write of digits: any run of them (another write's digits may adjoin it)
        for begin in range(at, len(window)):
            for end in range(begin + 1, min(begin + COUNT_DIGITS, len(window)) + 1):
                if not window[end - 1].isdigit():
                    break
                for spans in _tail_spans(window, end, rest):
                    yield [(begin, end), *spans]
        return
    for found in find_all(window, piece, at):
        for spans in _tail_spans(window, found + len(piece), rest):
            yield [(found, found + len(piece)), *spans]


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for a, b in spans:
        out.append(text[at:a])
        at = b
    out.append(text[at:])
    return "".join(out)
