"""records, record tags and dataset state

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "records",
        sa.Column("id", sa.String(length=16), primary_key=True),
        sa.Column("repo", sa.String(), nullable=False),
        sa.Column("slug", sa.String(), nullable=False),
        sa.Column("error_class", sa.String(), nullable=False),
        sa.Column("error_type", sa.String(), nullable=False),
        sa.Column("severity", sa.String(), nullable=False),
        sa.Column("handling_strategy", sa.String(), nullable=True),
        sa.Column("file_path", sa.String(), nullable=True),
        sa.Column("line_number", sa.Integer(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=False),
        sa.Column("message_pattern", sa.Text(), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("review_state", sa.String(), nullable=False, server_default="reviewed"),
        sa.Column("origin", sa.String(), nullable=False, server_default="import"),
        sa.Column("gone_in", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("modified_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_records_repo", "records", ["repo"])
    op.create_index("ix_records_error_class", "records", ["error_class"])
    op.create_index("ix_records_review_state", "records", ["review_state"])
    op.create_index("ix_records_repo_slug", "records", ["repo", "slug"])
    op.create_index("ix_records_modified_at", "records", ["modified_at"])
    op.create_table(
        "record_tags",
        sa.Column(
            "record_id",
            sa.Text(),
            sa.ForeignKey("records.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("tag", sa.String(), primary_key=True),
    )
    op.create_index("ix_record_tags_tag", "record_tags", ["tag"])
    op.create_table(
        "dataset_state",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("value", sa.String(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dataset_state")
    op.drop_table("record_tags")
    op.drop_table("records")
