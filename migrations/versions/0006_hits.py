"""hits: matches and record-page views per record (or unexplained template) and day

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hits",
        sa.Column("kind", sa.String(), primary_key=True),
        sa.Column("subject", sa.Text(), primary_key=True),
        sa.Column("day", sa.Date(), primary_key=True),
        sa.Column("count", sa.Integer(), nullable=False),
    )
    op.create_index("ix_hits_day", "hits", ["day"])


def downgrade() -> None:
    op.drop_table("hits")
