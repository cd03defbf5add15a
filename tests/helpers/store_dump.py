"""Everything a test database holds, as text: to prove a value was never stored."""

import re
import sqlite3

from sqlalchemy import Engine, MetaData, select

BLOB = re.compile(r"X'([0-9A-Fa-f]*)'")


def database_text(engine: Engine) -> str:
    """Every row of every table of the test database, as text: SQLite's own dump (the FTS
    tables' insides too), or each reflected table's rows on PostgreSQL."""
    if engine.dialect.name == "sqlite":
        with sqlite3.connect(engine.url.database) as connection:
            dump = "\n".join(connection.iterdump())
        # Blobs (the FTS index's segments) as their bytes, not their hex: a token stored in
        # them shows as itself, and hex digits never pass for a number that was kept.
        return BLOB.sub(lambda blob: bytes.fromhex(blob[1]).decode("latin-1"), dump)
    metadata = MetaData()
    metadata.reflect(engine)
    with engine.connect() as connection:
        return "\n".join(
            repr(tuple(row))
            for table in metadata.sorted_tables
            for row in connection.execute(select(table))
        )
