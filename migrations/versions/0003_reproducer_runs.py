"""reproducer runs and drift checks

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _record_id() -> sa.Column:
    return sa.Column(
        "record_id", sa.Text(), sa.ForeignKey("records.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "reproducer_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        _record_id(),
        sa.Column("package", sa.String(), nullable=True),
        sa.Column("version", sa.String(), nullable=True),
        sa.Column("device", sa.String(), nullable=False),
        sa.Column("python", sa.String(), nullable=True),
        sa.Column("torch", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("trigger_status", sa.String(), nullable=True),
        sa.Column("fix_status", sa.String(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("output_tail", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_reproducer_runs_record_started", "reproducer_runs", ["record_id", "started_at"]
    )
    op.create_table(
        "drift_checks",
        sa.Column("id", sa.Integer(), primary_key=True),
        _record_id(),
        sa.Column("package", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("found_line", sa.Integer(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("checked_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_drift_checks_record_checked", "drift_checks", ["record_id", "checked_at"])


def downgrade() -> None:
    op.drop_table("drift_checks")
    op.drop_table("reproducer_runs")
