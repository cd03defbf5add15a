"""Database engine and sessions: SQLite's connection settings here, PostgreSQL's engine and
everything else that differs between the engines in the rest of app/store.

SQLite specifics (WAL, foreign keys, busy timeout, the file's folder, how a transaction
begins) live here.

Writers and readers open their transactions differently. A reader's plain `BEGIN`
takes no lock until it reads, and WAL lets it read while another connection writes. A writer
that began that way and read before writing cannot take the write lock once another writer
has committed in between: SQLite answers "database is locked" at once, whatever the busy
timeout. So every writer goes through `write_session`, whose transactions begin with
`BEGIN IMMEDIATE`: the write lock is taken up front, waiting at most the busy timeout, and
what the writer reads stays true until it commits.

Writes commit in one place, `unit_of_work`: a request that writes, a CLI command
and a background step each open one, and the services they call only add to its session.
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from app import store
from app.config import DEFAULT_LOCK_TIMEOUT_S, PROJECT_ROOT, Settings
from app.store import postgres

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
_WRITE_OPTION = "errkb_writer"


def is_sqlite(url: str) -> bool:
    """Whether the URL names an SQLite database (the embedded default)."""
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(
    url: str,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    pool: postgres.PoolOptions | None = None,
) -> Engine:
    """An engine for the URL with the pool of ERRKB_DB_POOL_*; for SQLite, WAL journaling,
    enforced foreign keys, and lock waits of at most `lock_timeout_s`
    (Settings.lock_timeout_s). SQLite's connections cost next to nothing, but its pool is as
    large as PostgreSQL's all the same: SQLAlchemy's default of 5 + 10 made requests wait on
    each other for a connection once more threads than that were reading."""
    pool = pool or postgres.PoolOptions.of()
    if not is_sqlite(url):
        return postgres.make_engine(url, pool)
    database = make_url(url).database
    sizes: dict[str, float] = {}
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
        sizes = {
            "pool_size": pool.size,
            "max_overflow": pool.max_overflow,
            "pool_timeout": pool.timeout_s,
        }
    engine = create_engine(url, connect_args={"check_same_thread": False}, **sizes)
    busy_timeout_ms = round(lock_timeout_s * 1000)
    event.listen(engine, "connect", partial(_configure_sqlite_connection, busy_timeout_ms))
    event.listen(engine, "begin", _begin_sqlite_transaction)
    return engine


def _configure_sqlite_connection(
    busy_timeout_ms: int, dbapi_connection: sqlite3.Connection, _record: object
) -> None:
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
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_sqlite_transaction(connection: Connection) -> None:
    writer = connection.get_execution_options().get(_WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


def writer(engine: Engine) -> Engine:
    """The engine as writers use it: on SQLite its transactions begin with BEGIN IMMEDIATE.

    The same pool and connections; only the option that `_begin_sqlite_transaction` reads.
    """
    return engine.execution_options(**{_WRITE_OPTION: True})


def write_session(engine: Engine) -> Session:
    """A session for a unit of work that writes: every transaction takes the write lock when
    it begins, so its reads and writes see one state (module docstring). Read what the reply
    needs before committing: after the commit the session would begin (and lock) again."""
    return Session(writer(engine))


def is_lock_timeout(error: OperationalError) -> bool:
    """Whether a database error is a lock wait that ran out (SQLite's SQLITE_BUSY), which the
    API answers with 503 and Retry-After: the request may succeed when retried."""
    original = error.orig
    if not isinstance(original, sqlite3.OperationalError):
        return False
    primary = original.sqlite_errorcode & 0xFF  # the extended code, e.g. SQLITE_BUSY_SNAPSHOT
    return primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply pending Alembic migrations: the only way the schema is created or changed."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Replicas or workers starting together upgrade one after the other.
    with store.backend(engine).exclusive(engine, "migrate"), writer(engine).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def open_store(settings: Settings) -> Engine:
    """The engine for the configured database, migrated to the newest schema."""
    engine = make_engine(
        settings.database_url, settings.lock_timeout_s, postgres.PoolOptions.of(settings)
    )
    upgrade(engine)
    return engine


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Session]:
    """The one place a write commits: a write session whose work is committed when
    the block ends and rolled back when it raises. A request that writes (app.serving.deps), a
    CLI command and a background step each open one; services only add to the session."""
    with write_session(engine) as session:
        yield session
        session.commit()
