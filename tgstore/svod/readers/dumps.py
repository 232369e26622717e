"""`[dump-stage]` / `[dump-canonical]` blocks whose parts other threads' output can separate.

`print_stage` (schedule/src/optimizer/mod.rs) and `dump_canonical_stage` (ir/src/uop/canonical.rs) write a block as
three `eprintln!` calls: the header, the body (the tree, which ends with a newline, so an empty line follows it; or
the pretty JSON document), the end marker. Between them other threads print whole lines, their whole `[per-stage]`
lines and their own dump headers. A body is one write, so it is contiguous, and it belongs to a header of its kind
still waiting for one; an end closes a block of its label that has its body. So a body's label is proven when every
header that may still be waiting has that label, or when the tree's root is a graph an event of exactly one of those
labels printed (a root id is a whole graph); a body is its stage, at its own line. Otherwise its label is not proven:
it is kept with a problem. Headers of one label are alike, so what is waiting is counted by label; after a body of
unproven label the count keeps every label it may have taken (never fewer than may wait).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from tgstore.svod.drawing import INDENT, TREE_STARTS
from tgstore.svod.readers.lines import Lines
from tgstore.svod.readers.model import Problem, Stage, SvodLog, load_json, strip_ansi, tree_stage
from tgstore.svod.readers.pieces import TREE_LINE, event_at
from tgstore.svod.readers.segment import Segmenter

ROOT = re.compile(r"^\[(\d+)\] ")
TREE_END = re.compile(rf"\n(?![{TREE_STARTS} \[])|\n(?=\[\D)|\n(?= *$)", re.M)  # the first line no tree line can be
TREE_TEXT = re.compile(rf"(?:{INDENT}*\[\d+\] [^\n]*\n?)+")
JSON_END = re.compile(r"\n\}")


def _stage_field(text: str) -> str | None:
    """The `stage` of a canonical document's text (None when it is not one)."""
    try:
        document = load_json(text)
    except ValueError:
        return None
    stage = document.get("stage") if isinstance(document, dict) else None
    return stage if isinstance(stage, str) else None


class Dumps:
    def __init__(self, log: SvodLog, tracker: Segmenter, file: int, stream: int,
                 on_event: Callable[[int, str], None]) -> None:
        self.log, self.tracker, self.file, self.stream = log, tracker, file, stream
        self.on_event = on_event  # reads an event (JSON or text) glued to a document's closing brace
        self.waiting: dict[str, Counter[str]] = {"stage": Counter(), "canonical": Counter()}  # headers, no body yet
        self.filled: dict[str, Counter[str]] = {"stage": Counter(), "canonical": Counter()}  # bodies, no end yet
        self.headers: dict[tuple[str, str], list[int]] = {}  # (kind, label) -> lines of its headers still open
        self.unpaired: set[tuple[str, str]] = set()  # labels whose open blocks' bodies cannot be told apart
        # (kind, label) -> lines of its headers that may still wait for a body (one: that header is proven)
        self.waiting_lines: dict[tuple[str, str], list[int]] = {}
        self.header_lines: dict[int, str] = {}  # line -> label of the [dump-canonical] headers read

    @property
    def open(self) -> bool:
        return any(self.waiting[k] or self.filled[k] for k in self.waiting)

    def header(self, kind: str, label: str, line: int) -> None:
        self.log.dump_headers += 1
        self.waiting[kind][label] += 1
        self.headers.setdefault((kind, label), []).append(line)
        self.waiting_lines.setdefault((kind, label), []).append(line)
        if kind == "canonical":
            self.header_lines[line] = label

    def whole(self, kind: str, label: str, line: int, body: str) -> None:
        """A block read at once: header, body and end on consecutive lines, nothing between."""
        self._stage(kind, label, body, line + 1)

    def error(self, kind: str, label: str, line: int, text: str) -> None:
        """`[dump-canonical] S : JSON error: ...` (or `graph error`): the block's body is that message."""
        self.log.problems.append(Problem(self.file, line, f"Svod could not dump {label!r}:{text.split(' :', 1)[1]}",
                                         text))
        self.tracker.lost(line, {(label, f"dump-{kind}")})
        if self.waiting[kind][label]:
            self._take(kind, label)

    def end(self, kind: str, label: str, line: int) -> None:
        if self.filled[kind][label]:
            self.filled[kind][label] -= 1
        elif self.waiting[kind][label]:  # its body came with an unproven label: one of these headers took it
            self.waiting[kind][label] -= 1
            if not self.waiting[kind][label]:
                self.waiting_lines.pop((kind, label), None)
        else:
            self.log.problems.append(Problem(self.file, line, f"[dump-{kind}] {label} : end with no open block"))
            return
        if not self.waiting[kind][label] and not self.filled[kind][label]:
            self.headers.pop((kind, label), None)
            self.unpaired.discard((kind, label))  # every block of the label closed: the next body pairs again

    def _take(self, kind: str, label: str) -> int | None:
        """One header of the label takes its body: that header's line where only one may have (else None)."""
        lines = self.waiting_lines.get((kind, label), [])
        header = lines[0] if len(lines) == 1 and self.waiting[kind][label] == 1 else None
        self.waiting[kind][label] -= 1
        self.filled[kind][label] += 1
        if header is not None or not self.waiting[kind][label]:
            self.waiting_lines.pop((kind, label), None)  # which header took a body of several is not known
        return header

    def body(self, kind: str, text: str, first_line: int, lines: int) -> None:
        labels = {label for label, n in self.waiting[kind].items() if n > 0}
        if not labels:
            self.log.raw_lines += lines  # a tree outside any dump (a panic message's): kept in the file
            return
        if len(labels) > 1 and kind == "stage":  # its root is a graph an event of one waiting label printed
            root = ROOT.match(text)
            printed = labels & (self.tracker.labels_of_root(int(root.group(1))) if root else set())
            if len(printed) == 1:
                labels = printed
        elif len(labels) > 1:  # a document names its own stage (canonical.rs writes `stage`)
            named = {_stage_field(text)} & labels
            labels = named or labels
        if len(labels) == 1:
            label = labels.pop()
            # a tree is known by its block only; a document carries its stage and its kernel's name itself
            if self.waiting[kind][label] > 1 and kind == "stage":
                self.unpaired.add((kind, label))
            unpaired = (kind, label) in self.unpaired
            header = self._take(kind, label)
            line = first_line
            above = self.header_lines.get(first_line - 1) if kind == "canonical" else None
            if above is not None and header != first_line - 1:  # a reader would take it for that header's body
                line = first_line + 1
                self._after_other_header(label, above, first_line, line)
            stage = self._stage(kind, label, text, line, unpaired)
            stage.moved = line != first_line
            if unpaired:
                self._unpaired(stage, kind, label)
            return
        stage = Stage(f"dump-{kind}", f"dump-{kind}", self.file, first_line, tree_text=text, stream=self.stream)
        self.log.unplaced.append(stage)
        self.tracker.lost(first_line, {(label, f"dump-{kind}") for label in labels})
        self.log.problems.append(Problem(self.file, first_line, f"a [dump-{kind}] body printed while blocks "
                                         f"{', '.join(sorted(labels))} were open on several threads: which one it is "
                                         "is not proven; kept, filed under no stage"))

    def tree_body(self, lines: Sequence[tuple[int, str]], start: int) -> int:
        """The tree starting at lines[start]: consecutive tree lines (it ends with an empty line). Returns the index
        after it."""
        whole = lines.span(start, TREE_END) if isinstance(lines, Lines) else None
        if whole is not None and TREE_TEXT.fullmatch(whole[1]):  # the common case, found in the file's text at once
            end, text = whole
            self.body("stage", text.rstrip("\n") + "\n", lines[start][0], end - start)
            return end
        n = start
        body = []
        while n < len(lines):
            text = lines[n][1]
            if "\x1b" in text or text.endswith("\r"):
                text = strip_ansi(text).rstrip("\r")
            if not TREE_LINE.match(text):
                break
            body.append(text)
            n += 1
        self.body("stage", "\n".join(body) + "\n", lines[start][0], len(body))
        return n

    def json_body(self, lines: Sequence[tuple[int, str]], n: int) -> int:
        """A pretty JSON document whose `{` is lines[n-1], up to its `}` at column 0; another thread's event may be
        glued to that `}` (it landed before the eprintln's newline). Returns the index after it."""
        first = lines[n - 1][0]
        whole = lines.span(n - 1, JSON_END, inclusive=True) if isinstance(lines, Lines) else None
        if whole is not None:  # the common case, found in the file's text at once
            end, text = whole
            last_newline = text.rfind("\n")
            closing = strip_ansi(text[last_newline + 1:])  # `}`, maybe with an event glued on (JSON or text)
            cut = event_at(closing)
            body_text = text[:last_newline + 1] + closing[:cut] if cut > 0 else text
            self.body("canonical", body_text + "\n", first, end - n + 1)
            if cut > 0:
                self.on_event(lines[end - 1][0], closing[cut:])
            return end
        body = ["{"]
        glued = None
        while n < len(lines):
            number, text = lines[n]
            if "\x1b" in text or text.endswith("\r"):
                text = strip_ansi(text).rstrip("\r")
            n += 1
            if text.startswith("}"):
                cut = event_at(text)
                body.append(text[:cut] if cut > 0 else text)
                glued = (number, text[cut:]) if cut > 0 else None
                break
            body.append(text)
        self.body("canonical", "\n".join(body) + "\n", first, len(body))
        if glued is not None:
            self.on_event(*glued)
        return n

    def close(self) -> None:
        """Blocks never closed (a cut log): each with a problem; what their bodies had was stored with them."""
        for kind in self.waiting:
            for label in sorted(set(self.waiting[kind]) | set(self.filled[kind])):
                if self.waiting[kind][label] + self.filled[kind][label] <= 0:
                    continue
                end = f"[dump-{kind}] {label} : end"
                self.log.problems.append(Problem(self.file, self.headers.get((kind, label), [1])[0],
                                                 f"[dump-{kind}] {label} is never closed (no '{end}')"
                                                 + ("; what it printed is kept" if self.filled[kind][label] else
                                                    " and has no body; the lines are kept in the file"), None))
            self.waiting[kind].clear()
            self.filled[kind].clear()
        self.headers.clear()
        self.waiting_lines.clear()
        self.unpaired.clear()

    def _after_other_header(self, label: str, above: str, first_line: int, line: int) -> None:
        """A document printed right after a header that is not proven to be its own (other threads' blocks open): it
        names its kernel and its stage, not its header; stored a line down so that no reader takes it for the
        header's above."""
        opened = ", ".join(map(str, self.headers.get(("canonical", label), [])))
        self.log.problems.append(Problem(self.file, first_line, f"a [dump-canonical] {label} document printed at line "
                                         f"{first_line}, right after a [dump-canonical] {above} header that is not "
                                         f"proven its own (other threads' blocks open; {label} headers at lines "
                                         f"{opened}): filed by the kernel it names, stored at line {line}"))

    def _unpaired(self, stage: Stage, kind: str, label: str) -> None:
        """A body printed while several blocks of its label were open (or after one such): its block, and so its
        kernel, is not proven. Its own node count is left empty (the stored tree has it): the row cannot say which
        block's count it is."""
        stage.unpaired = True
        stage.node_count = None
        opened = ", ".join(map(str, self.headers.get((kind, label), [])))
        self.log.problems.append(Problem(self.file, stage.line, f"a [dump-{kind}] {label} body printed while several "
                                         f"[dump-{kind}] {label} blocks were open on several threads (headers at "
                                         f"lines {opened}): which block, and so which kernel, it is cannot be told "
                                         "from the text; kept, filed under no kernel and no fragment"))

    def _stage(self, kind: str, label: str, body: str, line: int, unpaired: bool = False) -> Stage:
        text = body.strip("\n") + "\n"
        stage = Stage(label, f"dump-{kind}", self.file, line, stream=self.stream, unpaired=unpaired)
        if kind == "stage":
            tree_stage(stage, text, self.log, line)
        else:
            try:
                stage.canonical = load_json(text)
            except ValueError as e:
                stage.tree_text = text
                self.log.problems.append(Problem(self.file, line, f"canonical dump {label!r} is not JSON ({e}); "
                                                 "kept as text"))
        self.tracker.add(stage)
        return stage
