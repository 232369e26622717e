"""`tgstore serve`: start Datasette on a tgstore database, read-only. What Datasette serves (settings, tables,
canned queries, tgstore's pages) is the plugin's, in `tgstore.web`."""

from __future__ import annotations

import inspect
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from datasette.app import Datasette
from datasette.plugins import pm

from tgstore import web
from tgstore.queries import Query
from tgstore.web.errors import quiet_default_handler
from tgstore.web.metadata import (  # noqa: F401  (TABLES re-exported: callers and tests name it here)
    SETTINGS,
    TABLES,
    build_metadata,
    split_for_datasette_1,
)


def make_datasette(db_path: Path, *, queries: dict[str, Query] | None = None, settings: dict[str, Any] | None = None):
    """A Datasette instance on `db_path`, read-only, with the tgstore plugin registered. Works with Datasette 0.65
    and the 1.0 line: which one is installed is told by whether Datasette takes a `config` (1.0) or not."""
    if not pm.is_registered(web):
        pm.register(web, name="tgstore")
    quiet_default_handler()
    metadata = build_metadata(db_path, queries)
    options: dict[str, Any] = {"metadata": metadata}
    if "config" in inspect.signature(Datasette.__init__).parameters:
        options["metadata"], options["config"] = split_for_datasette_1(metadata)
    return Datasette([str(db_path)], settings={**SETTINGS, **(settings or {})}, template_dir=str(web.TEMPLATES),
                     cors=False, **options)


def serve_datasette(db_path: Path, *, host: str = "127.0.0.1", port: int = 8001, open_browser: bool = False,
                    log: Callable[[str], None] = print) -> None:
    """Serve until interrupted."""
    import uvicorn

    datasette = make_datasette(db_path)
    url = f"http://{host}:{port}/{Path(db_path).stem}"
    log(f"tgstore: serving {db_path} read-only at {url}")
    if open_browser:
        webbrowser.open(url)
    uvicorn.run(datasette.app(), host=host, port=port, log_level="warning", lifespan="on", workers=1)
