"""The Typer app and its `db` group, on which each command module registers its commands."""

from __future__ import annotations

from typing import Annotated

import typer

from tgstore import __version__
from tgstore.cli.safety import OneLineTyper

app = OneLineTyper(
    help="tgstore: what did tinygrad's IR do at this commit, and what changed since?\n\n"
    "Extract tinygrad's schedules, kernel ASTs, the IR after each codegen pass, UOps, generated source and "
    "pattern-matcher activity over a suite of tensor programs, store them in SQLite keyed by tinygrad commit, "
    "compare them with Svod, and query or browse them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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
                                               help="Print the version and exit.")] = False) -> None:
    pass
