"""Svod (a Rust port of tinygrad): what its tests print, read by tgstore.svod.readers and stored by
tgstore.svod.store."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from tgstore.db.models.base import Base


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
    # libtest or nextest kept the test's output and showed none: its kernels are unknown, not 0
    output_captured: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)
    schedule_count: Mapped[int] = mapped_column(Integer, server_default="0")  # realizes printed (two programs: 2)
    panic_thread: Mapped[str | None] = mapped_column(String(500))  # NAME of `thread 'NAME' panicked` (`<unnamed>`)


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
    code_kind: Mapped[str | None] = mapped_column(String(20))  # c | metal | llvm | nvptx | amdgpu
    renderer: Mapped[str | None] = mapped_column(String(20))  # tinygrad's, compared with (spelling.kernel_renderer)
    schedule: Mapped[int] = mapped_column(Integer, server_default="0")  # which of the run's schedules it is of


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
    # unattributed stages proven to be one kernel's (its kernel unknown) share a fragment number
    fragment: Mapped[int | None] = mapped_column(Integer)
    schedule: Mapped[int] = mapped_column(Integer, server_default="0")  # a schedule stage's schedule


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
    """Svod's stage labels against tinygrad's passes (a copy of tgstore/spelling/maps.toml's [[stages]])."""

    __tablename__ = "svod_stage_map"
    label: Mapped[str] = mapped_column(String(200), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    scope: Mapped[str] = mapped_column(String(20))
    pass_name: Mapped[str | None] = mapped_column(String(200))
    pass_input: Mapped[bool] = mapped_column(Boolean)  # the tree is the pass's input, not its output
    canonical: Mapped[str | None] = mapped_column(String(40))


class SvodParity(Base):
    """What `tgstore parity` decided for one Svod run against one tinygrad run, stage by stage (svod/parity.py is the
    one place verdicts are decided; the `parity_matrix` query and the parity page read these rows)."""

    __tablename__ = "svod_parity"
    svod_run: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    tinygrad_run: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True,
                                              index=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String(20))  # kernel | schedule
    kernel_index: Mapped[int | None] = mapped_column(Integer)  # the Svod kernel (NULL: none paired, or the schedule)
    svod_name: Mapped[str | None] = mapped_column(String(200))
    tinygrad_position: Mapped[int | None] = mapped_column(Integer)
    tinygrad_name: Mapped[str | None] = mapped_column(String(200))
    renderer: Mapped[str | None] = mapped_column(String(20))
    paired_by: Mapped[str | None] = mapped_column(String(40))  # name | name (counter suffix) | structure | order
    stage: Mapped[str] = mapped_column(String(200))
    basis: Mapped[str] = mapped_column(String(20))  # tree | node_count | canonical
    verdict: Mapped[str] = mapped_column(String(40))
    svod_nodes: Mapped[int | None] = mapped_column(Integer)
    tinygrad_nodes: Mapped[int | None] = mapped_column(Integer)
    tinygrad_pass: Mapped[str | None] = mapped_column(String(200))
    why: Mapped[str | None] = mapped_column(Text)


class SvodParityPair(Base):
    """A (Svod run, tinygrad run) pair whose verdicts are in svod_parity, and by which rules (`decider`,
    svod/parity_store.py's DECIDER: a pair of an older one is decided again by `parity-refresh`)."""

    __tablename__ = "svod_parity_pairs"
    svod_run: Mapped[int] = mapped_column(ForeignKey("svod_runs.id", ondelete="CASCADE"), primary_key=True)
    tinygrad_run: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True,
                                              index=True)
    decided_at: Mapped[str] = mapped_column(String(40))
    decider: Mapped[int] = mapped_column(Integer)
