"""The last line of defence: whatever a command did not turn into a one-line error becomes one here (exit 1), with
the traceback only when TGSTORE_DEBUG=1 asks for it."""

from __future__ import annotations

import sys
from typing import Any

import typer

from tgstore import settings


class OneLineTyper(typer.Typer):
    """A Typer app whose unexpected exceptions print `error: ...` on one line instead of a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt):
            raise
        except settings.SettingError as exc:
            _exit_with(str(exc))
        except Exception as exc:  # noqa: BLE001 - the point: no traceback for anything a user can cause
            if settings.debug():
                raise
            kind = type(exc).__name__
            text = str(exc).strip().splitlines()
            _exit_with(f"{kind}: {text[0][:500] if text else 'no message'} (this is a tgstore bug or an input it "
                       "does not check yet; TGSTORE_DEBUG=1 shows the traceback)")


def _exit_with(message: str) -> None:
    from tgstore.cli.output import error

    try:
        error(message)
    finally:
        sys.exit(1)
