"""PostgreSQL's store: the engine and its pool, full-text search over weighted tsvectors, and
advisory locks that span every replica of one database.

Search: `record_search.head_tsv` holds the short fields, `full_tsv` every searched field, each
word labelled with its field's weight (app.store.fulltext), both kept in step by the
statement triggers of migration 0008 and indexed with GIN. Words are indexed the way FTS5's
unicode61 tokenizer (remove_diacritics 2) indexes them: every run of characters other than
letters and digits separates words, accents are removed (`unaccent`), case is folded. A query
reaches `to_tsquery` only as quoted words of letters and digits, each unaccented before it
is quoted (`tsquery_sql`), so nothing a user types is operator syntax; ranking is `ts_rank`
with the declared weights.
"""

import re
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Float,
    Integer,
    Select,
    Table,
    Text,
    bindparam,
    create_engine,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import make_url
from sqlmodel import Session

from app.config import Settings
from app.store.base import Backend, Condition, count_capped, restricted
from app.store.fulltext import (
    REVIEWED_KEYS,
    Scope,
    Scored,
    TextQuery,
    rank_weights,
)

_WORD = re.compile(r"[^\W_]+")
# A word as a quoted tsquery lexeme: quote, then unaccent's output with ' and \ doubled.
_QUOTED_WORD = r"'''' || replace(replace(unaccent(:{0}), '\', '\\'), '''', '''''') || ''''"
_WEIGHTS = "ARRAY[" + ", ".join(map(str, rank_weights())) + "]::real[]"
ANALYZE_MIN_ROWS = 1000  # a batch this large renews the planner's statistics
RANK_NORMALIZATION = 1  # divide by 1 + log(length): a long text does not win by length alone
# Scope -> (tsvector column, which records: reviewed only, or not those the short fields hold).
_SCOPES = {
    Scope.REVIEWED: ("full_tsv", f" AND k.fts_rowid > {REVIEWED_KEYS}"),
    Scope.HEAD: ("head_tsv", ""),
    Scope.BODY_ONLY: ("full_tsv", " AND NOT k.head_tsv @@ q.q"),
}


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """The connection pool of one process (ERRKB_DB_POOL_*); each replica has its own, so a
    server must allow replicas x (size + max_overflow) connections."""

    size: int
    max_overflow: int
    timeout_s: float
    recycle_s: float
    pre_ping: bool

    @classmethod
    def of(cls, settings: Settings | None = None) -> "PoolOptions":
        """The pool the settings ask for; without settings, their defaults (app.config)."""
        settings = settings or Settings.model_construct()
        return cls(
            settings.db_pool_size,
            settings.db_pool_max_overflow,
            settings.db_pool_timeout_s,
            settings.db_pool_recycle_s,
            settings.db_pool_pre_ping,
        )


def make_engine(url: str, pool: PoolOptions) -> Engine:
    """An engine whose sessions keep time in UTC, as the SQLite store does (timestamps are
    stored without a zone), with the given pool."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"errkb stores records in SQLite or PostgreSQL, not {parsed.drivername}")
    given = parsed.query.get("options")
    options = " ".join(filter(None, (given if isinstance(given, str) else None, "-c timezone=UTC")))
    engine = create_engine(
        parsed.difference_update_query(["options"]),
        connect_args={"options": options},
        pool_size=pool.size,
        max_overflow=pool.max_overflow,
        pool_timeout=pool.timeout_s,
        pool_recycle=pool.recycle_s,
        pool_pre_ping=pool.pre_ping,
    )
    # A batch insert as multi-row INSERT statements (1000 rows each), not one statement per
    # row: migration 0008's triggers run once per statement, and row by row they would make
    # a 50k import take minutes instead of seconds (bench/bench_api.py).
    engine.dialect.use_insertmanyvalues_wo_returning = True
    return engine


def tsquery_sql(query: TextQuery) -> tuple[str, dict[str, str]]:
    """SQL for the tsquery of quoted words: phrases (<->) ANDed (or ORed), the last word
    maybe a prefix (:*); and its bind parameters, one per word. Raises ValueError for a word
    that is not letters and digits only.

    Each word goes through `unaccent` before it is quoted, never the finished expression:
    `unaccent` turns letters such as U+02BC and U+0149 into an apostrophe, which
    would end a quote (a syntax error). Quoted after it, with quotes and backslashes doubled,
    the apostrophe is part of the lexeme, and to_tsquery splits the word there as
    to_tsvector split the indexed text.
    """
    if not query.phrases or any(
        not _WORD.fullmatch(word) for words in query.phrases for word in words
    ):
        raise ValueError("a query is phrases of words of letters and digits")
    params: dict[str, str] = {}
    pieces = []
    for words in query.phrases:
        quoted = []
        for word in words:
            name = f"w{len(params)}"
            params[name] = word
            quoted.append(_QUOTED_WORD.format(name))
        pieces.append(" || ' <-> ' || ".join(quoted))
    if query.prefix:
        pieces[-1] += " || ':*'"
    joiner = " || ' | ' || " if query.any_word else " || ' & ' || "
    expression = joiner.join(f"'(' || {piece} || ')'" for piece in pieces)
    return f"to_tsquery('simple', {expression})", params


class PostgresBackend(Backend):
    """tsvector search ranked by ts_rank; advisory locks; sequences fixed after a copy."""

    name = "postgresql"
    snapshot_isolation = "REPEATABLE READ"
    reads_in_process = False  # every read is a round trip to the server
    waiting_writers_poll = False  # a lock's waiters queue on the server

    def count(
        self, session: Session, query: TextQuery, condition: Condition | None, cap: int
    ) -> int:
        tsquery, params = tsquery_sql(query)
        found: Select[Any] = (
            select(literal_column("1"))
            .select_from(text(f"record_search k, {tsquery} AS q(q)"))
            .where(text("k.full_tsv @@ q.q"))
        )
        return count_capped(session, found, condition, cap, params)

    def rank(
        self,
        session: Session,
        scope: Scope,
        query: TextQuery,
        condition: Condition | None,
        limit: int,
    ) -> list[Scored]:
        column, leave_out = _SCOPES[scope]
        score = f"ts_rank({_WEIGHTS}, k.{column}, q.q, {RANK_NORMALIZATION})"
        tsquery, params = tsquery_sql(query)
        statement = (
            select(
                literal_column("k.fts_rowid", Integer),
                literal_column("k.record_id", Text),
                literal_column(score, Float).label("score"),
            )
            .select_from(text(f"record_search k, {tsquery} AS q(q)"))
            .where(text(f"k.{column} @@ q.q{leave_out}"))
        )
        statement = restricted(statement, condition).order_by(text("score DESC, k.fts_rowid DESC"))
        rows = session.connection().execute(statement.limit(limit), params)
        return [Scored(*row) for row in rows]

    def holding(self, session: Session, query: TextQuery, keys: Sequence[int]) -> set[int]:
        if not keys:
            return set()
        tsquery, params = tsquery_sql(query)
        statement = text(
            f"SELECT k.fts_rowid FROM record_search k, {tsquery} AS q(q)"
            " WHERE k.fts_rowid IN :keys AND k.full_tsv @@ q.q"
        ).bindparams(bindparam("keys", expanding=True))
        return set(session.execute(statement, {**params, "keys": list(keys)}).scalars())

    def exclusive(self, engine: Engine, name: str) -> AbstractContextManager:
        return _advisory_lock(engine, name)

    def batch_indexing(
        self, session: Session, record_ids: Sequence[str]
    ) -> AbstractContextManager[None]:
        """Migration 0008's triggers index each statement's rows at once; after a large
        batch the planner's statistics are renewed, or it keeps planning for the empty
        tables it last saw (ranking by scanning instead of the GIN index, far slower:
        docs/benchmarks.md, "Costs behind the code's choices")."""
        return _analyzed(session) if len(record_ids) >= ANALYZE_MIN_ROWS else nullcontext()

    insert = staticmethod(postgresql.insert)

    def after_copy(self, connection: Connection, table: Table) -> None:
        """Rows copied with their own integer ids leave the id sequence behind: move it past
        the largest id, so the next insert does not collide."""
        for column in table.primary_key.columns:
            if isinstance(column.type, Integer) and column.autoincrement in (True, "auto"):
                connection.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence(:table, :column),"
                        f" coalesce(max({column.name}), 0) + 1, false) FROM {table.name}"
                    ),
                    {"table": table.name, "column": column.name},
                )


@contextmanager
def _analyzed(session: Session) -> Iterator[None]:
    yield
    session.execute(text("ANALYZE records, record_search"))


# One lock key per schema and purpose, so stores sharing a server (or tests sharing a
# database, each in its own schema) never wait for each other.
_LOCK_KEY = "hashtextextended(current_schema() || ':errkb:' || :name, 0)"


@contextmanager
def _advisory_lock(engine: Engine, name: str) -> Iterator[None]:
    """A session advisory lock on a connection of its own, held for the block: the server
    releases it if this process dies."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        key = connection.execute(text(f"SELECT {_LOCK_KEY}"), {"name": name}).scalar_one()
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
