"""The last line of defence: whatever a command did not turn into a one-line error becomes one here (exit 1), with
the traceback only when TGSTORE_DEBUG=1 asks for it. Click's own usage errors (an unknown option or command, a value
out of range) are one line too, naming the `--help` to read (exit 2, as Click's)."""

from __future__ import annotations

import sys
from typing import Any

import typer

from tgstore import settings
from tgstore.cli.output import error


def _click_class(name: str) -> type[Exception]:
    """Click's exception class of that name, found from typer's BadParameter: newer typers vendor Click."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


USAGE_ERROR, CLICK_EXCEPTION = _click_class("UsageError"), _click_class("ClickException")


class OneLineTyper(typer.Typer):
    """A Typer app whose unexpected exceptions print `error: ...` on one line instead of a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            # Click's standalone mode prints a usage error as a usage block of several lines: handled here instead
            code = super().__call__(*args, standalone_mode=False, **kwargs)
        except (SystemExit, KeyboardInterrupt):
            raise
        except USAGE_ERROR as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group (`tgstore`, `tgstore db`): its help
                exc.show()  # type: ignore[attr-defined]
                sys.exit(exc.exit_code)  # type: ignore[attr-defined]
            ctx = getattr(exc, "ctx", None)
            command = ctx.command_path if ctx is not None else "tgstore"
            _exit_with(f"{exc.format_message()} (see {command} --help)", exc.exit_code)  # type: ignore[attr-defined]
        except typer.Abort:
            _exit_with("aborted")
        except CLICK_EXCEPTION as exc:
            _exit_with(exc.format_message(), exc.exit_code)  # type: ignore[attr-defined]
        except settings.SettingError as exc:
            _exit_with(str(exc))
        except Exception as exc:  # noqa: BLE001 - the point: no traceback for anything a user can cause
            if settings.debug():
                raise
            kind = type(exc).__name__
            text = str(exc).strip().splitlines()
            _exit_with(f"{kind}: {text[0][:500] if text else 'no message'} (this is a tgstore bug or an input it "
                       "does not check yet; TGSTORE_DEBUG=1 shows the traceback)")
        # without standalone mode Click returns what `typer.Exit(code)` carried (commands return nothing else)
        sys.exit(code if isinstance(code, int) else 0)


def _exit_with(message: str, code: int = 1) -> None:
    try:
        error(message)
    finally:
        sys.exit(code)
