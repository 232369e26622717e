"""svod_kernels.renderer: the tinygrad renderer a Svod kernel is compared with, decided once at store time

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04 13:00:00

`parity` and the `parity_matrix` query both read it (they decided it apart: the query by `::llvm` or LLVM code,
`parity` by the test's last segment then the code's kind). Existing rows are filled by the same function new rows
are stored with. Additive.
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE, as 0018 does (no batch rebuild under views).
def upgrade() -> None:
    from tgstore.spelling.svod import kernel_renderer
    from tgstore.svod.readers.sessions import variant_of

    op.add_column("svod_kernels", sa.Column("renderer", sa.String(length=20), nullable=True))
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT run_id, kernel_index, test, code_kind FROM svod_kernels")).all()
    if not rows:
        return
    conn.execute(sa.text("UPDATE svod_kernels SET renderer = :renderer WHERE run_id = :run AND kernel_index = :index"),
                 [{"renderer": kernel_renderer(variant_of(test), kind), "run": run, "index": index}
                  for run, index, test, kind in rows])


def downgrade() -> None:
    op.execute("ALTER TABLE svod_kernels DROP COLUMN renderer")
