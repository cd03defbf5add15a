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

Within one process, SQLite's writers also queue for their turn, first come first served
(`WriteQueue`), before they ask SQLite for the lock. SQLite's own wait is a busy handler
that sleeps and tries again, up to 100 ms between tries: a writer that commits and begins
again at once (a harvest, batch after batch) wins every time against writers asleep in it,
and a writer can lose to the others until its wait runs out (503) while they go ahead, even
among writers alone (`bench/bench_store.py --sections writes`, 8 writers). Only another process's
writer still meets SQLite's busy handler.

Writes commit in one place, `unit_of_work`: a request that writes, a CLI command
and a background step each open one, and the services they call only add to its session.
"""

import sqlite3
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import ClauseElement, Connection, Engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Session, create_engine

from app import store
from app.config import DEFAULT_LOCK_TIMEOUT_S, PROJECT_ROOT, Settings
from app.store import postgres
from app.store.fulltext import NORMAL_TEXT_SQL, normal_text

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
_WRITE_OPTION = "errkb_writer"
_ONE_READ_OPTION = "errkb_one_read"  # read_now: a statement outside any transaction of ours
_IN_QUEUE = "errkb_write_turn"  # connection.info: this connection's transaction has the turn


class WriteWaitTimeout(Exception):
    """A writer waited its whole lock timeout in the process's queue of writers."""


class WriteQueue:
    """The writers of one SQLite store in this process, in the order they came: one at a
    time, the first to come first (threading.Lock promises no order, and a releasing thread
    that asks again at once would often get it back)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._waiting: deque[object] = deque()  # the first one holds the turn

    def take(self, timeout_s: float) -> bool:
        """Wait for this thread's turn, at most `timeout_s`; whether it came."""
        me = object()
        with self._changed:
            self._waiting.append(me)
            if self._changed.wait_for(lambda: self._waiting[0] is me, timeout_s):
                return True
            self._waiting.remove(me)
            self._changed.notify_all()
            return False

    def give_back(self) -> None:
        """End the turn of the writer that holds it; the next one in line goes."""
        with self._changed:
            self._waiting.popleft()
            self._changed.notify_all()


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
    large as PostgreSQL's all the same: SQLAlchemy's default of 5 + 10 would make requests
    wait on each other for a connection once more threads than that read."""
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
    writers = WriteQueue()
    event.listen(engine, "begin", partial(_begin_sqlite_transaction, writers, lock_timeout_s))
    event.listen(engine, "commit", partial(_end_sqlite_transaction, writers))
    event.listen(engine, "rollback", partial(_end_sqlite_transaction, writers))
    event.listen(engine.pool, "checkin", partial(_give_back_abandoned_turn, writers))
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
    # What the full-text triggers index a field's text as (migration 0013): one function for
    # the index and the query.
    dbapi_connection.create_function(NORMAL_TEXT_SQL, 1, normal_text, deterministic=True)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_sqlite_transaction(
    writers: WriteQueue, timeout_s: float, connection: Connection
) -> None:
    """A reader begins at once; a writer waits for its turn among this process's writers,
    then for SQLite's write lock (another process may hold it)."""
    options = connection.get_execution_options()
    if options.get(_ONE_READ_OPTION, False):
        return  # one statement, its own transaction (read_now)
    if not options.get(_WRITE_OPTION, False):
        connection.exec_driver_sql("BEGIN")
        return
    if not writers.take(timeout_s):
        wait = WriteWaitTimeout(f"no turn to write within {timeout_s} s")
        raise OperationalError("BEGIN IMMEDIATE", None, wait)
    connection.info[_IN_QUEUE] = True
    try:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    except BaseException:
        _end_sqlite_transaction(writers, connection)
        raise


def _end_sqlite_transaction(writers: WriteQueue, connection: Connection) -> None:
    """Commit or rollback: a writer's turn ends (once, however many times it is called)."""
    if connection.info.pop(_IN_QUEUE, False):
        writers.give_back()


def _give_back_abandoned_turn(
    writers: WriteQueue, _dbapi_connection: object, record: ConnectionPoolEntry
) -> None:
    """A connection back in the pool still holding a turn: its session was dropped without a
    commit or rollback (the pool rolls it back itself, without the events above). Its turn
    ends here, or every writer after it would wait for it in vain."""
    if record.info.pop(_IN_QUEUE, False):
        writers.give_back()


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


def read_now(engine: Engine, statement: ClauseElement) -> list[tuple[Any, ...]]:
    """The rows of one read statement on a connection of its own: for the check that a
    kept reply or a match makes on every request (app.records.dataset_cache), without a session.

    On SQLite the statement runs in no transaction of ours (no BEGIN, no ROLLBACK): one call
    into the driver where a session's read makes three, each letting go of the GIL and waiting
    to take it back. It is sent as its SQL with the values written in, compiled once per engine
    and statement, so no execution compiles or binds it again (docs/benchmarks.md, "Costs
    behind the code's choices"). Only for statements whose values are the code's own
    constants."""
    key = (engine.dialect.name, id(statement))
    compiled = _LITERAL_SQL.get(key)
    if compiled is None or compiled[0] is not statement:
        sql = str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
        compiled = _LITERAL_SQL[key] = (statement, sql)
    with engine.connect().execution_options(**{_ONE_READ_OPTION: True}) as connection:
        return [tuple(row) for row in connection.exec_driver_sql(compiled[1])]


_LITERAL_SQL: dict[tuple[str, int], tuple[ClauseElement, str]] = {}
"""read_now's SQL by dialect and statement (held, so that its id is never another's)."""


def is_lock_timeout(error: OperationalError) -> bool:
    """Whether a database error is a lock wait that ran out (SQLite's SQLITE_BUSY), which the
    API answers with 503 and Retry-After: the request may succeed when retried."""
    original = error.orig
    if isinstance(original, WriteWaitTimeout):
        return True
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
