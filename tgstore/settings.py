"""tgstore's environment variables, read when used and validated: a bad value is one line naming the variable."""

from __future__ import annotations

import math
import os


class SettingError(ValueError):
    """An environment variable whose value tgstore cannot use; the message names it."""


def seconds(name: str, default: float, *, maximum: float = 7 * 24 * 3600) -> float:
    """A positive, finite number of seconds from the environment variable `name` (unset or empty: `default`)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a number of seconds (e.g. {name}=30)") from None
    if not math.isfinite(value) or value < 0 or value > maximum:
        raise SettingError(f"{name}={raw!r} must be a number of seconds between 0 and {maximum:g}")
    return value


def busy_timeout_ms() -> int:
    """How long a writer waits for another writer (an ingest, a sweep) before giving up: TGSTORE_BUSY_TIMEOUT."""
    return int(seconds("TGSTORE_BUSY_TIMEOUT", 30.0) * 1000)


def debug() -> bool:
    """TGSTORE_DEBUG=1: an unexpected error prints its traceback instead of one line."""
    return os.environ.get("TGSTORE_DEBUG", "").strip() not in ("", "0")
