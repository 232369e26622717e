"""The content-addressed artifacts runs point at: blobs, kernel ASTs and their UOps, linearized programs, pass
lists and their graphs, canonical documents, rules and their match counts, case results."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from tgstore.db.models.base import Base


class Blob(Base):
    """Any text artifact (source, pyrender, AST text, DEBUG output), stored once per distinct content."""

    __tablename__ = "blobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)


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
