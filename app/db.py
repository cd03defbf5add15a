"""Database engine and sessions: SQLite's connection settings here, PostgreSQL's engine and
everything else that differs between the engines in app/store (issue 14).

SQLite specifics (WAL, foreign keys, busy timeout, the file's folder) live here (issue 2).
"""

from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session, create_engine

from app import store
from app.config import PROJECT_ROOT, Settings
from app.store import postgres

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def is_sqlite(url: str) -> bool:
    """Whether the URL names an SQLite database (the embedded default)."""
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, pool: postgres.PoolOptions | None = None) -> Engine:
    """An engine for the URL; for SQLite, WAL journaling and enforced foreign keys; for
    PostgreSQL, the pool of ERRKB_DB_POOL_* (SQLite keeps SQLAlchemy's own: its connections
    cost next to nothing to open)."""
    if not is_sqlite(url):
        return postgres.make_engine(url, pool or postgres.PoolOptions.of())
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False})
    event.listen(engine, "connect", _configure_sqlite_connection)
    event.listen(engine, "begin", _begin_sqlite_transaction)
    return engine


def _configure_sqlite_connection(dbapi_connection, _record) -> None:
    """WAL lets readers run during a write; SQLite leaves foreign keys off unless asked.

    The driver's own transaction handling is turned off (its legacy mode opens a transaction
    only before INSERT/UPDATE/DELETE, so DDL such as a trigger swap would commit on its
    own); `_begin_sqlite_transaction` opens every transaction instead, so schema changes
    and data changes commit or roll back together.
    """
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_sqlite_transaction(connection) -> None:
    connection.exec_driver_sql("BEGIN")


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply pending Alembic migrations: the only way the schema is created or changed."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Replicas or workers starting together upgrade one after the other (issue 14).
    with store.backend(engine).exclusive(engine, "migrate"), engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def open_store(settings: Settings) -> Engine:
    """The engine for the configured database, migrated to the newest schema."""
    engine = make_engine(settings.database_url, postgres.PoolOptions.of(settings))
    upgrade(engine)
    return engine


def session_scope(engine: Engine) -> Iterator[Session]:
    """One session per unit of work, closed afterwards (FastAPI dependency body)."""
    with Session(engine) as session:
        yield session
