"""reproducer runs' provenance: the machine, the CUDA version, where a run was imported from

A run made on another machine (a GPU machine's bundle, the runs shipped in data/runs/) is
imported with what it ran on: the machine in words (GPU name, memory, driver, compute
capability; or the CPU), the CUDA version torch was built with, and the file it came from.
`run_key` names a run by its record, start and machine, so importing the same file twice
adds nothing.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reproducer_runs") as batch:
        batch.add_column(sa.Column("machine", sa.Text(), nullable=True))
        batch.add_column(sa.Column("cuda", sa.String(), nullable=True))
        batch.add_column(sa.Column("origin", sa.Text(), nullable=True))
        batch.add_column(sa.Column("run_key", sa.String(), nullable=True))
    op.create_index("ux_reproducer_runs_run_key", "reproducer_runs", ["run_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_reproducer_runs_run_key", table_name="reproducer_runs")
    with op.batch_alter_table("reproducer_runs") as batch:
        for column in ("run_key", "origin", "cuda", "machine"):
            batch.drop_column(column)
