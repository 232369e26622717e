"""A panic as Rust's hook prints it, read from a part's lines: its thread, location and message, and what of it
the lines do not prove (the hook writes without stderr's lock: tgstore.svod.readers.unshuffle).

* Rust's panic hook (`library/std/src/panicking.rs`, `default_hook`): `thread 'NAME' panicked at FILE:L:C:` and,
  since Rust 1.88, `thread 'NAME' (TID) panicked at FILE:L:C:`, after a blank line; the message on the lines after
  it; then `note: run with `RUST_BACKTRACE=1` ...` or a backtrace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tgstore.svod.readers import tracing_text
from tgstore.svod.readers.grammar import LIBTEST_TAIL, PANIC, PANIC_END
from tgstore.svod.readers.lines import FileText, Lines
from tgstore.svod.readers.outcomes import LIBTEST_RESULTS
from tgstore.svod.readers.pieces import EVENT_START, PIECE_STARTS, TREE_LINE, complete_piece, event_at

RESULTS = tuple(LIBTEST_RESULTS)


@dataclass
class Panic:
    line: int
    thread: str
    location: str
    message: str
    message_lines: list[tuple[int, str]] = field(default_factory=list)
    # why the message read is not proven its own (another thread's dump body can land between the hook's pieces)
    message_unproven: str | None = None


def panic_at(lines: Lines, i: int) -> Panic | None:
    number, line = lines[i]
    m = PANIC.match(line)
    after = i + 1
    if not m and (cut := torn_at(line)) > 0 and i + 1 < len(lines):
        # the hook writes its line in pieces: another thread's `[per-stage]` line, or its whole event (stdout, one
        # write, to the same file), can land inside it; the rest of the panic line goes on after the events
        on = i + 1
        while on + 1 < len(lines) and _whole_event(lines[on][1]) and event_at(line) == cut:
            on += 1
        m = PANIC.match(line[:cut] + lines[on][1])
        after = on + 1
    if not m:
        return None
    message = [(number, m.group("rest"))] if m.group("rest") else []
    unproven = None
    for later_number, later in lines[after:]:
        if not message and later.startswith(EVENT_START):
            continue  # another thread's event between the hook's `:\n` and its message (both are pieces)
        if not message:
            later = _without_stray_piece(later)
        if not message and TREE_LINE.match(later):
            unproven = ("a UOp tree printed right after the panic's first line: the hook writes a long message in "
                        "pieces, and another thread's [dump-stage] body (one write) can land there first")
            break
        if PANIC_END.match(later) or later.strip() in RESULTS or LIBTEST_TAIL.match(later) \
                or tracing_text.parse(later) is not None:
            break
        message.append((later_number, later))
    while message and not message[-1][1].strip():
        message.pop()
    if unproven:
        message = []
    return Panic(number, m.group("thread"), m.group("location"), "\n".join(t for _n, t in message), message,
                 unproven)


def _without_stray_piece(line: str) -> str:
    """A panic message's line without another thread's first `eprintln!` piece (`[dump-stage] `) written before
    it: a piece only Svod's stderr lines start with, whose line does not read as one of them."""
    piece = next((start for start in PIECE_STARTS if line.startswith(start)), None)
    if piece is None or complete_piece(line) or line[len(piece):].startswith(PIECE_STARTS):
        return line
    return line[len(piece):]


def panicked_near(file: FileText, number: int) -> bool:
    """` panicked at ` on this line or the next two: a `thread '` line that is the start of a panic's first line,
    whole or torn (the hook's pieces and another thread's interleaved: tgstore.svod.readers.unshuffle)."""
    end = file.starts[number + 2] if number + 2 < len(file.starts) else len(file.text)
    return file.text.find(" panicked at ", file.starts[number - 1], end) >= 0


def torn_at(line: str) -> int:
    """Where a Svod stderr line or another thread's event starts inside a line that another write began (a panic's
    first line): -1 if none."""
    stderr = max(line.find("[per-stage] "), line.find("[dump-"))
    event = event_at(line)
    return stderr if event < 0 else event if stderr < 0 else min(stderr, event)


def _whole_event(line: str) -> bool:
    """A whole event line (JSON's start, or a text event that parses): stricter than untangle's `_starts_event`,
    which takes any line that starts like one (an event with another writer's piece after it)."""
    return line.startswith(EVENT_START) or (tracing_text.maybe_event(line) and tracing_text.parse(line) is not None)


def find_panic(lines: Lines) -> Panic | None:
    """The first panic in some lines (nextest's stderr)."""
    return next((p for i, (_n, text) in enumerate(lines) if text.startswith("thread ") and (p := panic_at(lines, i))),
                None)
