"""libtest's result lines torn apart by Svod's stderr, put back on lines of their own (issue 44).

With libtest's threads and `--nocapture` (stdout and stderr to one file), libtest writes a test's result as three
pieces, each flushed: `test NAME ... `, the word (`ok`, `FAILED`, `ignored`; ANSI-coloured with `--color=always`)
and `\\n` (rust-lang/rust library/test/src/formatters/pretty.rs, `write_result`). Rust's stderr is unbuffered, so
Svod's `eprintln!`s reach the file one format piece at a time (`[per-stage] `, the label, ` : node_count=`, the
count, `\\n`), and the pieces of the two streams interleave, as the real emitter shows (tests/svod_emitter/):

    [per-stage] 20-final_rewrite : node_count=test two_programs::amd ... 24ok
    <a blank line: the second of the two newlines>
    test two_programs::clang ... [per-stage] ok19e-move_gates_from_index
     : node_count=23

`untangle` takes each result whose pieces are not a line of their own out of the lines it cut, and puts it on a
line of its own: the file keeps its number of lines, and every other line stays on the line it started on (where
the emitter corpus and a person looking at the file find it). With libtest's threads it also takes out another
thread's whole event (stdout, one write) cut into a stderr line (`[per-stage] X : node_count={"timestamp":...}`,
then `24`), onto the line after: each line then holds one thread's output, and split_tests can give it to the test
its thread names. The whole events that landed between the two pieces keep their order after it, so each of them
(up to EVENTS_BETWEEN) is stored one line after the file's line for it: the order of one thread's events is what the
readers rely on, a line number off by one is said here. (With one test at a time, the test reader reads a glued
event where it lies: pieces.py.) A tearing is undone only where what remains reads as whole lines of known kinds
(grammar.LINE_KINDS) and the text as it is does not; anything else is left as it is.
"""

from __future__ import annotations

import re

from tgstore.svod.readers import outcomes, tracing_text
from tgstore.svod.readers.grammar import THREAD_NAME, kind_of
from tgstore.svod.readers.model import strip_ansi
from tgstore.svod.readers.pieces import EVENT_START, PER_STAGE, TEXT_EVENT_START

NAME = re.compile(r"test (?P<name>\S+)(?: - [\w ]+)? \.\.\. ")  # libtest's first piece
WORD = re.compile(r"(?:\x1b\[[\d;]*m)*(?:ok|FAILED|ignored)(?:\x1b\[[\d;]*m)*")  # its second
# where a tearing may be: libtest's first piece, or (with its threads) an event cut into another line: JSON, or
# tracing's text formats (a timestamp not at its line's start, not JSON's own, not after tracing's dim colour)
RESULT_SUSPECT = re.compile(r"test \S+(?: - [\w ]+)? \.\.\. ")
SUSPECT = re.compile(r"test \S+(?: - [\w ]+)? \.\.\. |(?<=[^\n])\{\"timestamp\""
                     r"|(?<=[^\n\"])(?<!\x1b\[2m)(?:\x1b\[[\d;]*m)*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")
NEWLINE = re.compile("\n")
NON_SPACE = re.compile(r"\S")
RUNNING = re.compile(r"running \d+ tests?(?=\n|$)")  # matched where a line starts
REACH = 4  # lines after the first piece's line that the word and the newline may land on
WORDS_TRIED = 4  # the first few words after the first piece (a Svod line may hold an `ok` of its own)
# other threads' whole events that may land between two pieces of one stderr line (a loaded machine: 8 seen)
EVENTS_BETWEEN = 64


def untangle(text: str) -> str:
    """The text with every torn line put back apart (the same text, not a copy, where none is torn). One result
    torn into a line another result tore too (two tests ending within a few writes) is left as it is."""
    out: list[str] = []
    done = 0  # text[:done] is settled
    threaded = _libtest_threads(text)
    for suspect in (SUSPECT if threaded else RESULT_SUSPECT).finditer(text):
        if suspect.start() < done:
            continue
        first = text.rfind("\n", 0, suspect.start()) + 1
        ends = _with_events(text, _line_ends(text, first, REACH + 2))
        lines = [text[a:b] for a, b in zip([first, *(e + 1 for e in ends[:-1])], ends, strict=True)]
        if suspect.group().startswith("test "):
            window = _untangled_result(lines, threaded)
        else:  # libtest's threads: an event must be a line of its own to go to the test its thread names
            window = _untangled_event(lines, suspect.start() - first)
        if window is not None:
            out += [text[done:first], "\n".join(window)]
            done = ends[len(window) - 1]
    return text if not out else "".join([*out, text[done:]])


def _line_ends(text: str, first: int, count: int) -> list[int]:
    """Where the `count` lines from `first` on end (fewer at the end of the text; the last may end the text)."""
    ends: list[int] = []
    at = first
    while len(ends) < count and at <= len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        ends.append(end)
        at = end + 1
        if end == len(text):
            break
    return ends


def _with_events(text: str, ends: list[int]) -> list[int]:
    """The window's line ends, on past a run of whole events it ends in (up to EVENTS_BETWEEN more lines) and the
    line after them: where the rest of a stderr line torn by them lands."""
    while 1 < len(ends) < REACH + 2 + EVENTS_BETWEEN and ends[-1] < len(text):
        if not _whole_event(text[ends[-2] + 1:ends[-1]]):
            break
        end = text.find("\n", ends[-1] + 1)
        ends.append(len(text) if end < 0 else end)
    return ends


def _untangled_event(lines: list[str], cut: int) -> list[str] | None:
    """`[per-stage] 15-early_symbolic : node_count={"timestamp":...}` then `24`: another thread's whole event (one
    write on stdout) between two pieces of a stderr line. The line put back together stays where it started, the
    event goes on the line after it (with the events that landed after it); None where the rest is not whole."""
    head, event = lines[0][:cut], lines[0][cut:]
    plain_head, plain_event = strip_ansi(head), strip_ansi(event).rstrip("\r")
    if not plain_head.strip() or plain_head.startswith(EVENT_START) or TEXT_EVENT_START.match(plain_head):
        return None  # the event starts its line, or it is inside another event
    if not (plain_event.endswith("}") if plain_event.startswith("{") else tracing_text.parse(plain_event)):
        return None
    for n in range(1, len(lines)):
        if not _starts_event(lines[n]):  # the rest of the stderr line (events before it are whole)
            whole = head + lines[n]
            return [whole, event, *lines[1:n]] if _whole(whole) else None
    return None


def _libtest_threads(text: str) -> bool:
    """libtest ran tests on its threads: output between `running N tests` and the first `test NAME ... ` (with one
    thread, libtest writes a test's name before the test runs, so nothing comes first; with threads, a test's name
    and result together when it ends, after its output)."""
    for running in _running_lines(text):
        first = NAME.search(text, running.end())
        printed = NON_SPACE.search(text, running.end())  # no slice: the output before a first test may be 100 MB
        if printed and (first is None or printed.start() < first.start()) \
                and not text.startswith("test result: ", printed.start()):  # `running 0 tests`: its section ends
            return True
    return False


def _running_lines(text: str):
    """libtest's `running N tests` lines (a str.find walk: a multi-line regex over a 100 MB log costs more)."""
    at = text.find("running ")
    while at >= 0:
        if at == 0 or text[at - 1] == "\n":
            found = RUNNING.match(text, at)
            if found:
                yield found
        at = text.find("running ", at + 8)


def _starts_event(line: str) -> bool:
    return line.startswith(EVENT_START) or TEXT_EVENT_START.match(strip_ansi(line)) is not None


def _untangled_result(lines: list[str], threaded: bool) -> list[str] | None:
    piece = NAME.search(lines[0])
    if piece is None or _reads_as_is(lines, piece, threaded):
        return None
    return _untangled(lines, piece)


def _whole(line: str) -> bool:
    """A line of a known kind, whole: nothing of another stream's pieces left in it."""
    line = strip_ansi(line).rstrip("\r")
    if not line.strip():
        return True
    kind = kind_of(line)
    if kind == "per-stage":
        return PER_STAGE.match(line) is not None  # anchored at the count: `=24ok` is not whole
    if kind == "tracing-json":
        return line.endswith("}")
    if kind == "skip":
        skip = outcomes.skip_line(line)
        return skip is not None and skip.known
    if kind == "libtest-start":  # another test's whole result line (a torn one is not whole)
        piece = NAME.match(line)
        return piece is not None and outcomes.libtest_result(line[piece.end():]) is not None
    return kind is not None


def _reads_as_is(lines: list[str], piece: re.Match[str], threaded: bool) -> bool:
    """`test NAME ... ` at the start of its line with nothing, a result or a whole line after it (libtest's own
    forms: a whole result, or `--test-threads=1` joining a test's first output line to its start; with libtest's
    threads, a whole line after the name is another stream's, landed between the name and the result)."""
    if piece.start() != 0:
        return False
    rest = lines[0][piece.end():]
    if threaded:  # the name and the word are written one after the other: anything between them is torn in
        return outcomes.libtest_result(strip_ansi(rest)) is not None
    if rest.startswith(EVENT_START) and (thread := THREAD_NAME.search(rest)) and thread.group(1) != piece["name"]:
        return False  # another thread's event: not the test's first output line (libtest names its thread after it)
    return not rest.strip() or outcomes.libtest_result(strip_ansi(rest)) is not None or _whole(rest)


def _untangled(lines: list[str], piece: re.Match[str]) -> list[str] | None:
    """The lines with the result's three pieces taken out and put on a line of their own, or None where no way of
    taking them out leaves whole lines."""
    prefix, after = lines[0][:piece.start()], lines[0][piece.end():]
    tail = "\n".join([after, *lines[1:]]) + "\n"  # the window's last line ends (or the text does)
    newlines = [m.start() for m in NEWLINE.finditer(tail)]
    words = list(WORD.finditer(tail))[:WORDS_TRIED]
    for word in words:
        for k, newline in enumerate(newlines):
            if newline < word.end() or k + 1 >= len(newlines) or k > REACH:
                continue
            # the stderr line goes on after the newline, or after other threads' whole events (stdout, like libtest)
            for events in _goes_on(tail, newlines, k + 1):
                on = newlines[events - 1] + 1
                # the other stream's text: what came before the pieces, between them, and on to the end of its line
                rest = prefix + tail[:word.start()] + tail[word.end():newline] + tail[on:newlines[events]]
                remaining = rest.split("\n")
                if all(_whole(line) for line in remaining):
                    kept = [(0, word.start()), (word.end(), newline), (on, newlines[events])]
                    result = lines[0][piece.start():piece.end()] + word.group()
                    fixed = {n: tail[newlines[n - 1] + 1:newlines[n]] for n in range(k + 1, events)}
                    return _placed(remaining, result, tail, [(a, b) for a, b in kept if a < b], fixed)
    return None


def _goes_on(tail: str, newlines: list[int], first: int) -> list[int]:
    """The lines of `tail` the torn stderr line may go on at: the one after libtest's newline, else the first one
    after the whole events that follow it."""
    events = first
    while events + 1 < len(newlines) and _whole_event(tail[newlines[events - 1] + 1:newlines[events]]):
        events += 1
    return [first] if events == first else [first, events]


def _whole_event(line: str) -> bool:
    return line.startswith(EVENT_START) and line.rstrip("\r").endswith("}")


def _placed(remaining: list[str], result: str, tail: str, kept: list[tuple[int, int]],
            fixed: dict[int, str]) -> list[str]:
    """The window's lines: the other stream's lines each on the line it started on, whole events between the
    pieces (`fixed`) on their own lines, the result on the first line left (the line count stays: the pieces took
    one newline, the result line gives it back). `kept` are the ranges of `tail` (the text from the first piece
    on) that are the other stream's."""
    starts = {0}  # the first remaining line starts on the first piece's line (before or right after the piece)
    for n, (first, stop) in enumerate(kept):
        at = tail.find("\n", first, stop)
        while at >= 0:
            following = at + 1 if at + 1 < stop else kept[n + 1][0] if n + 1 < len(kept) else at + 1
            starts.add(tail.count("\n", 0, following))  # the line the next remaining line's first character is on
            at = tail.find("\n", at + 1, stop)
    window: list[str | None] = [None] * (len(remaining) + 1 + len(fixed))
    for n, line in fixed.items():
        window[n] = line
    free = [n for n in range(len(window)) if n not in fixed]  # the other stream's lines, in order, and the result
    slot = next(n for n in free if n not in starts)
    for n, line in zip([n for n in free if n != slot], remaining, strict=True):
        window[n] = line
    window[slot] = result
    return [line for line in window if line is not None]
