"""What the CLI prints, and how.

Text from databases, bundles, logs and git is data: it is never read as Rich markup (both consoles have markup off)
and its control characters are shown escaped (`\\x1b`), so a commit subject cannot recolour or rewrite the terminal.
Errors are one line on stderr. Tables are Rich tables on a terminal and plain aligned text in a pipe.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# C0 and C1 control characters except tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

err = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
out = Console(markup=False, highlight=False, soft_wrap=True)


def safe(value: Any) -> str:
    """`value` as text with control characters escaped (tab and newline kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if value is None else str(value))


def one_line(value: Any) -> str:
    """`safe(value)` with line breaks folded into "; "."""
    return "; ".join(part.strip() for part in safe(value).replace("\t", " ").splitlines() if part.strip())


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 case`, `2 cases`; `many` for irregular plurals (`pass` -> `passes`)."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def error(message: str) -> None:
    """`error: MESSAGE` on one line of stderr."""
    text = Text("error:", style="red")
    text.append(f" {one_line(message)}")
    err.print(text)


def note(message: str, style: str | None = None) -> None:
    """A line of progress or information on stderr."""
    err.print(Text(safe(message), style=style or ""))


def emit(message: str, style: str | None = None) -> None:
    """A line of result on stdout."""
    out.print(Text(safe(message), style=style or ""))


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
    """A Rich table on a terminal. In a pipe: plain columns separated by two spaces, or, when a value spans lines
    (source code), one block per row with each column on its own line, like psql's expanded display."""
    cells = [[safe(v) for v in row] for row in rows]
    if out.is_terminal:
        table = Table(title=title, show_lines=any("\n" in v for row in cells for v in row))
        for column in columns:
            table.add_column(safe(column), overflow="fold")
        for row in cells:
            table.add_row(*(Text(v) for v in row))
        out.print(table)
        return
    write = sys.stdout.write
    if any("\n" in v for row in cells for v in row):
        label_width = max((len(c) for c in columns), default=0)
        for n, row in enumerate(cells, start=1):
            write(f"-[ row {n} ]" + "-" * max(0, label_width - 4) + "\n")
            for column, value in zip(columns, row, strict=True):
                lines = value.split("\n")
                write(f"{column:<{label_width}} | {lines[0]}\n")
                for line in lines[1:]:
                    write(f"{'':<{label_width}} | {line}\n")
        return
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    for row in [list(columns), *cells]:
        write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
