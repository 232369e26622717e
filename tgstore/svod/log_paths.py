"""The paths an ingest-svod call names, read as text, and refused (one line, nothing stored) when they cannot be:
missing, a device, an empty directory or file, too large, UTF-16, binary, not UTF-8. No SQLAlchemy: the command
refuses a bad path before it opens the database (`precheck`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

MAX_FILE_BYTES = 512 * 1024 * 1024
PRECHECK_BYTES = 1024 * 1024  # a file up to this size is read whole by the precheck; a larger one is read once, later


class SvodLogError(Exception):
    """A path that cannot be stored at all (missing, not text, empty, not Svod output); nothing was written."""


def _text(path: Path, keep: Callable[[bytes, str], Callable[[str], None]] | None = None) -> str:
    """The file's text; `keep(data, str(path))` is given its bytes first (ingest stores them, before the text exists
    beside them), and what it returns is given the text."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SvodLogError(f"{path}: {size} bytes, more than tgstore reads ({MAX_FILE_BYTES}); nothing stored")
        data = path.read_bytes()
    except OSError as exc:
        raise SvodLogError(f"{path}: cannot read ({exc.strerror}); nothing stored") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SvodLogError(f"{path}: UTF-16 text (a PowerShell redirect?); convert it to UTF-8; nothing stored")
    if b"\x00" in data:
        raise SvodLogError(f"{path}: not a text file (it contains NUL bytes); nothing stored")
    name_text = keep(data, str(path)) if keep is not None else None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # SvodLogError rolls back what keep stored
        line = data.count(b"\n", 0, exc.start) + 1
        raise SvodLogError(f"{path}:{line}: not UTF-8 text ({exc.reason}); nothing stored") from None
    if name_text is not None:
        name_text(text)
    return text


def read_path(path: Path, keep: Callable[[bytes, str], Callable[[str], None]] | None = None,
              empty_ok: bool = False) -> list[tuple[str, str]]:
    """(name, text) of the file at `path`, or of every regular file in the directory at `path` (sorted by name).
    `keep(data, str(file))`: called with each file's bytes (ingest stores the text from them), its result with the
    text."""
    path = Path(path)
    if not path.exists():
        raise SvodLogError(f"{path}: no such file or directory")
    if path.is_dir():
        names = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not names:
            raise SvodLogError(f"{path}: an empty directory; nothing stored")
        return [(p.name, _text(p, keep)) for p in names]
    if not path.is_file():
        raise SvodLogError(f"{path}: not a regular file (a device or a pipe?); nothing stored")
    text = _text(path, keep)
    if (not text or text.isspace()) and not empty_ok:  # beside other paths an empty file is an empty stream (2>err.log)
        raise SvodLogError(f"{path}: the file is empty; nothing stored")
    return [(path.name, text)]


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
