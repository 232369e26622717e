"""The layout holds: no import cycles, imports run down the pipeline's layers (one named exception), every module
imports, the command line and the extractor's side load no SQLAlchemy (why cli/ imports inside functions), and no
module is over 500 lines but data."""

from __future__ import annotations

import subprocess
import sys

from import_graph import ROOT, build, layer_of
from slack import generous

# No import runs up the layers: spelling (Svod's and tinygrad eras') is on the ground floor, so the store reads
# spelling/svod.py's norm_hash without reaching up into svod/.
UPWARD_ALLOWED: set[tuple[str, str]] = set()


MAX_LINES = 500
DATA_MODULES = {"tgstore/cases/builtin.py"}  # the built-in cases: data, read as a list


def test_no_module_is_over_500_lines_but_data() -> None:
    long = {path.relative_to(ROOT).as_posix(): n for path in build().modules.values()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert {p: n for p, n in long.items() if p not in DATA_MODULES} == {}, f"split by what they hold: {long}"


def test_no_import_cycles() -> None:
    assert build().cycles() == []


def test_every_module_has_a_layer_and_imports_run_down_them() -> None:
    graph = build()
    assert all(layer_of(m) >= 0 for m in graph.modules)
    upward = {(a, b.rpartition(".")[2]) for a, b in graph.upward()}
    assert upward <= UPWARD_ALLOWED, f"imports that run up the layers (tests/import_graph.py): {sorted(upward)}"


def test_every_module_imports_and_the_cli_loads_no_sqlalchemy() -> None:
    """Every command module is loaded when `tgstore` starts, and `tgstore extract` must run where only the
    standard library and tinygrad are fast to load: so cli/ and pipeline.py import the database side inside the
    commands that use it. The rest import at module level."""
    modules = sorted(m for m in build().modules if not m.endswith("__main__"))
    script = ("import sys, importlib\n"
              "import tgstore.cli, tgstore.pipeline, tgstore.extract.runner\n"
              "assert 'sqlalchemy' not in sys.modules, 'the CLI loaded SQLAlchemy at start'\n"
              f"for name in {modules!r}:\n"
              "    importlib.import_module(name)\n"
              "print(len(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=generous())
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > len(modules)
