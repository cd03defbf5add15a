"""generated reproducers: a script per record, made from its raise site

A generated reproducer is stored with its record, not in reproducers/ (which stays curated):
the script, the release it targets, the trigger and fix calls it shows, and whether it sets
state directly instead of going through the constructor. Its runs are reproducer_runs rows
like the curated ones.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "generated_reproducers",
        sa.Column(
            "record_id",
            sa.Text(),
            sa.ForeignKey("records.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("package", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=False),
        sa.Column("module", sa.String(), nullable=False),
        sa.Column("trigger_call", sa.Text(), nullable=False),
        sa.Column("fix_call", sa.Text(), nullable=False),
        sa.Column("direct_state", sa.Boolean(), nullable=False),
        sa.Column("script", sa.Text(), nullable=False),
        sa.Column("generated_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_generated_reproducers_package", "generated_reproducers", ["package", "record_id"]
    )


def downgrade() -> None:
    op.drop_table("generated_reproducers")
