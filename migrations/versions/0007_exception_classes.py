"""exception classes: each harvested release's exception classes and their bases

- `exception_classes`: one row per release and class name, with the names of its bases as a
  JSON list, so that matching can tell a subclass or a superclass of the record's class
  (vLLM's `VLLMValidationError`, once a `ValueError`) from an unrelated one. A release
  harvested before this revision has no rows until it is harvested again.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exception_classes",
        sa.Column("release", sa.String(), primary_key=True),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("bases", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("exception_classes")
