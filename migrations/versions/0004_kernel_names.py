"""kernels.name: the kernel's function name as the C renderer (else the first renderer) named it

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 16:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The name was only reachable through programs; stored on the kernel it shows in the kernels table itself and
# v_kernels no longer needs a subquery per row.
NAME_OF_KERNEL = """
    (SELECT p.name FROM schedule_items si JOIN programs p ON p.schedule_item_id = si.id
     WHERE si.kernel_id = kernels.id AND p.name IS NOT NULL
     ORDER BY p.renderer = 'C' DESC, p.renderer, p.id LIMIT 1)"""

V_KERNELS_SELECT = """
        SELECT rc.run_id, c.sha, c.version, c.committed_at, r.backend, k.name AS "case", si.position, si.root_op,
               kn.id AS kernel_id, kn.hash AS kernel_hash, kn.node_count, {kernel_name} AS kernel_name,
               pr.text AS pyrender, at.text AS ast_text
        FROM run_cases rc JOIN runs r ON r.id = rc.run_id JOIN tinygrad_commits c ON c.id = r.commit_id
        JOIN cases k ON k.id = rc.case_id JOIN schedule_items si ON si.case_result_id = rc.case_result_id
        JOIN kernels kn ON kn.id = si.kernel_id
        LEFT JOIN blobs pr ON pr.id = kn.pyrender_blob_id LEFT JOIN blobs at ON at.id = kn.ast_text_blob_id"""
OLD_KERNEL_NAME = """(SELECT p.name FROM programs p WHERE p.schedule_item_id = si.id AND p.name IS NOT NULL
                ORDER BY p.renderer = 'C' DESC, p.renderer LIMIT 1)"""


def upgrade() -> None:
    op.execute("DROP VIEW v_kernels")
    with op.batch_alter_table("kernels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f("ix_kernels_name"), ["name"], unique=False)
    op.execute(f"UPDATE kernels SET name = {NAME_OF_KERNEL}")
    op.execute("CREATE VIEW v_kernels AS " + V_KERNELS_SELECT.format(kernel_name="kn.name"))


def downgrade() -> None:
    op.execute("DROP VIEW v_kernels")
    with op.batch_alter_table("kernels", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_kernels_name"))
        batch_op.drop_column("name")
    op.execute("CREATE VIEW v_kernels AS " + V_KERNELS_SELECT.format(kernel_name=OLD_KERNEL_NAME))
