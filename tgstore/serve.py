"""`tgstore serve`: start Datasette on a tgstore database, read-only. What Datasette serves (settings, tables,
canned queries, tgstore's pages) is the plugin's, in `tgstore.web`."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from pathlib import Path

from tgstore.web.metadata import (  # noqa: F401  (re-exported: callers and tests name them here)
    SETTINGS,
    TABLES,
    build_metadata,
    make_datasette,
    split_for_datasette_1,
)


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
