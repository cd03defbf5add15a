"""listing indexes: (filter column, id), so a filtered page is read in id order

GET /api/errors?repo=... sorted every matching row to find a page (20 ms at 50k records);
with the id beside the filter column the index hands out ids already in order.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_COLUMNS = ("repo", "error_class", "review_state")


def upgrade() -> None:
    for column in _COLUMNS:
        op.drop_index(f"ix_records_{column}", table_name="records")
        op.create_index(f"ix_records_{column}_id", "records", [column, "id"])


def downgrade() -> None:
    for column in _COLUMNS:
        op.drop_index(f"ix_records_{column}_id", table_name="records")
        op.create_index(f"ix_records_{column}", "records", [column])
