"""Finding the processes a test started, for tests that kill tgstore and check what it left running."""

from __future__ import annotations

from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes with `marker` (a path only one test uses) on their command line; Linux /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if marker in cmdline and state != "Z":
                found.append(int(entry.name))
    return found
