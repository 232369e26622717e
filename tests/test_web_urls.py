"""One way to spell a tgstore URL (tgstore/web/urls.py): every builder gives a path one route answers (and its JSON
twin another), parameters left out when not given, and no page, cell or template spells a route by hand."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tgstore.web import urls
from tgstore.web.routes import ROUTES

WEB = Path(urls.__file__).resolve().parent
DIGEST = "ab" * 32


def routed(path: str) -> str | None:
    """The `format` the routes give `path` (None for the page itself), or raise when no route answers it."""
    where = path.split("?")[0]
    for pattern, _handler in ROUTES:
        found = re.match(pattern, where)
        if found:
            return found.groupdict().get("format")
    raise AssertionError(f"no route answers {path}")


BUILT = [
    urls.index(), urls.diff("0.13.0", "0.14.0"), urls.diff("a", "b", "softmax", "C", spelling="raw", section="0:ast",
                                                           start=100, fragment=True),
    urls.passdiff("softmax", 0, "0.13.0", "0.14.0", "C", row=3), urls.kernel("matmul", 0, "0.14.0", "LLVM",
                                                                           pass_position=4, step=1),
    urls.graph(DIGEST), urls.graph(DIGEST, vs=DIGEST, side_by_side=True, title="t", spelling="raw"),
    urls.graph(DIGEST, run=1, case="add", kernel=0, renderer="C", pass_position=3, fold=False),
    urls.rewrites(1, "add", 3, 0, "C", step=2), urls.blob(DIGEST, language="C", line=12), urls.parity("sum_rows"),
    urls.parity("sum_rows", svod_run=1, commit="0.14.0", kernel=0, stage="20-final_rewrite"),
    urls.chart("time", "matmul", machine="abc"), urls.regressions("compile", "matmul"),
    urls.slowdowns("0.13.0", "0.14.0", case="matmul"), urls.static("tgstore.css"),
]


@pytest.mark.parametrize("path", BUILT)
def test_every_builder_gives_a_routed_path_and_a_json_twin(path: str) -> None:
    assert routed(path) is None
    if not path.startswith(urls.STATIC):
        assert routed(urls.as_json(path)) == "json"


def test_parameters_not_given_are_left_out_and_values_quoted() -> None:
    assert urls.diff("0.13.0", "0.14.0") == "/-/diff?a=0.13.0&b=0.14.0"
    assert urls.kernel("a b", 0, pass_position=3) == "/-/kernel?case=a+b&kernel=0&pass=3"
    assert urls.graph(DIGEST, svg=True) == f"/-/graph/{DIGEST}.svg"
    assert urls.as_json("/-/diff?a=1") == "/-/diff.json?a=1" and urls.as_json("/") == "/-/index.json"
    assert urls.Bound(lambda p: "/base" + p).passdiff("softmax", 1) == "/base/-/passdiff?case=softmax&kernel=1"


def test_no_page_cell_or_template_spells_a_route_by_hand() -> None:
    """Route paths appear in urls.py (and routes.py through it) only."""
    spelled = re.compile(r"""["'(]/-/(kernel|graph|diff|passdiff|rewrites|blob|parity|chart|regressions|slowdowns)""")
    found = []
    for path in sorted(WEB.rglob("*")):
        if path.suffix not in (".py", ".html", ".js") or path.name in ("urls.py", "routes.py"):
            continue
        text = path.read_text()
        if path.suffix == ".py" and (doc := ast.get_docstring(ast.parse(text), clean=False)):
            text = text.replace(doc, "")  # the module's docstring names its route, as documentation
        found += [f"{path.relative_to(WEB)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if spelled.search(line)]
    assert found == []


def test_pages_read_through_datasettes_connection_only() -> None:
    """No page opens a second SQLAlchemy engine on the served file: they read through Datasette's own connection
    (tgstore.web.base.read), the comparison code taking it as it is (tgstore.compare.sql)."""
    opened = [f"{path.relative_to(WEB)}" for path in sorted(WEB.rglob("*.py"))
              if re.search(r"\bopen_engine\b|^\s*(from|import) sqlalchemy", path.read_text(), re.M)]
    assert opened == []
