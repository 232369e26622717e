"""Checking the renderer, stage and backend names a user gives before anything runs: an unknown name is refused with
the list of valid ones, instead of an extraction whose every program says "renderer unavailable" or that quietly
schedules for another device."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from tgstore.extract.child.lower import ALL_RENDERERS

# Devices renamed between eras: either name selects the device of that era (see child/header.py device_env).
ALIASES = {"CPU": "CLANG", "CLANG": "CPU", "GPU": "CL", "CL": "GPU"}
_DEVICE = re.compile(r"[A-Z][A-Z0-9_]*")


class UnknownName(ValueError):
    """A renderer, stage or backend name this tgstore or this tinygrad does not know; the message lists them."""


def check_renderers(names: list[str] | None, option: str = "--renderers") -> None:
    """`names` (upper case) are renderers the extractor knows, or the single word ALL (NONE too, for --stages)."""
    words = {"ALL", "NONE"} if option == "--stages" else {"ALL"}
    if not names or (len(names) == 1 and names[0].upper() in words):
        return
    unknown = [n for n in names if n.upper() not in ALL_RENDERERS]
    if unknown:
        words = "'all'" + (" or 'none'" if option == "--stages" else "")
        raise UnknownName(f"{option}: unknown renderer{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(map(repr, unknown))}; the renderers are: {', '.join(ALL_RENDERERS)} "
                          f"(comma-separated, or {words})")


def devices_in(file_names: Iterable[str]) -> set[str]:
    """Device names from the names of tinygrad/runtime's files (ops_<device>.py)."""
    return {Path(f).name[4:-3].upper() for f in file_names if Path(f).name.startswith("ops_")
            and f.endswith(".py")}


def installed_devices(root: Path) -> set[str]:
    """The devices a tinygrad at `root` (the directory holding tinygrad/) has, read from its files."""
    return devices_in(p.name for p in (root / "tinygrad" / "runtime").glob("ops_*.py"))


def devices_at(repo: Path, sha: str) -> set[str]:
    """The devices tinygrad has at commit `sha` of `repo` (empty when git cannot tell)."""
    proc = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", f"{sha}:tinygrad/runtime"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return devices_in(proc.stdout.split()) if proc.returncode == 0 else set()


def check_backend(backend: str, devices: set[str]) -> None:
    """`backend` names one of `devices` (or its other era's name); `devices` empty: only its spelling is checked."""
    name = backend.strip().upper()
    if not _DEVICE.fullmatch(name):
        listed = f"; this tinygrad's devices are: {', '.join(sorted(devices))}" if devices else ""
        raise UnknownName(f"--backend {backend!r} is not a device name (letters, digits and _){listed}")
    if devices and name not in devices and ALIASES.get(name) not in devices:
        raise UnknownName(f"--backend {backend!r}: this tinygrad has no such device; its devices are: "
                          f"{', '.join(sorted(devices))}")
