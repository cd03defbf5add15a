"""Everything a test database holds, as text: to prove a value was never stored."""

import sqlite3

from sqlalchemy import Engine, MetaData, select


def database_text(engine: Engine) -> str:
    """Every row of every table of the test database, as text: SQLite's own dump (the FTS
    tables' insides too), or each reflected table's rows on PostgreSQL."""
    if engine.dialect.name == "sqlite":
        with sqlite3.connect(engine.url.database) as connection:
            return "\n".join(connection.iterdump())
    metadata = MetaData()
    metadata.reflect(engine)
    with engine.connect() as connection:
        return "\n".join(
            repr(tuple(row))
            for table in metadata.sorted_tables
            for row in connection.execute(select(table))
        )
