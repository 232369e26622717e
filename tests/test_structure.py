"""The layout holds: no import cycles, imports run down the pipeline's layers (one named exception), every module
imports, the command line and the extractor's side load no SQLAlchemy (why cli/ imports inside functions), and no
module is over 500 lines but data."""

from __future__ import annotations

import subprocess
import sys

from import_graph import ROOT, Graph, build, layer_of
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


def uphill(graph: Graph) -> set[tuple[str, str]]:
    """Arrows up the layers or across the wings, less the allowed ones."""
    return {(a, b) for a, b in graph.upward() + graph.across() if (a, b.rpartition(".")[2]) not in UPWARD_ALLOWED}


def test_every_module_has_a_layer_and_imports_run_down_them() -> None:
    graph = build()
    assert all(layer_of(m) >= 0 for m in graph.modules)
    assert uphill(graph) == set(), "imports that run up the layers or across the wings (tests/import_graph.py)"


def test_a_planted_import_between_the_svod_and_history_wings_is_caught() -> None:
    """The check above would have caught the loop of issue 46 (svod/portqueue.py importing history/bisect.py, and
    history/ importing svod/parity_store.py): each arrow, planted on a copy of the graph, fails it."""
    for a, b in (("tgstore.svod.portqueue", "tgstore.history.bisect"),
                 ("tgstore.history.sweep", "tgstore.svod.parity_store")):
        planted = build()
        assert a in planted.modules and b in planted.modules and b not in planted.arrows[a]
        planted.arrows[a] = planted.arrows[a] | {b}
        assert uphill(planted) == {(a, b)}


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
