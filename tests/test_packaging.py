"""The installed package holds every module, query, migration, template and static file of the source tree."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_the_tree_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {name: ROOT / path for name, path in config["package-dir"].items()}
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tgstore").rglob("__init__.py")}
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
    for name in listed - found:
        assert name in mapped or any(name.startswith(m + ".") for m in mapped), f"{name} is listed but absent"
    data = config["package-data"]
    assert "templates/*.html" in data["tgstore.web"] and "static/*" in data["tgstore.web"]
    assert (ROOT / "tgstore" / "web" / "templates" / "tgstore_graph.html").is_file()
    assert sorted(p.name for p in (ROOT / "queries").glob("*.sql")) and data["tgstore.sql"] == ["*.sql"]
