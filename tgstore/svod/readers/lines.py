"""A file's text and some of its lines as (number, line), without a string held per line."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import overload

NEWLINE = re.compile("\n")


def find_all(text: str, piece: str, start: int = 0) -> Iterator[int]:
    """Every offset of `piece` in `text` from `start`, overlapping ones too."""
    at = text.find(piece, start)
    while at >= 0:
        yield at
        at = text.find(piece, at + 1)


class FileText:
    """A file's text and where each of its lines starts (lines as text.split("\\n") cuts them)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.narrowed = False  # its drawing characters are stand-ins (tgstore.svod.drawing): widen what is cut out
        self.starts = array("i", [0])  # 4 bytes an offset: a file is at most 512 MiB (log_paths.MAX_FILE_BYTES)
        self.starts.extend(m.end() for m in NEWLINE.finditer(text))  # no line string made (split made 264,000)

    def line(self, number: int) -> str:
        start = self.starts[number - 1]
        end = self.starts[number] - 1 if number < len(self.starts) else len(self.text)
        return self.text[start:end]

    def number_at(self, offset: int) -> int:
        """The number of the line that holds `offset`."""
        return bisect_right(self.starts, offset)


class Lines(Sequence[tuple[int, str]]):
    """Some lines of a file as (number, line) without a string held per line: each is cut from the file's text when
    it is read. A 30 MB log split into 200,000 line strings held about 100 MB more, and the heap they left
    fragmented kept most of it (bench/bench_svod_log.py)."""

    def __init__(self, file: FileText) -> None:
        self.file = file
        self.numbers = array("i")
        self.changed: dict[int, str] = {}  # index -> the line as read where it is not the file's (ANSI, tails)

    def add(self, number: int, line: str | None = None) -> None:
        if line is not None:
            self.changed[len(self.numbers)] = line
        self.numbers.append(number)

    def add_range(self, first: int, stop: int) -> None:
        """Lines first..stop-1, as the file has them."""
        self.numbers.extend(range(first, stop))

    def __len__(self) -> int:
        return len(self.numbers)

    def _at(self, i: int) -> tuple[int, str]:
        found = self.changed.get(i)
        number = self.numbers[i]
        return number, found if found is not None else self.file.line(number)

    @overload
    def __getitem__(self, i: int) -> tuple[int, str]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, str]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, str] | list[tuple[int, str]]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(len(self.numbers)))]
        if i < 0:
            i += len(self.numbers)
            if i < 0:
                raise IndexError(i - len(self.numbers))
        return self._at(i)  # array indexing raises the IndexError past the end

    def __iter__(self) -> Iterator[tuple[int, str]]:
        return (self._at(i) for i in range(len(self)))

    def any_starts(self, prefixes: tuple[str, ...]) -> bool:
        """Whether any of the lines starts with one of `prefixes` (read in place, no line cut out)."""
        text, starts = self.file.text, self.file.starts
        return any(text.startswith(prefixes, starts[number - 1]) for i, number in enumerate(self.numbers)
                   if i not in self.changed) or any(line.startswith(prefixes) for line in self.changed.values())

    def block_until(self, n: int, end_line: str, foreign: tuple[str, ...]) -> tuple[int, str] | None:
        """The lines from n up to the first that is `end_line`, as one text, and that line's index: when they are
        consecutive lines of the file as printed (no ANSI, no CR, no other part's lines) and none starts with one
        of the `foreign` prefixes. None when that does not hold: the caller reads the lines one by one."""
        if not 0 < n < len(self.numbers):
            return None
        file, first = self.file, self.numbers[n]
        start = file.starts[first - 1]
        at = file.text.find("\n" + end_line, start - 1) if start > 0 else -1
        if at < 0:
            return None
        last = file.number_at(at + 1)
        j = n + last - first
        if j >= len(self.numbers) or self.numbers[j] != last or file.line(last) != end_line \
                or any(n <= k <= j for k in self.changed):
            return None
        body = file.text[start:at] if j > n else ""
        if body.startswith(foreign) or any("\n" + prefix in body for prefix in foreign):
            return None
        return j, body

    def span(self, n: int, boundary: re.Pattern[str], inclusive: bool = False) -> tuple[int, str] | None:
        """The lines from n on up to the first newline `boundary` matches at (the line after it excluded, or with
        `inclusive` that line included), as one text, and the index after them: when they are consecutive lines of
        the file as printed (no ANSI, no CR, no other part's lines). None otherwise: the caller reads line by line."""
        if not 0 <= n < len(self.numbers):
            return None
        file, first = self.file, self.numbers[n]
        start = file.starts[first - 1]
        m = boundary.search(file.text, start - 1 if start else 0)
        if m is None or m.start() < start - 1:
            return None
        cut = m.start()
        if inclusive:
            nl = file.text.find("\n", m.end())
            cut = nl if nl >= 0 else len(file.text)
        last = file.number_at(cut - 1) if cut > start else first
        j = n + last - first
        if cut <= start or j >= len(self.numbers) or self.numbers[j] != last or any(n <= k <= j for k in self.changed):
            return None
        return j + 1, file.text[start:cut]

    def merged(self, other: Lines) -> Lines:
        """Both parts' lines (of the same file) in file order."""
        out = Lines(self.file)
        picks = sorted([(n, 0, i) for i, n in enumerate(self.numbers)] + [(n, 1, i) for i, n in
                                                                          enumerate(other.numbers)])
        for number, which, i in picks:
            out.add(number, (self, other)[which].changed.get(i))
        return out
