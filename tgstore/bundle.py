"""Reading extraction bundles: JSON lines, validated against the declared schema (tgstore.bundle_schema) before
anything is written: every record with pydantic, then across records (one header first, unique cases, renderers and
keys, every reference defined before use). A bundle that fails is refused whole with one line naming the file and
the line.
"""

from __future__ import annotations

import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tgstore.bundle_schema import BUNDLE_VERSIONS, KINDS, RECORD, Graph, Pattern
from tgstore.nogc import gc_paused


class BundleError(Exception):
    """The file is not a bundle this tgstore can read; the message names the file and line."""


@dataclass
class Bundle:
    path: Path
    header: dict[str, Any]
    patterns: dict[str, dict[str, Any]] = field(default_factory=dict)  # bundle-local key -> pattern record
    graphs: dict[str, list] = field(default_factory=dict)  # graph hash -> nodes
    cases: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)  # run-level missing records
    command: dict[str, Any] | None = None  # capture mode: the command record
    end: dict[str, Any] | None = None  # None: truncated, the extraction did not finish
    truncated_line: int | None = None  # the line number of a half-written last line, if any

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def tinygrad(self) -> dict[str, Any]:
        return self.header.get("tinygrad") or {}


def _describe(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"] if part not in KINDS and part != "other")
    if first["type"] == "json_invalid":
        return f"not valid JSON ({first['msg'].removeprefix('Invalid JSON: ')})"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"{where or 'record'}: {first['msg']}{more}"


def _read_text(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BundleError(f"{path}: no such bundle file") from None
    except OSError as exc:
        raise BundleError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise BundleError(f"{path}: is a directory, not a bundle file")
    if not stat.S_ISREG(mode):
        raise BundleError(f"{path}: not a regular file (a device or a pipe?), not a bundle file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BundleError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_bundle(path: Path | str) -> Bundle:
    """The bundle at `path`, validated; BundleError (one line, file:line) if it is not one this tgstore reads.
    A half-written last line (a killed extraction) is dropped and noted in `truncated_line`."""
    with gc_paused():  # millions of records that stay alive: see tgstore.nogc
        return _read_bundle(Path(path))


def _read_bundle(path: Path) -> Bundle:
    text = _read_text(path)
    lines = text.split("\n")
    ends_cleanly = text.endswith("\n")
    bundle: Bundle | None = None
    case_names: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if bundle is None:
            _check_version(path, number, line)
        try:
            record = _validate(line)
        except _NonFinite as exc:
            raise BundleError(f"{path}:{number}: {exc}") from None
        except ValidationError as exc:
            if bundle is not None and number == len(lines) and not ends_cleanly \
                    and exc.errors()[0]["type"] == "json_invalid":
                bundle.truncated_line = number  # a child killed mid-write: what came before is still good
                break
            raise BundleError(f"{path}:{number}: {_describe(exc)}") from None
        kind = record["kind"]
        if bundle is None:
            if kind != "header":
                raise BundleError(f"{path}:{number}: the first record must be the header, found {kind!r}")
            if problem := _check_header(record):
                raise BundleError(f"{path}:{number}: {problem}")
            bundle = Bundle(path=path, header=record)
            continue
        problem = _check(bundle, record, case_names)
        if problem:
            raise BundleError(f"{path}:{number}: {problem}")
    if bundle is None:
        raise BundleError(f"{path}: empty bundle (no header)")
    if bundle.end is not None and bundle.end["cases"] != len(bundle.cases):
        raise BundleError(f"{path}: the end record counts {bundle.end['cases']} cases but the bundle has "
                          f"{len(bundle.cases)}")
    return bundle


# Records that hold no float (ints and strings only): pydantic's JSON parser alone validates them, and a NaN or an
# overflowing number could only hide in a field the schema does not declare. Most lines of a bundle are graphs.
_NO_FLOATS = {"graph": frozenset(Graph.__annotations__), "pattern": frozenset(Pattern.__annotations__)}
_NO_FLOAT_PREFIXES = tuple(f'{{"kind":{space}"{kind}"' for kind in _NO_FLOATS for space in ("", " "))


def _validate(line: str) -> dict[str, Any]:
    """One line as a validated record; ValidationError or _NonFinite (a NaN, Infinity or overflowing number) if it
    is not one. Records that may hold floats are parsed once with Python's JSON parser (which says which number is
    not finite) and checked as Python objects; a line that fails is validated again from its text, so the message is
    the one pydantic gives for the line. Validation dominates reading a bundle (bench/README.md)."""
    if line.startswith(_NO_FLOAT_PREFIXES):
        try:
            record = RECORD.validate_json(line)
        except ValidationError:
            if problem := _non_finite(line):
                raise _NonFinite(problem) from None
            raise
        if set(record) <= _NO_FLOATS.get(record["kind"], frozenset()):
            return record
        if problem := _non_finite(line):
            raise _NonFinite(problem)
        return record
    try:
        value = json.loads(line, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NonFinite:
        raise
    except (ValueError, RecursionError):
        return RECORD.validate_json(line)  # not JSON: pydantic says where
    try:
        return RECORD.validate_python(value)
    except ValidationError:
        return RECORD.validate_json(line)


# A number that overflows has an exponent of 3 digits or more; a JSON number token never follows a letter, a digit,
# a dot or a quote (so hex digests such as "...3e1234..." do not match: most lines hold some).
_MAYBE_NON_FINITE = re.compile(r"NaN|Infinity|(?<![\w.\"])-?[0-9]+(?:\.[0-9]+)?[eE]\+?[0-9]{3}")


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(f"{name} is not a number JSON has (no NaN or Infinity; the database could not store it)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(f"{text} is out of range for a number (it would be stored as Infinity)")
    return value


def _non_finite(line: str) -> str | None:
    """A NaN, Infinity or overflowing number on the line, in words (Python's and pydantic's JSON parsers accept them,
    JSON and SQLite's JSON functions do not). Only lines that may have one are parsed twice."""
    if not _MAYBE_NON_FINITE.search(line):
        return None
    try:
        json.loads(line, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NonFinite as exc:
        return str(exc)
    except (ValueError, RecursionError):
        return None  # not JSON: validation says so
    return None


def _check_version(path: Path, number: int, line: str) -> None:
    """The header's format version is checked before its fields: another version may have other fields."""
    try:
        record = json.loads(line)
        kind, version = record.get("kind"), record.get("bundle_version")
    except (ValueError, AttributeError, RecursionError):
        return  # not a JSON object: validation says so
    if kind == "header" and version not in BUNDLE_VERSIONS:
        raise BundleError(f"{path}:{number}: bundle format version {version!r}; this tgstore reads versions "
                          f"{', '.join(map(str, BUNDLE_VERSIONS))}; use a tgstore that matches the extractor")


def _check(bundle: Bundle, record: dict[str, Any], case_names: set[str]) -> str | None:
    """File a record in the bundle; a problem with it in words, or None."""
    kind = record["kind"]
    if bundle.end is not None and kind != "other":
        return f"a {kind} record after the end record"
    if kind == "header":
        return "a second header"
    if kind == "pattern":
        if record["key"] in bundle.patterns:
            return f"duplicate pattern key {record['key']!r}"
        bundle.patterns[record["key"]] = record
    elif kind == "graph":
        if record["hash"] in bundle.graphs:
            return f"duplicate graph {record['hash'][:12]}"
        if problem := _check_graph(record["nodes"]):
            return f"graph {record['hash'][:12]}: {problem}"
        bundle.graphs[record["hash"]] = record["nodes"]
    elif kind == "case":
        if not record["name"].strip() or not record["name"].isprintable():
            return f"case name {record['name']!r} is empty or has control characters"
        if record["name"] in case_names:
            return f"duplicate case {record['name']!r}"
        if problem := _check_case(bundle, record):
            return f"case {record['name']!r}: {problem}"
        case_names.add(record["name"])
        bundle.cases.append(record)
    elif kind == "missing":
        bundle.missing.append(record)
    elif kind == "command":
        if bundle.command is not None:
            return "a second command record"
        bundle.command = record
    elif kind == "end":
        bundle.end = record
    return None


def _check_header(header: dict[str, Any]) -> str | None:
    """What identifies the commit: a git sha or a tree hash."""
    tinygrad = header["tinygrad"]
    sha = (tinygrad.get("git") or {}).get("sha")
    if sha is not None and not sha.strip():
        return "header: tinygrad.git.sha is empty"
    if not sha and not tinygrad["tree_hash"].strip():
        return "header: tinygrad names neither a git sha nor a tree hash (tree_hash is empty)"
    if any(not r.strip() for r in header["renderers"]):
        return "header: renderers has an empty name"
    if not header["backend"].strip():
        return "header: backend is empty"
    return None


def _check_graph(nodes: list) -> str | None:
    for i, node in enumerate(nodes):  # sources are counts (never negative) once validated
        if node[3] and max(node[3]) >= i:
            return f"node {i} refers to a node that is not before it"
    return None


def _check_passes(bundle: Bundle, passes: list[dict[str, Any]] | None, where: str) -> str | None:
    for entry in passes or []:
        if entry["graph"] is not None and entry["graph"] not in bundle.graphs:
            return f"{where} pass {entry['position']} ({entry['name']}) refers to graph {entry['graph'][:12]}, " \
                   "not defined before it"
    return None


def _check_case(bundle: Bundle, case: dict[str, Any]) -> str | None:
    positions = set()
    for item in case["schedule"]:
        if item["position"] in positions:
            return f"duplicate schedule position {item['position']}"
        positions.add(item["position"])
        for i, node in enumerate(item["nodes"]):
            if any(s is None or s < 0 or s >= i for s in node["src"]):
                return f"item {item['position']}: AST node {i} refers to a node that is not before it"
        renderers = set()
        for program in item["programs"]:
            if program["renderer"] in renderers:
                return f"item {item['position']}: duplicate program for renderer {program['renderer']!r}"
            renderers.add(program["renderer"])
            uops = program["uops"] or []
            for i, uop in enumerate(uops):
                if any(s is not None and s >= len(uops) for s in uop["src"]):
                    return f"item {item['position']} {program['renderer']}: UOp {i} refers to UOp " \
                           f"{max(s for s in uop['src'] if s is not None)}, past the last ({len(uops) - 1})"
            if problem := _check_passes(bundle, program.get("passes"), f"item {item['position']} "
                                        f"{program['renderer']}"):
                return problem
    if problem := _check_passes(bundle, case.get("schedule_passes"), "schedule"):
        return problem
    for match in case["matches"]:
        if match["pattern"] not in bundle.patterns:
            return f"matches refer to pattern {match['pattern']!r}, not defined before the case"
    return None
