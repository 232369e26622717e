"""The installed package holds every module, query, migration, template and static file of the source tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest
from slack import generous
from web_server import free_port

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


@pytest.mark.slow  # builds a wheel and a virtual environment
def test_the_wheel_installs_and_works_from_another_directory(tmp_path: Path) -> None:
    """`pip install` of the built wheel (not editable) into a fresh venv: ingest, query and serve from elsewhere find
    their migrations, queries, templates and static files inside the package."""
    # from a copy of the working tree: setuptools' build/ in the tree would carry files renamed or deleted since
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", ".cache", "build", "dist", "*.db",
                                                                "*.db-*", "__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True, timeout=generous())
    wheel, = (tmp_path / "dist").glob("tgstore-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=generous())
    subprocess.run([venv / "bin" / "pip", "install", "--quiet", str(wheel)], check=True, capture_output=True,
                   timeout=generous())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "cases.py").write_text("from tinygrad import Tensor\n\n\ndef case_add():\n    \"\"\"add\"\"\"\n"
                                        "    return Tensor.empty(16) + Tensor.empty(16)\n")
    tgstore = str(venv / "bin" / "tgstore")

    def run(*args: str) -> str:
        proc = subprocess.run([tgstore, *args], cwd=elsewhere, capture_output=True, text=True, timeout=generous())
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout

    run("ingest", "--db", "t.db", "--cases", "cases.py", "--renderers", "C", "--stages", "none")
    stored, = [json.loads(line) for line in run("runs", "--db", "t.db", "--jsonl").splitlines()]
    assert stored["status"] == "ok"
    answer = run("query", "case_at_commit", "--db", "t.db", "-p", f"commit={stored['version']}", "-p", "case_name=add",
                 "-p", "renderer=C", "--jsonl")
    rows = [json.loads(line) for line in answer.splitlines()]
    assert [row["kernel_name"] for row in rows] == ["E_4_4"] and "void E_4_4(" in rows[0]["source"]
    head = max(p.name.split("_")[0] for p in (Path(__file__).resolve().parent.parent / "migrations" / "versions")
               .glob("[0-9]*_*.py"))
    assert run("db", "current", "--db", "t.db").strip().endswith(head)
    assert "builtin" in run("suites")
    port = free_port()
    server = subprocess.Popen([tgstore, "serve", "--db", "t.db", "--port", str(port)], cwd=elsewhere,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                index = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert index.status_code == 200 and "kernels_changed" in index.text
        assert httpx.get(f"http://127.0.0.1:{port}/-/tgstore/tgstore.css").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/t/commits.json").status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
