"""Every canonical document a case gets is what a fresh process running that case alone gets, whatever ran before
it (tinygrad keeps process-wide state: name counters, functools caches, PatternMatcher rules compiled with a copy of
their module's globals). Compared by document hash for every (position, stage) the case has, kernel_graph included."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

from cli import tgstore

import tgstore.cases.builtin as builtin

CASES = ["add", "softmax", "matmul", "sum_rows"]


def case_file(tmp: Path, names: list[str], tag: str) -> Path:
    """A case file of the built-in suite's cases `names`, in that order (their source, verbatim)."""
    tree = ast.parse(Path(builtin.__file__).read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    definitions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
                   and not n.name.startswith("case_")]

    def about(node: ast.stmt) -> str | None:  # `case_x.context = {...}`: the case it sets up
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            return target.value.id
        return None

    other = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef) and about(n) is None]
    body = other + definitions
    for name in names:
        body += [functions[f"case_{name}"]] + [n for n in tree.body if about(n) == f"case_{name}"]
    path = tmp / f"{tag}.py"
    path.write_text(ast.unparse(ast.Module(body=body, type_ignores=[])) + "\n", encoding="utf-8")
    return path


def documents(db: Path) -> dict[str, dict[tuple[int, str], str]]:
    """case -> (position, stage) -> document hash, of the database's current runs."""
    out: dict[str, dict[tuple[int, str], str]] = {}
    with sqlite3.connect(db) as conn:
        for case, position, stage, digest in conn.execute(
                "SELECT k.name, cl.position, cl.stage, d.hash FROM canonical_links cl "
                "JOIN canonical_docs d ON d.id = cl.doc_id JOIN run_cases rc ON rc.case_result_id = cl.case_result_id "
                "JOIN cases k ON k.id = rc.case_id JOIN runs r ON r.id = rc.run_id WHERE r.is_current"):
            out.setdefault(case, {})[(position, stage)] = digest
    return out


def extract(tmp: Path, names: list[str], tag: str) -> dict[str, dict[tuple[int, str], str]]:
    db = tmp / f"{tag}.db"
    proc = tgstore("ingest", "--db", db, "--cases", case_file(tmp, names, tag), "--renderers", "C")
    assert proc.returncode == 0, proc.stderr
    return documents(db)


def test_every_document_of_a_case_equals_the_case_alone(tmp_path: Path) -> None:
    together = extract(tmp_path, CASES, "suite")
    backwards = extract(tmp_path, CASES[::-1], "reverse")
    for name in CASES:
        alone = extract(tmp_path, [name], name)[name]
        assert ("kernel_graph" in {stage for _p, stage in alone}), f"{name}: no kernel_graph document"
        assert together[name] == alone, name  # every (position, stage), kernel_graph included
        assert backwards[name] == alone, name


def test_the_whole_builtin_suite_in_reverse_order_has_the_same_documents(tmp_path: Path, readme_db: Path) -> None:
    """The whole built-in suite forwards (the README's database: `tgstore ingest` of the installed tinygrad, every
    case in the suite's order; its canonical documents are the C renderer's, as with --renderers C) and backwards:
    every case's documents are the same, and every case that schedules has its kernel_graph document."""
    names = [n.removeprefix("case_") for n in dir(builtin) if n.startswith("case_")]
    order = [n.name.removeprefix("case_") for n in ast.parse(Path(builtin.__file__).read_text()).body
             if isinstance(n, ast.FunctionDef) and n.name.startswith("case_")]
    assert sorted(order) == sorted(names)
    forwards, backwards = documents(readme_db), extract(tmp_path, order[::-1], "backwards")
    assert sorted(forwards) == sorted(names) and forwards == backwards
    lacking = [name for name, docs in forwards.items() if docs and "kernel_graph" not in {s for _p, s in docs}]
    assert lacking == []
