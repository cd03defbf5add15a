"""A clean PostgreSQL schema per test, when ERRKB_TEST_POSTGRES_URL names a database.

Every test that asks for it gets a schema of its own in that database, first on its search
path, with `public` after it for the `unaccent` extension; the schema is dropped afterwards,
with any connection the test left open. A connection's application_name is its schema, so
those connections can be found.
"""

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from sqlalchemy import Engine, NullPool, create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_URL = os.environ.get("ERRKB_TEST_POSTGRES_URL") or None
SQLITE, POSTGRESQL = "sqlite", "postgresql"
ENGINES = [SQLITE, POSTGRESQL] if POSTGRES_URL else [SQLITE]


@cache
def _admin() -> Engine:
    """A connection-per-use engine on the test database, creating the extension once. The
    test processes of one run may all begin at once on a new database, and two
    `CREATE EXTENSION IF NOT EXISTS` at once fail one of them: they take turns."""
    engine = create_engine(POSTGRES_URL, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _EXTENSION_LOCK})
        try:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public"))
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _EXTENSION_LOCK})
    return engine


_EXTENSION_LOCK = 0x6572726B62  # "errkb": any number other users of the database do not take


def schema_url(schema: str) -> str:
    """The test database's URL with this schema first on the search path."""
    url = make_url(POSTGRES_URL).update_query_dict(
        {"options": f"-csearch_path={schema},public", "application_name": schema}
    )
    return url.render_as_string(hide_password=False)


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new empty schema for one test, and its URL; dropped afterwards."""
    schema = f"errkb_test_{uuid.uuid4().hex[:12]}"
    with _admin().connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield schema_url(schema)
    finally:
        with _admin().connect() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = :schema AND pid != pg_backend_pid()"
                ),
                {"schema": schema},
            )
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))


@contextmanager
def other_store(url: str, folder: Path) -> Iterator[str]:
    """An empty store on the other engine than `url`'s: a PostgreSQL schema for a SQLite
    store when a test database is at hand, else a SQLite file."""
    if url.startswith("sqlite") and POSTGRES_URL:
        with fresh_schema() as schema:
            yield schema
    else:
        yield f"sqlite:///{folder / 'other-engine.db'}"
