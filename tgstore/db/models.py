"""SQLAlchemy 2 models of the tgstore schema.

The schema is created and changed only by the Alembic migrations in `migrations/`; these models describe it for
the code. Artifacts are content-addressed (a `hash` column, sha256 hex of a canonical encoding) so what did not
change between two tinygrad commits is stored once: a run of an unchanged commit adds a `runs` row and one
`run_cases` row per case, all pointing at existing `case_results`.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Explicit constraint names keep Alembic batch migrations on SQLite deterministic.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Blob(Base):
    """Any text artifact (source, pyrender, AST text, DEBUG output), stored once per distinct content."""

    __tablename__ = "blobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)


class TinygradCommit(Base):
    """One tinygrad: a git commit, or an installed package identified by its source tree hash."""

    __tablename__ = "tinygrad_commits"
    id: Mapped[int] = mapped_column(primary_key=True)
    sha: Mapped[str] = mapped_column(String(80), unique=True)  # git sha, or "tree:<tree_hash>" without git
    tree_hash: Mapped[str] = mapped_column(String(64), index=True)
    version: Mapped[str | None] = mapped_column(String(40))
    committed_at: Mapped[str | None] = mapped_column(String(40))  # committer date as git gave it (with offset)
    subject: Mapped[str | None] = mapped_column(Text)
    committed_utc: Mapped[str | None] = mapped_column(String(40))  # the same in UTC, YYYY-MM-DDTHH:MM:SSZ
    git_position: Mapped[int | None] = mapped_column(Integer, index=True)  # position on the first-parent line
    version_key: Mapped[str | None] = mapped_column(String(80))  # `version` in a form that sorts (store/commits.py)
    history_rank: Mapped[int | None] = mapped_column(Integer, index=True)  # history order (history.RANK_COMMITS)


class Suite(Base):
    __tablename__ = "suites"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    hash: Mapped[str] = mapped_column(String(64), unique=True)


class Case(Base):
    __tablename__ = "cases"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)


class Pattern(Base):
    """A PatternMatcher rule as it stands at some commit (a moved line is a new row)."""

    __tablename__ = "patterns"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    matcher: Mapped[str | None] = mapped_column(String(200), index=True)
    ops: Mapped[str | None] = mapped_column(Text)
    upat: Mapped[str | None] = mapped_column(Text)
    function_name: Mapped[str | None] = mapped_column(String(200))
    file: Mapped[str | None] = mapped_column(String(300))
    line: Mapped[int | None] = mapped_column(Integer)


class PatternSet(Base):
    """The set of rules present in one tinygrad, shared by every run whose rules are identical."""

    __tablename__ = "pattern_sets"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    pattern_count: Mapped[int] = mapped_column(Integer)


class PatternSetMember(Base):
    __tablename__ = "pattern_set_members"
    pattern_set_id: Mapped[int] = mapped_column(ForeignKey("pattern_sets.id", ondelete="CASCADE"), primary_key=True)
    pattern_id: Mapped[int] = mapped_column(ForeignKey("patterns.id"), primary_key=True, index=True)


class Run(Base):
    """One extraction of one tinygrad commit over one suite on one backend. The current run answers for its
    (commit, suite, backend); the others are failed attempts, kept for `failed_runs`. Ids are never reused."""

    __tablename__ = "runs"
    __table_args__ = (Index("uq_runs_current", "commit_id", "suite_id", "backend", unique=True,
                            sqlite_where=text("is_current = 1")),
                      # history queries go case -> case sets -> current runs -> commits: covered, no row lookups
                      Index("ix_runs_case_set_current", "case_set_id", "is_current", "commit_id", "suite_id",
                            "backend"),
                      {"sqlite_autoincrement": True})
    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("tinygrad_commits.id"), index=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id"), index=True)
    backend: Mapped[str] = mapped_column(String(40))
    renderers: Mapped[str | None] = mapped_column(Text)  # comma-joined, as asked for
    status: Mapped[str] = mapped_column(String(20))  # ok | partial | failed | timeout
    started_at: Mapped[str | None] = mapped_column(String(40))
    finished_at: Mapped[str | None] = mapped_column(String(40))
    ingested_at: Mapped[str] = mapped_column(String(40))
    tgstore_version: Mapped[str] = mapped_column(String(40))
    code_hash: Mapped[str | None] = mapped_column(String(64))  # resources.code_hash() of the code that stored it
    bundle_version: Mapped[int | None] = mapped_column(Integer)
    debug_level: Mapped[int | None] = mapped_column(Integer)
    python: Mapped[str | None] = mapped_column(String(40))
    tinygrad_path: Mapped[str | None] = mapped_column(Text)
    features_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))  # the header's features (JSON)
    error: Mapped[str | None] = mapped_column(Text)
    stderr: Mapped[str | None] = mapped_column(Text)
    pattern_set_id: Mapped[int | None] = mapped_column(ForeignKey("pattern_sets.id"))
    is_current: Mapped[bool] = mapped_column(Boolean, server_default=true())
    case_set_id: Mapped[int | None] = mapped_column(ForeignKey("case_sets.id"), index=True)
    case_seconds: Mapped[str | None] = mapped_column(Text)  # JSON list: each case's seconds, in case set order
    command: Mapped[str | None] = mapped_column(Text)  # capture mode: JSON {argv, cwd, exit_status, seconds}
    # what the extraction read of its tinygrad (JSON: files, dirs, versions, settings; history/skip.py)
    inputs_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    copied_from: Mapped[str | None] = mapped_column(String(80))  # a copy of this commit's run, not an extraction
    copy_reason: Mapped[str | None] = mapped_column(Text)  # why that is the same output
    missing_paths: Mapped[str | None] = mapped_column(Text)  # JSON list: package files the clone could not read


class RunMissing(Base):
    """What a run's tinygrad could not provide (an API absent in that era, a renderer that would not build)."""

    __tablename__ = "run_missing"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    case_name: Mapped[str | None] = mapped_column(String(200))
    feature: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(Text)


class Kernel(Base):
    """A schedule item's AST (kernel or not), content-addressed by its UOp graph."""

    __tablename__ = "kernels"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(200), index=True)  # as the C (else first) renderer named it
    root_op: Mapped[str] = mapped_column(String(40))
    node_count: Mapped[int] = mapped_column(Integer)
    ast_text_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    pyrender_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    norm_hash: Mapped[str | None] = mapped_column(String(64))  # the AST in Svod-comparable spelling


class UopNode(Base):
    __tablename__ = "uop_nodes"
    kernel_id: Mapped[int] = mapped_column(ForeignKey("kernels.id", ondelete="CASCADE"), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)  # position in toposort
    op: Mapped[str] = mapped_column(String(40))
    dtype: Mapped[str | None] = mapped_column(String(200))
    arg: Mapped[str | None] = mapped_column(Text)


class UopEdge(Base):
    """`parent_idx`'s source number `src_pos` is node `child_idx` (both positions in the kernel's toposort)."""

    __tablename__ = "uop_edges"
    kernel_id: Mapped[int] = mapped_column(ForeignKey("kernels.id", ondelete="CASCADE"), primary_key=True)
    parent_idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    src_pos: Mapped[int] = mapped_column(Integer, primary_key=True)
    child_idx: Mapped[int] = mapped_column(Integer)


class Linear(Base):
    """A linearized (lowered) UOp list as a renderer consumed it, content-addressed."""

    __tablename__ = "linears"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    uop_count: Mapped[int] = mapped_column(Integer)


class LinearUop(Base):
    __tablename__ = "linear_uops"
    linear_id: Mapped[int] = mapped_column(ForeignKey("linears.id", ondelete="CASCADE"), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    op: Mapped[str] = mapped_column(String(40))
    dtype: Mapped[str | None] = mapped_column(String(200))
    arg: Mapped[str | None] = mapped_column(Text)
    src: Mapped[str] = mapped_column(Text)  # comma-joined positions of the sources in this list


class CaseResult(Base):
    """Everything a case produced at a commit except timings and free text (DEBUG output, tracebacks)."""

    __tablename__ = "case_results"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    item_count: Mapped[int] = mapped_column(Integer)
    kernel_count: Mapped[int] = mapped_column(Integer)
    schedule_pass_list_id: Mapped[int | None] = mapped_column(ForeignKey("pass_lists.id"), index=True)


class ScheduleItem(Base):
    __tablename__ = "schedule_items"
    __table_args__ = (UniqueConstraint("case_result_id", "position", name="uq_schedule_items_result_position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    case_result_id: Mapped[int] = mapped_column(ForeignKey("case_results.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    kernel_id: Mapped[int] = mapped_column(ForeignKey("kernels.id"), index=True)
    root_op: Mapped[str] = mapped_column(String(40))
    call_site: Mapped[str | None] = mapped_column(Text)  # capture mode: file:line in function that lowered it
    context: Mapped[str | None] = mapped_column(Text)  # codegen ContextVars it was lowered under (JSON object)
    lowered_by: Mapped[str | None] = mapped_column(String(40))  # capture mode: the renderer tinygrad used


class Program(Base):
    """A kernel rendered by one renderer: the generated source and the linearized UOps behind it."""

    __tablename__ = "programs"
    __table_args__ = (UniqueConstraint("schedule_item_id", "renderer", name="uq_programs_item_renderer"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    schedule_item_id: Mapped[int] = mapped_column(ForeignKey("schedule_items.id", ondelete="CASCADE"))
    renderer: Mapped[str] = mapped_column(String(40))
    name: Mapped[str | None] = mapped_column(String(200), index=True)
    source_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"), index=True)
    linear_id: Mapped[int | None] = mapped_column(ForeignKey("linears.id"))
    error: Mapped[str | None] = mapped_column(Text)
    pass_list_id: Mapped[int | None] = mapped_column(ForeignKey("pass_lists.id"), index=True)


class MatchSet(Base):
    """How often each rule matched while one case was scheduled and lowered, stored once per distinct content."""

    __tablename__ = "match_sets"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    pattern_count: Mapped[int] = mapped_column(Integer)


class PatternMatch(Base):
    __tablename__ = "pattern_matches"
    match_set_id: Mapped[int] = mapped_column(ForeignKey("match_sets.id", ondelete="CASCADE"), primary_key=True)
    pattern_id: Mapped[int] = mapped_column(ForeignKey("patterns.id"), primary_key=True, index=True)
    matches: Mapped[int] = mapped_column(Integer)
    tries: Mapped[int | None] = mapped_column(Integer)


class Graph(Base):
    """A UOp graph (a pass's output) as compact JSON: [op, dtype, arg, [source positions]] per node, in toposort
    order; stored once by hash."""

    __tablename__ = "graphs"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    root_op: Mapped[str | None] = mapped_column(String(40))
    node_count: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[str] = mapped_column(Text)
    norm_hash: Mapped[str | None] = mapped_column(String(64), index=True)  # in Svod-comparable spelling


class GraphOp(Base):
    __tablename__ = "graph_ops"
    graph_id: Mapped[int] = mapped_column(ForeignKey("graphs.id", ondelete="CASCADE"), primary_key=True)
    op: Mapped[str] = mapped_column(String(40), primary_key=True, index=True)
    count: Mapped[int] = mapped_column(Integer)


class PassList(Base):
    """The passes one kernel went through with one renderer (or a case's scheduler passes), stored once by hash."""

    __tablename__ = "pass_lists"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    pass_count: Mapped[int] = mapped_column(Integer)


class PassEntry(Base):
    __tablename__ = "pass_entries"
    pass_list_id: Mapped[int] = mapped_column(ForeignKey("pass_lists.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    depth: Mapped[int] = mapped_column(Integer)  # nesting: a pass run inside another pass's rewrite
    node_count: Mapped[int | None] = mapped_column(Integer)
    changed: Mapped[bool] = mapped_column(Boolean)
    graph_id: Mapped[int | None] = mapped_column(ForeignKey("graphs.id"), index=True)
    rewrites_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))


class CanonicalDoc(Base):
    """A Svod canonical JSON (schema v7) document, or why a stage could not be serialized (`unsupported` holds the
    error type and `reason` the message, `document` is NULL), stored once by hash."""

    __tablename__ = "canonical_docs"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    stage: Mapped[str] = mapped_column(String(40))
    node_count: Mapped[int | None] = mapped_column(Integer)
    document: Mapped[str | None] = mapped_column(Text)
    unsupported: Mapped[str | None] = mapped_column(String(80))
    reason: Mapped[str | None] = mapped_column(Text)


class CanonicalLink(Base):
    """A case result's canonical document at a stage: `position` is the kernel's schedule position, -1 for the
    case's schedule-level stages (tensor, rangeified)."""

    __tablename__ = "canonical_links"
    case_result_id: Mapped[int] = mapped_column(ForeignKey("case_results.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    stage: Mapped[str] = mapped_column(String(40), primary_key=True)
    doc_id: Mapped[int] = mapped_column(ForeignKey("canonical_docs.id"), index=True)


class CaseMissing(Base):
    __tablename__ = "case_missing"
    id: Mapped[int] = mapped_column(primary_key=True)
    case_result_id: Mapped[int] = mapped_column(ForeignKey("case_results.id", ondelete="CASCADE"), index=True)
    feature: Mapped[str] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(Text)


class CaseSet(Base):
    """What a run's cases produced, content-addressed (by the members' ids, in run order): the runs of commits that
    changed nothing share one. `run_cases` is a view of runs joined with their set's members."""

    __tablename__ = "case_sets"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    case_count: Mapped[int] = mapped_column(Integer)


class CaseSetMember(Base):
    """One case of a case set: its shared result, match counts, status, DEBUG text and traceback."""

    __tablename__ = "case_set_members"
    case_set_id: Mapped[int] = mapped_column(ForeignKey("case_sets.id", ondelete="CASCADE"), primary_key=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer)  # the case's place in the run (and in runs.case_seconds)
    case_result_id: Mapped[int] = mapped_column(ForeignKey("case_results.id"), index=True)
    match_set_id: Mapped[int | None] = mapped_column(ForeignKey("match_sets.id"), index=True)
    status: Mapped[str] = mapped_column(String(20))  # ok | error | unsupported
    debug_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    error_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))


Index("ix_runs_status", Run.status)


# --------------------------------------------------------------------------------------------------------------------
# Kernel timings (`--time`): measured on one machine, never compared with another's.
# --------------------------------------------------------------------------------------------------------------------


class Machine(Base):
    """Where kernels were timed: CPU, cores, compiler and its version, device and thread settings. `fingerprint`
    (sha256 of those, from the extraction child) is what makes two timings comparable."""

    __tablename__ = "machines"
    id: Mapped[int] = mapped_column(primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    hostname: Mapped[str | None] = mapped_column(String(200))
    cpu_model: Mapped[str | None] = mapped_column(String(200))
    cores: Mapped[int | None] = mapped_column(Integer)
    device: Mapped[str | None] = mapped_column(String(40))
    compiler: Mapped[str | None] = mapped_column(String(200))
    compiler_version: Mapped[str | None] = mapped_column(String(200))
    details: Mapped[str] = mapped_column(Text)  # the whole machine record (JSON), settings included


class TimingSession(Base):
    """One timed extraction of a commit's suite on one machine. A commit may be timed many times (re-timing keeps
    the run it timed); the latest session per commit and machine answers queries."""

    __tablename__ = "timing_sessions"
    id: Mapped[int] = mapped_column(primary_key=True)
    commit_id: Mapped[int] = mapped_column(ForeignKey("tinygrad_commits.id"), index=True)
    suite_id: Mapped[int] = mapped_column(ForeignKey("suites.id"))
    backend: Mapped[str] = mapped_column(String(40))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"), index=True)
    timer: Mapped[str | None] = mapped_column(String(40))  # tinygrad's timer in that era; None: it could not time
    runs: Mapped[int | None] = mapped_column(Integer)  # --time-runs (None: adaptive)
    warmup: Mapped[int | None] = mapped_column(Integer)
    calibration_ns: Mapped[int | None] = mapped_column(Integer)
    calibration_end_ns: Mapped[int | None] = mapped_column(Integer)
    started_at: Mapped[str | None] = mapped_column(String(40))
    ingested_at: Mapped[str] = mapped_column(String(40))


class KernelTiming(Base):
    """One kernel (schedule item) of one case, timed in a session: ns over the timed runs and tinygrad's own ops and
    memory estimates, or the status and error of a kernel that failed, crashed or hung."""

    __tablename__ = "kernel_timings"
    __table_args__ = (UniqueConstraint("session_id", "case_id", "position", name="uq_kernel_timings_session_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("timing_sessions.id", ondelete="CASCADE"))
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    kernel_id: Mapped[int | None] = mapped_column(ForeignKey("kernels.id"), index=True)
    program: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))  # ok | error | crashed | timeout
    ns_min: Mapped[int | None] = mapped_column(Integer)
    ns_median: Mapped[int | None] = mapped_column(Integer)
    ns_max: Mapped[int | None] = mapped_column(Integer)
    spread: Mapped[float | None] = mapped_column(Float)  # (first quartile - best) / best of the timed runs
    samples: Mapped[str | None] = mapped_column(Text)  # JSON list of ns
    ops: Mapped[int | None] = mapped_column(Integer)
    mem_bytes: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)


class CompilePassList(Base):
    """The named passes (name, depth) a scheduling or lowering ran, in order, as JSON; stored once by hash."""

    __tablename__ = "compile_pass_lists"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    names: Mapped[str] = mapped_column(Text)  # [[name, depth], ...]


class CompileTime(Base):
    """How long tinygrad took to lower one kernel for one renderer (position -1, renderer 'schedule': to schedule
    the case), in a timing session, and each named pass's µs (JSON, in the order of its pass list)."""

    __tablename__ = "compile_times"
    __table_args__ = (UniqueConstraint("session_id", "case_id", "position", "renderer",
                                       name="uq_compile_times_session_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("timing_sessions.id", ondelete="CASCADE"))
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    renderer: Mapped[str] = mapped_column(String(40))
    kernel_id: Mapped[int | None] = mapped_column(ForeignKey("kernels.id"))
    total_us: Mapped[int] = mapped_column(Integer)
    pass_list_id: Mapped[int | None] = mapped_column(ForeignKey("compile_pass_lists.id"))
    pass_us: Mapped[str | None] = mapped_column(Text)  # JSON list of µs, one per entry of the pass list


# --------------------------------------------------------------------------------------------------------------------
# Svod (a Rust port of tinygrad): what its tests print, read by tgstore.svod.readers and stored by tgstore.svod.store.
# --------------------------------------------------------------------------------------------------------------------


class SvodTree(Base):
    """A tree Svod printed, as its graph in tinygrad's spelling with ids gone (compact JSON, the same form as
    `graphs.nodes`), stored once by that graph's hash: the same tree from two runs is one row, and a tinygrad graph
    with the same structure has the same hash in `graphs.norm_hash`."""

    __tablename__ = "svod_trees"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    node_count: Mapped[int] = mapped_column(Integer)
    root_op: Mapped[str | None] = mapped_column(String(40))
    graph: Mapped[str] = mapped_column(Text)
    unknown: Mapped[str | None] = mapped_column(Text)  # JSON list of spellings the maps do not know


class SvodRun(Base):
    """One ingested path (a log, an extract-ir.sh file, a dump directory) for a case; its text is in svod_files."""

    __tablename__ = "svod_runs"
    __table_args__ = (UniqueConstraint("case_id", "source_hash", name="uq_svod_runs_case_log"),
                      {"sqlite_autoincrement": True})
    id: Mapped[int] = mapped_column(primary_key=True)
    case_id: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    svod_commit: Mapped[str | None] = mapped_column(String(80), index=True)
    source_hash: Mapped[str] = mapped_column(String(64))  # sha256 over the files' names and texts
    source_path: Mapped[str | None] = mapped_column(Text)
    ingested_at: Mapped[str] = mapped_column(String(40))
    tgstore_version: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(40), server_default="log")  # log | extract-ir | capture | dir
    parser_version: Mapped[int] = mapped_column(Integer, server_default="0")
    file_count: Mapped[int] = mapped_column(Integer, server_default="0")
    line_count: Mapped[int] = mapped_column(Integer, server_default="0")
    event_count: Mapped[int] = mapped_column(Integer, server_default="0")
    kernel_count: Mapped[int] = mapped_column(Integer, server_default="0")
    stage_count: Mapped[int] = mapped_column(Integer, server_default="0")
    raw_line_count: Mapped[int] = mapped_column(Integer, server_default="0")
    problem_count: Mapped[int] = mapped_column(Integer, server_default="0")
    test: Mapped[str | None] = mapped_column(String(300))  # the libtest test this run is (one run per test)
    variant: Mapped[str | None] = mapped_column(String(20))  # codegen_tests! backend: clang llvm amd metal cuda
    outcome: Mapped[str | None] = mapped_column(String(20))  # ok FAILED ignored skipped; NULL: the log ends in it
    panic_location: Mapped[str | None] = mapped_column(Text)  # FILE:LINE:COL of `thread '..' panicked at`
    panic_message: Mapped[str | None] = mapped_column(Text)
    failed_kernel: Mapped[int | None] = mapped_column(Integer)  # the kernel being lowered when it panicked
    last_stage: Mapped[str | None] = mapped_column(String(200))  # the last stage that kernel reached


class SvodFile(Base):
    __tablename__ = "svod_files"
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(40))
    blob_id: Mapped[int] = mapped_column(ForeignKey("blobs.id"))


class SvodKernel(Base):
    __tablename__ = "svod_kernels"
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    kernel_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    test: Mapped[str | None] = mapped_column(String(300))  # the libtest test it ran in, where the log says
    name: Mapped[str | None] = mapped_column(String(200))  # from its generated code
    file_position: Mapped[int] = mapped_column(Integer)
    line_no: Mapped[int] = mapped_column(Integer)
    code_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))
    code_kind: Mapped[str | None] = mapped_column(String(20))  # c | llvm


class SvodStage(Base):
    """A stage of a kernel (or of the schedule: kernel_index NULL) as one source printed it."""

    __tablename__ = "svod_stages"
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    kernel_index: Mapped[int | None] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(200), index=True)
    source: Mapped[str] = mapped_column(String(40))  # event | per-stage | dump-stage | dump-canonical | ...
    file_position: Mapped[int] = mapped_column(Integer)
    line_no: Mapped[int] = mapped_column(Integer)
    node_count: Mapped[int | None] = mapped_column(Integer)
    tree_id: Mapped[int | None] = mapped_column(ForeignKey("svod_trees.id"), index=True)
    text_blob_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"))  # text kept where no tree parsed
    canonical_doc_id: Mapped[int | None] = mapped_column(ForeignKey("canonical_docs.id"), index=True)
    message: Mapped[str | None] = mapped_column(Text)
    elapsed_ms: Mapped[int | None] = mapped_column(Integer)
    # a stage of kernels optimized in parallel that no evidence in the log ties to one kernel (kernel_index NULL)
    unattributed: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)


class SvodEvent(Base):
    """One JSON tracing event."""

    __tablename__ = "svod_events"
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    file_position: Mapped[int] = mapped_column(Integer, primary_key=True)
    line_no: Mapped[int] = mapped_column(Integer, primary_key=True)
    timestamp: Mapped[str | None] = mapped_column(String(40))
    level: Mapped[str | None] = mapped_column(String(20))
    target: Mapped[str | None] = mapped_column(String(200))
    message: Mapped[str | None] = mapped_column(Text)
    fields: Mapped[str] = mapped_column(Text)  # JSON object, trees included


class SvodRuleFire(Base):
    """Svod's `pattern matched` events (one per rewrite, naming only the rewritten node's OpKey) counted per op key
    over a stretch between two pass events: the stage they precede (`label`, `stage_seq`; `codegen` for those
    before a kernel's generated code) and the stage before them (`since`). Loose matches: no kernel, no label."""

    __tablename__ = "svod_rule_fires"
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    kernel_index: Mapped[int | None] = mapped_column(Integer)
    stage_seq: Mapped[int | None] = mapped_column(Integer)  # svod_stages.seq of the stage they precede
    label: Mapped[str | None] = mapped_column(String(200))
    since: Mapped[str | None] = mapped_column(String(200))
    op_key: Mapped[str] = mapped_column(String(200))
    count: Mapped[int] = mapped_column(Integer)
    file_position: Mapped[int] = mapped_column(Integer)
    first_line: Mapped[int] = mapped_column(Integer)
    last_line: Mapped[int] = mapped_column(Integer)
    unattributed: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)


class SvodProblem(Base):
    """Something a reader could not take as it is, with its file and 1-based line; the text is kept."""

    __tablename__ = "svod_problems"
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), index=True)
    file_position: Mapped[int] = mapped_column(Integer)
    line_no: Mapped[int] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)


class SvodStageMap(Base):
    """Svod's stage labels against tinygrad's passes (a copy of tgstore/svod/maps.toml's [[stages]])."""

    __tablename__ = "svod_stage_map"
    label: Mapped[str] = mapped_column(String(200), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    scope: Mapped[str] = mapped_column(String(20))
    pass_name: Mapped[str | None] = mapped_column(String(200))
    pass_input: Mapped[bool] = mapped_column(Boolean)  # the tree is the pass's input, not its output
    canonical: Mapped[str | None] = mapped_column(String(40))
