"""hit totals: each subject's hits over all its days, kept up to date by the hit flush

The curation queue lists subjects most-hit first over all their days; summing their hits
for every request read every row of hits: at the cap of templates per day for 30 days
(30,000 rows) a listing took a second on SQLite. hit_totals holds each subject's sum and
last day, written by the flush for the subjects it changed, and its index (hits, kind,
subject), walked backwards, is the queue's order: a page reads its own rows and stops.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "hit_totals",
        sa.Column("kind", sa.String(), primary_key=True),
        sa.Column("subject", sa.Text(), primary_key=True),
        sa.Column("hits", sa.BigInteger(), nullable=False),
        sa.Column("last_hit", sa.Date(), nullable=False),
    )
    op.create_index("ix_hit_totals_queue", "hit_totals", ["hits", "kind", "subject"])
    op.execute(
        "INSERT INTO hit_totals (kind, subject, hits, last_hit)"
        " SELECT kind, subject, sum(count), max(day) FROM hits GROUP BY kind, subject"
    )


def downgrade() -> None:
    op.drop_table("hit_totals")
