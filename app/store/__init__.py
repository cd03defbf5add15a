"""The store: the only place that knows which database engine holds the records.

SQLite is the embedded default; PostgreSQL serves several replicas. Tables are the SQLModel
tables of app.store.tables and change only through Alembic (migrations/, dialect-aware); the
full-text index is declared once in app.store.fulltext; everything that differs between the
engines is behind `Backend` (app.store.base), which app.store.sqlite and app.store.postgres
implement. Services ask `backend(session_or_engine)` and never write engine-specific SQL.
"""

from sqlalchemy import Connection, Engine
from sqlmodel import Session

from app.store.base import Backend
from app.store.postgres import PostgresBackend
from app.store.sqlite import SqliteBackend

SQL_CHUNK = 500
"""Most values bound in one `IN (...)` list: under SQLite's oldest limit of host parameters
per statement (999), and a statement PostgreSQL plans quickly."""

_BACKENDS: dict[str, Backend] = {each.name: each for each in (SqliteBackend(), PostgresBackend())}


def backend(bind: Session | Engine | Connection) -> Backend:
    """The store implementation of the engine behind a session, engine or connection."""
    if isinstance(bind, Session):
        bind = bind.get_bind()
    name = bind.dialect.name
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"errkb stores records in SQLite or PostgreSQL, not {name}") from None


def names_nothing(*values: str) -> bool:
    """Whether a lookup by these values must find nothing: PostgreSQL cannot hold a NUL
    character, so no stored key has one, and asking would fail instead of finding nothing.
    Lookups by key answer "not found" on both engines alike."""
    return any("\x00" in value for value in values)


__all__ = ["SQL_CHUNK", "Backend", "backend", "names_nothing"]
