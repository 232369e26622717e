"""The paths an ingest-svod call names, read as text, and refused (one line, nothing stored) when they cannot be:
missing, a device, an empty directory or file, too large, UTF-16, binary, not UTF-8. No SQLAlchemy: the command
refuses a bad path before it opens the database (`precheck`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from tgstore.svod import drawing

MAX_FILE_BYTES = 512 * 1024 * 1024
PRECHECK_BYTES = 1024 * 1024  # a file up to this size is read whole by the precheck; a larger one is read once, later
CHUNK_BYTES = 4 * 1024 * 1024
# a file this large is read narrowed (tgstore.svod.drawing): a smaller one's text costs less memory at two bytes a
# character than narrowing it and widening what is read costs time (0.4 CPU s on a 20 MB log)
NARROW_FROM_BYTES = 32 * 1024 * 1024


class SvodLogError(Exception):
    """A path that cannot be stored at all (missing, not text, empty, not Svod output); nothing was written."""


def chunks(path: Path, size: int) -> Iterator[bytes]:
    """The first `size` bytes of the file (its size when it was opened: a log still being written is read as it
    was then) in pieces of about CHUNK_BYTES, each ending at a line's end but the last: no character is cut."""
    with path.open("rb") as f:
        rest, left = b"", size
        while left > 0:
            block = f.read(min(CHUNK_BYTES, left))
            if not block:
                break
            left -= len(block)
            block = rest + block if rest else block
            cut = block.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a piece
                rest = block
                continue
            yield block[:cut] if cut < len(block) else block
            rest = block[cut:]
        if rest:
            yield rest


def _text(path: Path, keep: Callable[[Path, int, str], None] | None = None, narrow: bool = False
          ) -> tuple[str, bool]:
    """The file's text, read a piece at a time (its bytes are never held whole beside it), and whether it was
    narrowed (`narrow`: the tree-drawing characters read as one-byte stand-ins, tgstore.svod.drawing, if the file
    is NARROW_FROM_BYTES or more and holds no stand-in itself). `keep(path, size, text)` is called with the text
    read (ingest stores the file from its bytes, reading them again a piece at a time)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SvodLogError(f"{path}: {size} bytes, more than tgstore reads ({MAX_FILE_BYTES}); nothing stored")
        text = _Text(narrow and size >= NARROW_FROM_BYTES)
        for index, chunk in enumerate(chunks(path, size)):
            if index == 0 and chunk.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise SvodLogError(f"{path}: UTF-16 text (a PowerShell redirect?); convert it to UTF-8; nothing stored")
            if b"\x00" in chunk:
                raise SvodLogError(f"{path}: not a text file (it contains NUL bytes); nothing stored")
            try:
                text.add(chunk.decode("utf-8"))
            except UnicodeDecodeError as exc:  # SvodLogError rolls back what keep stored
                line = text.lines + chunk.count(b"\n", 0, exc.start) + 1
                raise SvodLogError(f"{path}:{line}: not UTF-8 text ({exc.reason}); nothing stored") from None
            text.lines += chunk.count(b"\n")
    except OSError as exc:
        raise SvodLogError(f"{path}: cannot read ({exc.strerror}); nothing stored") from None
    whole = text.whole()
    if keep is not None:
        keep(path, size, whole)
    return whole, text.narrow


class _Text:
    """A file's text put together a piece at a time: while it is narrowed and every character fits one byte, as
    latin-1 bytes, decoded once at the end (parts joined would be held twice, and each at two bytes a character)."""

    def __init__(self, narrow: bool) -> None:
        self.narrow, self.lines = narrow, 0
        self.latin: bytearray | None = bytearray() if narrow else None
        self.parts: list[str] = []

    def add(self, part: str) -> None:
        narrowed = drawing.narrow(part) if self.narrow else part
        if narrowed is None:  # a stand-in in the file: it is read as it is, and what was read so far too
            self.parts = [drawing.widen(p) for p in self._strings()]
            self.narrow, self.latin, narrowed = False, None, part
        if self.latin is not None:
            try:
                self.latin += narrowed.encode("latin-1")
                return
            except UnicodeEncodeError:  # a character past U+00FF: two bytes a character from here on
                self.parts, self.latin = self._strings(), None
        self.parts.append(narrowed)

    def _strings(self) -> list[str]:
        return [self.latin.decode("latin-1")] if self.latin else self.parts

    def whole(self) -> str:
        if self.latin is not None:
            whole = self.latin.decode("latin-1")
            self.latin = None
            return whole
        parts, self.parts = self.parts, []
        return parts[0] if len(parts) == 1 else "".join(parts)


def read_path(path: Path, keep: Callable[[Path, int, str], None] | None = None, empty_ok: bool = False,
              narrow: bool = False) -> list[tuple[str, str, bool]]:
    """(name, text, narrowed) of the file at `path`, or of every regular file in the directory at `path` (sorted
    by name). `keep(file, size, text)`: called with each file's text read (ingest stores the file from its bytes).
    `narrow`: read the tree-drawing characters as one-byte stand-ins where the file allows (`_text`)."""
    path = Path(path)
    if not path.exists():
        raise SvodLogError(f"{path}: no such file or directory")
    if path.is_dir():
        names = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not names:
            raise SvodLogError(f"{path}: an empty directory; nothing stored")
        return [(p.name, *_text(p, keep, narrow)) for p in names]
    if not path.is_file():
        raise SvodLogError(f"{path}: not a regular file (a device or a pipe?); nothing stored")
    text, narrowed = _text(path, keep, narrow)
    if (not text or text.isspace()) and not empty_ok:  # beside other paths an empty file is an empty stream (2>err.log)
        raise SvodLogError(f"{path}: the file is empty; nothing stored")
    return [(path.name, text, narrowed)]


def precheck(paths: Iterable[Path]) -> None:
    """Refuse, before the database is opened, the paths `read_path` would refuse: each file or directory as it is,
    and the text of each file small enough to read twice cheaply."""
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            if not files:
                raise SvodLogError(f"{path}: an empty directory; nothing stored")
            for one in (f for f in files if f.stat().st_size <= PRECHECK_BYTES):
                _text(one)
        elif not (path.is_file() and path.stat().st_size > PRECHECK_BYTES):
            read_path(path, empty_ok=len(paths) > 1)  # missing, not a regular file, empty, not text: refused here
