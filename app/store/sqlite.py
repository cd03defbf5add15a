"""SQLite's full-text search: FTS5 tables kept in step by the triggers of migration 0002.

`records_fts` indexes every searchable field, `records_fts_head` only the short ones; both
are contentless (the text stays in the record document), keyed by `record_search.fts_rowid`.
A query reaches MATCH only as quoted phrases of letters and digits (`match_expression`), so
quotes, operators, column filters, parentheses and NEAR are plain words or nothing.
"""

import fcntl
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Label,
    Select,
    Table,
    bindparam,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects import sqlite
from sqlmodel import Session

from app.store import sqlite_bulk
from app.store.base import Backend, Condition, count_capped, restricted
from app.store.fulltext import (
    FULL_WEIGHTS,
    HEAD_WEIGHTS,
    REVIEWED_KEYS,
    Scope,
    Scored,
    TextQuery,
)

# Scope -> (FTS table, BM25 weights, which records: reviewed only, or not those the short
# fields hold).
_SCOPES = {
    Scope.REVIEWED: ("records_fts", FULL_WEIGHTS, f" AND f.rowid > {REVIEWED_KEYS}"),
    Scope.HEAD: ("records_fts_head", HEAD_WEIGHTS, ""),
    Scope.BODY_ONLY: (
        "records_fts",
        FULL_WEIGHTS,
        " AND f.rowid NOT IN (SELECT rowid FROM records_fts_head"
        " WHERE records_fts_head MATCH :expression)",
    ),
}


def match_expression(query: TextQuery) -> str:
    """An FTS5 expression of quoted phrases, ANDed (or ORed); the last word maybe a prefix."""
    parts = ['"' + " ".join(words) + '"' for words in query.phrases]
    if query.prefix:
        parts[-1] += "*"
    return (" OR " if query.any_word else " AND ").join(parts)


class SqliteBackend(Backend):
    """FTS5 with BM25 and the field weights of app.store.fulltext; file locks."""

    name = "sqlite"
    snapshot_isolation = None  # WAL: a read transaction sees the file as it was at its start
    reads_in_process = True
    waiting_writers_poll = True

    def count(
        self, session: Session, query: TextQuery, condition: Condition | None, cap: int
    ) -> int:
        join = " JOIN record_search k ON k.fts_rowid = f.rowid" if condition is not None else ""
        found: Select[Any] = (
            select(literal_column("1"))
            .select_from(text(f"records_fts f{join}"))
            .where(text("records_fts MATCH :expression"))
        )
        params = {"expression": match_expression(query)}
        return count_capped(session, found, condition, cap, params)

    def rank(
        self,
        session: Session,
        scope: Scope,
        query: TextQuery,
        condition: Condition | None,
        limit: int,
    ) -> list[Scored]:
        table, weights, leave_out = _SCOPES[scope]
        join = " JOIN record_search k ON k.fts_rowid = f.rowid" if condition is not None else ""
        bm25 = f"-bm25({table}, {', '.join(map(str, weights))})"
        score: Label[Any] = literal_column(bm25).label("score")
        statement = (
            select(literal_column("f.rowid"), score)
            .select_from(text(f"{table} f{join}"))
            .where(text(f"{table} MATCH :expression{leave_out}"))
        )
        statement = restricted(statement, condition).order_by(text("score DESC, f.rowid DESC"))
        params = {"expression": match_expression(query)}
        scored = session.connection().execute(statement.limit(limit), params).all()
        ids = _record_ids(session, [rowid for rowid, _ in scored])
        return [Scored(rowid, ids[rowid], score) for rowid, score in scored]

    def holding(self, session: Session, query: TextQuery, keys: Sequence[int]) -> set[int]:
        if not keys:
            return set()
        statement = text(
            "SELECT rowid FROM records_fts WHERE records_fts MATCH :expression AND rowid IN :rowids"
        ).bindparams(bindparam("rowids", expanding=True))
        params = {"expression": match_expression(query), "rowids": list(keys)}
        return set(session.execute(statement, params).scalars())

    def exclusive(self, engine: Engine, name: str) -> AbstractContextManager:
        database = engine.url.database
        if not database or database == ":memory:":
            return nullcontext()  # no other process can open this database
        return _file_lock(Path(f"{database}-{name}.lock"))

    def batch_indexing(
        self, session: Session, record_ids: Sequence[str]
    ) -> AbstractContextManager[None]:
        return sqlite_bulk.batch_indexing(session, record_ids)

    insert = staticmethod(sqlite.insert)

    def after_copy(self, connection: Connection, table: Table) -> None:
        """Nothing to fix: an INTEGER PRIMARY KEY continues after the largest id."""


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """A lock file beside the database file, which only processes of its machine share."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _record_ids(session: Session, rowids: list[int]) -> dict[int, str]:
    """The record id of each FTS key (the FTS tables hold keys only)."""
    if not rowids:
        return {}
    statement = text(
        "SELECT fts_rowid, record_id FROM record_search WHERE fts_rowid IN :rowids"
    ).bindparams(bindparam("rowids", expanding=True))
    return dict(session.execute(statement, {"rowids": rowids}).all())
