"""The Typer app and its `db` group, on which each command module registers its commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from tgstore import __version__
from tgstore.cli.common import DEFAULT_DB, DbOption, set_db
from tgstore.cli.safety import OneLineTyper


def hoist_db(args: list[str]) -> list[str]:
    """`--db PATH` / `--db=PATH` moved to the front, where the app's option reads it: `tgstore runs --db x.db` and
    `tgstore --db x.db runs` are one command. Nothing after `--` moves (a captured command's own arguments)."""
    moved: list[str] = []
    kept: list[str] = []
    at = 0
    while at < len(args):
        arg = args[at]
        if arg == "--":
            kept += args[at:]
            break
        if arg == "--db":
            moved += args[at:at + 2]
            at += 2
            continue
        (moved if arg.startswith("--db=") else kept).append(arg)
        at += 1
    return moved + kept


class DbFirstGroup(TyperGroup):
    """The root group: reads `--db` wherever it is written (hoist_db)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:  # noqa: ANN001 - click's Context
        if ctx.parent is None:
            if "--" not in args[:-1] and args[-1:] == ["--db"]:
                ctx.fail("Option '--db' requires an argument: the database file.")
            args = hoist_db(args)
        return super().parse_args(ctx, args)

app = OneLineTyper(
    help="tgstore: what did tinygrad's IR do at this commit, and what changed since?\n\n"
    "Extract tinygrad's schedules, kernel ASTs, the IR after each codegen pass, UOps, generated source and "
    "pattern-matcher activity over a suite of tensor programs, store them in SQLite keyed by tinygrad commit, "
    "compare them with Svod, and query or browse them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=DbFirstGroup,
)
db_app = typer.Typer(help="Create and migrate the database schema (Alembic).", no_args_is_help=True,
                     rich_markup_mode=None)
app.add_typer(db_app, name="db")


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"tgstore {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                               help="Print the version and exit.")] = False,
         db: DbOption = DEFAULT_DB) -> None:
    set_db(Path(db))
