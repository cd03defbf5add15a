"""hot path indexes: record_locations by release and file; the other listing filters

A record's "changed in" history asks which sites a release has in one file; the table's
only index was its primary key (record_id, release), so each such question read every
location of every release (244k rows on the default store with its older releases), once
per matched record and per record page. Replacing a release's locations on harvest asks by
release too.

The listing filters on severity, error type and handling strategy read every record to
count and page; each gets an index of (column, id) like those of revision 0004.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_FILTERS = ("severity", "error_type", "handling_strategy")


def upgrade() -> None:
    op.create_index(
        "ix_record_locations_release_file", "record_locations", ["release", "file_path"]
    )
    for column in _FILTERS:
        op.create_index(f"ix_records_{column}_id", "records", [column, "id"])


def downgrade() -> None:
    for column in _FILTERS:
        op.drop_index(f"ix_records_{column}_id", table_name="records")
    op.drop_index("ix_record_locations_release_file", table_name="record_locations")
