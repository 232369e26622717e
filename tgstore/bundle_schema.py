"""The bundle format (docs/bundle-format.md) as types: one TypedDict per record kind, checked with pydantic
(strict: no coercion of types) by tgstore.bundle before anything is written. `RECORD` validates one JSON line of any
kind; a kind this tgstore does not know is read as `Other` and skipped.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter
from typing_extensions import TypedDict

BUNDLE_VERSIONS = (1, 2, 3)  # versions this tgstore reads; the extractor writes the last
STRICT = ConfigDict(strict=True, extra="allow")  # extra fields are allowed: adding one does not bump the version


# Integers SQLite can hold (64-bit signed); counts, positions and indexes are never negative.
Int = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]


class Node(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    op: str
    dtype: str | None
    arg: str | None
    src: list[Count | None]


class PassEntry(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    position: Count
    name: str
    depth: Count
    node_count: Count | None
    changed: bool
    seconds: NotRequired[float | None]
    graph: str | None
    rewrites: NotRequired[dict[str, Any] | None]


class Program(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    renderer: str
    name: str | None
    source: str | None
    error: str | None
    uops: list[Node] | None
    passes: NotRequired[list[PassEntry] | None]


class CanonicalEntry(TypedDict):
    """A canonical document, or the typed reason the stage could not be serialized."""

    __pydantic_config__ = STRICT  # type: ignore[misc]
    document: NotRequired[dict[str, Any]]
    unsupported: NotRequired[dict[str, str]]


class Timing(TypedDict):
    """A kernel's run time on the run's machine (--time): ns over the timed runs, tinygrad's estimates, or why
    there is none (status error | crashed | timeout, with stderr)."""

    __pydantic_config__ = STRICT  # type: ignore[misc]
    status: Literal["ok", "error", "crashed", "timeout"]
    ns_min: int | None
    ns_median: int | None
    ns_max: NotRequired[int | None]
    spread: float | None
    samples: NotRequired[list[int] | None]
    process_ns_min: NotRequired[list[Count | None]]  # the best time in each process timed (the best one is kept)
    ops: int | None
    mem: int | None
    program: NotRequired[str | None]
    error: NotRequired[str | None]
    stderr: NotRequired[str | None]


class Machine(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    fingerprint: str
    hostname: NotRequired[str | None]
    cpu_model: NotRequired[str | None]
    cores: NotRequired[int | None]
    device: NotRequired[str | None]
    compiler: NotRequired[str | None]
    compiler_version: NotRequired[str | None]
    settings: NotRequired[dict[str, str]]


class TimingHeader(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    machine: Machine
    timer: str | None  # tinygrad's timer in this era; None: it cannot time (a `timing` missing record says why)
    runs: int | None
    warmup: int | None
    calibration_ns: int | None
    reference_ns: NotRequired[int | None]  # the reference kernel's best time (extract/child/reference.py)


class Item(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    position: Count
    root_op: str
    ast_text: str | None
    pyrender: str | None
    nodes: list[Node]
    programs: list[Program]
    canonical: NotRequired[dict[str, CanonicalEntry] | None]
    call_site: NotRequired[str | None]  # capture mode: file:line in function where tinygrad lowered it (v3)
    timing: NotRequired[Timing | None]  # --time: kernels (root SINK) only
    context: NotRequired[dict[str, Any] | None]  # the codegen ContextVars it was lowered under (v3, optional)
    lowered_by: NotRequired[str | None]  # capture mode: the renderer tinygrad lowered it with (v3, optional)


class Match(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    pattern: str
    matches: Count
    tries: Count | None


class Missing(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    feature: str
    reason: str | None
    case: NotRequired[str | None]


class MissingRecord(Missing):
    kind: Literal["missing"]


class Case(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["case"]
    name: str
    description: NotRequired[str | None]
    status: Literal["ok", "error", "unsupported"]  # unsupported: v3
    error: str | None
    seconds: float | None
    debug: str | None
    schedule: list[Item]
    schedule_passes: NotRequired[list[PassEntry] | None]
    canonical: NotRequired[dict[str, CanonicalEntry] | None]
    matches: list[Match]
    missing: list[Missing]


class Pattern(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["pattern"]
    key: str
    matcher: str | None
    ops: str | None
    upat: str | None
    function: str | None
    file: str | None
    line: Int | None
    source: NotRequired[str | None]


class Graph(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["graph"]
    hash: Annotated[str, "sha256 hex of the nodes' compact JSON"]
    nodes: list[tuple[str, str, str, list[Count]]]


class Git(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    sha: str
    date: NotRequired[str | None]
    subject: NotRequired[str | None]
    dirty: NotRequired[bool | None]
    position: NotRequired[Count | None]


class TinygradInfo(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    path: NotRequired[str | None]
    version: str | None
    tree_hash: str
    git: Git | None


class Suite(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    name: str
    hash: str
    files: NotRequired[list[str]]


class Header(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["header"]
    bundle_version: Int
    producer: NotRequired[str | None]
    started_at: NotRequired[str | None]
    python: NotRequired[str | None]
    platform: NotRequired[str | None]
    tinygrad: TinygradInfo
    backend: str
    renderers: list[str]
    stages: NotRequired[list[str]]
    rewrites_limit: NotRequired[Count]
    debug_level: NotRequired[Int | None]
    suite: Suite
    features: dict[str, Any]
    env: NotRequired[dict[str, str] | None]
    timing: NotRequired[TimingHeader | None]  # --time: the machine and calibration


class Command(TypedDict):
    """Capture mode (v3): the command that ran, how it ended."""

    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["command"]
    argv: list[str]
    cwd: NotRequired[str | None]
    exit_status: Int | None
    error: str | None
    seconds: NotRequired[float | None]


class End(TypedDict):
    __pydantic_config__ = STRICT  # type: ignore[misc]
    kind: Literal["end"]
    finished_at: str | None
    cases: Count
    failed_cases: Count
    calibration_end_ns: NotRequired[int | None]  # --time: the calibration loop again after the last case


class Other(TypedDict):
    """A record kind this tgstore does not know: skipped (adding a kind does not bump the version)."""

    __pydantic_config__ = ConfigDict(strict=True, extra="allow")  # type: ignore[misc]
    kind: str


KINDS = {"header": Header, "pattern": Pattern, "graph": Graph, "case": Case, "missing": MissingRecord,
          "command": Command, "end": End}


def _kind(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else None
    return kind if kind in KINDS else "other"


RECORD = TypeAdapter(Annotated[
    Annotated[Header, Tag("header")] | Annotated[Pattern, Tag("pattern")] | Annotated[Graph, Tag("graph")]
    | Annotated[Case, Tag("case")] | Annotated[MissingRecord, Tag("missing")] | Annotated[Command, Tag("command")]
    | Annotated[End, Tag("end")]
    | Annotated[Other, Tag("other")], Discriminator(_kind)])
