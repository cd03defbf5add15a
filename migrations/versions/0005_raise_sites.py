"""raise sites: one record per site, its location in each harvested release

- `records.site_key`: the key of the raise site a record describes (app.records.site_keys.site_key),
  indexed, so a reviewed record finds the drafts of its site without reading documents.
- `record_locations`: where a record's site is in each harvested release, or that it is
  gone there. Backfilled from the drafts stored so far: each came from the release its
  origin (`harvest:vllm==0.33.0`) names, and its document holds that location.
- `record_aliases`: ids of drafts a reviewed record absorbed; they keep answering.
- `record_locations.code_context`: what the code around the site checks, who calls it and
  who catches it, as harvest computed it for that release (JSON).

Then the duplicates that harvests made before this revision (a draft beside the curated
record of the same site) are merged into the curated record, through the same code that
merges them from now on, so upgrading repairs a database without anyone deleting it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op
from sqlmodel import Session

from app.records import locations, site_keys
from app.records import service as records
from app.records.model import parse_record

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_HARVEST_ORIGIN = "harvest:"


def _record_id(primary_key: bool = False) -> sa.Column:
    return sa.Column(
        "record_id",
        sa.Text(),
        sa.ForeignKey("records.id", ondelete="CASCADE"),
        nullable=False,
        primary_key=primary_key,
    )


def upgrade() -> None:
    op.add_column("records", sa.Column("site_key", sa.String(length=32), nullable=True))
    op.create_index("ix_records_site_key", "records", ["site_key"])
    op.create_table(
        "record_locations",
        _record_id(primary_key=True),
        sa.Column("release", sa.String(), primary_key=True),
        sa.Column("ref", sa.String(), nullable=False),
        sa.Column("file_path", sa.String(), nullable=False),
        sa.Column("line_number", sa.Integer(), nullable=True),
        sa.Column("function", sa.String(), nullable=True),
        sa.Column("source_code", sa.Text(), nullable=True),
        sa.Column("source_code_start", sa.Integer(), nullable=True),
        sa.Column("source_code_end", sa.Integer(), nullable=True),
        sa.Column("github_url", sa.Text(), nullable=True),
        sa.Column("gone", sa.Boolean(), nullable=False),
        sa.Column("code_context", sa.Text(), nullable=True),
    )
    op.create_table(
        "record_aliases",
        sa.Column("alias_id", sa.String(length=16), primary_key=True),
        _record_id(),
    )
    op.create_index("ix_record_aliases_record_id", "record_aliases", ["record_id"])
    _backfill()


def _backfill() -> None:
    connection = op.get_bind()
    table = sa.table(
        "records",
        sa.column("id"),
        sa.column("document"),
        sa.column("origin"),
        sa.column("review_state"),
        sa.column("site_key"),
    )
    keys, rows = [], []
    columns = (table.c.id, table.c.document, table.c.origin, table.c.review_state)
    for record_id, document, origin, review_state in connection.execute(sa.select(*columns)):
        record = parse_record(document)
        keys.append({"record_id": record_id, "key": site_keys.site_key(record)})
        if review_state == locations.DRAFT and origin.startswith(_HARVEST_ORIGIN):
            release = origin.removeprefix(_HARVEST_ORIGIN)
            found = locations.Location.of(record, release, site_keys.raising_function(record))
            rows.append(locations.location_row(record_id, found))
    if keys:
        connection.execute(
            table.update()
            .where(table.c.id == sa.bindparam("record_id"))
            .values(site_key=sa.bindparam("key")),
            keys,
        )
    if rows:
        connection.execute(sa.table("record_locations", *map(sa.column, rows[0])).insert(), rows)
    session = Session(bind=connection)
    if locations.absorb_duplicates(session):
        records.bump_dataset_version(session)
        session.flush()


def downgrade() -> None:
    op.drop_table("record_aliases")
    op.drop_table("record_locations")
    op.drop_index("ix_records_site_key", table_name="records")
    op.drop_column("records", "site_key")
