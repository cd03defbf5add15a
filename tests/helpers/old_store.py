"""Stores as earlier revisions of errkb left them, for tests of what an upgrade repairs."""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, MetaData, insert

from app.records import service as records
from app.records.model import parse_record
from app.store.engine import MIGRATIONS_DIR


def insert_at_revision(
    engine: Engine,
    rows: Sequence[dict[str, Any]],
    *,
    review_state: str = records.REVIEWED,
    origin: str = "import",
) -> None:
    """Insert records the way the code of the database's own revision wrote them: only the
    columns its `records` table has (later columns did not exist yet)."""
    metadata = MetaData()
    metadata.reflect(engine, only=["records"])
    table = metadata.tables["records"]
    now = datetime.now(UTC)
    values = []
    for record in rows:
        text = records.canonical_json(record)
        row = records.record_row(parse_record(text), text, now)
        row |= {"created_at": now, "review_state": review_state, "origin": origin}
        values.append({key: value for key, value in row.items() if key in table.c})
    with engine.begin() as connection:
        connection.execute(insert(table), values)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to `revision`, the way app.store.engine.upgrade takes it forward."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
