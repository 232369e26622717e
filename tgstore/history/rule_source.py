"""Where a rewrite rule lives in tinygrad's source at one commit: the rule's own lines (the element of the
PatternMatcher list holding its file:line), the matcher it belongs to (the top-level statement that builds it), the
function that encloses it, and the helpers it calls (functions of its file, or of the tinygrad module it imports
them from). Read with Python's `ast` from the file's text at that commit; a file that does not parse has no
scopes (the rule's line alone stands for it)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

# what each kind of scope weighs as evidence that a hunk touching it explains the rule's change
WEIGHTS = {"rule": 3, "helper": 2, "guard": 2, "function": 1, "matcher": 1}


@dataclass(frozen=True)
class Scope:
    kind: str  # "rule", "helper", "guard" (a name an `if` around the rule tests), "function" or "matcher"
    name: str
    path: str
    start: int
    end: int

    def covers(self, lines: range) -> bool:
        return self.start <= lines.stop - 1 and lines.start <= self.end

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "name": self.name, "path": self.path, "start": self.start, "end": self.end}


def _spans(node: ast.AST, line: int) -> bool:
    end = getattr(node, "end_lineno", None)
    return getattr(node, "lineno", 10**9) <= line <= (end if end is not None else -1)


def _is_matcher_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name.endswith("PatternMatcher")


def _statement_name(stmt: ast.stmt) -> str:
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names:
            return names[0]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name
    return f"line {stmt.lineno}"


def _imports(tree: ast.Module) -> dict[str, str]:
    """Names imported from tinygrad modules: name -> the module's file path (tinygrad/uop/ops.py)."""
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module.startswith("tinygrad") and stmt.level == 0:
            for alias in stmt.names:
                found[alias.asname or alias.name] = stmt.module.replace(".", "/") + ".py"
    return found


def _functions(tree: ast.Module | ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}


def _references(node: ast.AST) -> list[tuple[str, str | None]]:
    """The names a rule uses, (name, None), and the attributes it reads of a name, (name, attribute): what may be
    a helper function or a class's method."""
    seen: dict[tuple[str, str | None], None] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            seen[(n.id, None)] = None
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            seen[(n.value.id, n.attr)] = None
    return list(seen)


def rule_scopes(path: str, text: str | None, line: int, read: Callable[[str], str | None] | None = None
                ) -> list[Scope]:
    """The scopes of the rule at `path`:`line` in `text` (that file at one commit), the rule's own first. `read`
    gives another file's text at the same commit (for helpers imported from it)."""
    if text is None:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [Scope("rule", f"line {line}", path, line, line)]
    scopes: list[Scope] = []
    statement = next((s for s in tree.body if _spans(s, line)), None)
    rule: ast.AST | None = None
    for node in ast.walk(statement) if statement is not None else ():
        if _is_matcher_call(node) and _spans(node, line) and node.args and isinstance(node.args[0], (ast.List,
                                                                                                       ast.Tuple)):
            rule = next((e for e in node.args[0].elts if _spans(e, line)), rule)
    if rule is not None:
        scopes.append(Scope("rule", f"line {rule.lineno}", path, rule.lineno, rule.end_lineno or rule.lineno))
    else:
        scopes.append(Scope("rule", f"line {line}", path, line, line))
    enclosing = [n for n in ast.walk(statement) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and _spans(n, line)] if statement is not None else []
    if enclosing:
        inner = enclosing[-1]
        scopes.append(Scope("function", inner.name, path, inner.lineno, inner.end_lineno or inner.lineno))
    # the names the `if`s around the rule test: a hunk that changes one (a ContextVar's default) turns it on or off
    guards = [n for n in ast.walk(statement) if isinstance(n, ast.If) and _spans(n, line)
              and not _spans(n.test, line)] if statement is not None else []
    for test in guards:
        for name, _attr in _references(test.test):
            if name not in ("Ops", "dtypes", "ops") and len(name) > 3:
                scopes.append(Scope("guard", name, path, test.lineno, test.test.end_lineno or test.lineno))
    if statement is not None and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scopes.append(Scope("matcher", _statement_name(statement), path, statement.lineno,
                            statement.end_lineno or statement.lineno))
    functions, imported = _functions(tree), _imports(tree)
    modules: dict[str, ast.Module | None] = {path: tree}

    def module(where: str) -> ast.Module | None:
        if where not in modules:
            other = read(where) if read is not None else None
            try:
                modules[where] = ast.parse(other) if other is not None else None
            except SyntaxError:
                modules[where] = None
        return modules[where]

    for name, attr in _references(rule) if rule is not None else []:
        where = path if name in functions or name in _classes(tree) else imported.get(name)
        found_in = module(where) if where is not None else None
        if found_in is None:
            continue
        if attr is None:
            found = _functions(found_in).get(name)
        else:  # Class.method (UOp.const): the method in that class's body
            cls = _classes(found_in).get(name)
            found = _functions(cls).get(attr) if cls is not None else None
        if found is not None:
            label = name if attr is None else f"{name}.{attr}"
            scopes.append(Scope("helper", label, where, found.lineno, found.end_lineno or found.lineno))
    return scopes
