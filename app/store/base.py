"""The one interface that each engine's store fulfils: full-text search, locks that
span the processes of one store, bulk indexing, upserts and what a copy must fix up.

Services call these through `app.store.backend(bind)` and never write engine-specific SQL
themselves; app.store.sqlite and app.store.postgres are the two implementations.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    Table,
    func,
    literal_column,
    select,
)
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session, col

from app.store.fulltext import Scope, Scored, TextQuery, record_search
from app.store.tables import Record, RecordTag

Condition = ColumnElement[bool]
"""A condition on the records table (app.records.filters.record_condition builds them)."""


def restricted(statement: Select, condition: Condition | None) -> Select:
    """A full-text query over `record_search k`, kept to the records passing the condition:
    the services' filters reach both engines' search this one way. Core only (the
    ORM does not take a text FROM clause), so it runs on the session's connection."""
    if condition is None:
        return statement
    records = Record.__table__.c  # type: ignore[attr-defined]
    # Not a correlated EXISTS: the ids passing the filter are found once (through the
    # records' indexes), then each hit is a probe into them, not a read of its record row.
    passing = select(records.id).where(condition)
    return statement.where(literal_column("k.record_id").in_(passing))


def count_capped(
    session: Session, found: Select[Any], condition: Condition | None, cap: int, params: dict
) -> int:
    """How many rows a full-text query finds among the records passing the condition,
    counted up to `cap` only: each engine's `count` with its own query."""
    capped = restricted(found, condition).limit(cap).subquery()
    statement = select(func.count()).select_from(capped)
    return session.connection().execute(statement, params).scalar_one()


class Backend(ABC):
    """One engine's store; the methods without a body are the engine's own."""

    name: str  # SQLAlchemy's name of the dialect
    snapshot_isolation: str | None
    """The isolation level under which a connection's reads see one snapshot (None: its
    transactions already do)."""
    reads_in_process: bool
    """Whether a read is work of this process alone, with no server to wait for (SQLite's
    file, its pages cached): then a read of microseconds may run on the event loop."""
    waiting_writers_poll: bool
    """Whether a writer of another process waiting for the write lock tries again now and
    then (SQLite's busy handler, up to 100 ms apart) rather than queueing for it
    (PostgreSQL's locks): then a long run of transactions leaves the lock free a moment
    between two, or such a writer may find it taken at every try."""

    @abstractmethod
    def count(
        self, session: Session, query: TextQuery, condition: Condition | None, cap: int
    ) -> int:
        """How many records passing the condition hold the query, counted up to `cap` only."""

    @abstractmethod
    def rank(
        self,
        session: Session,
        scope: Scope,
        query: TextQuery,
        condition: Condition | None,
        limit: int,
    ) -> list[Scored]:
        """The best `limit` records of the scope passing the condition and holding the query,
        best first; equal scores in key order, highest first."""

    @abstractmethod
    def holding(self, session: Session, query: TextQuery, keys: Sequence[int]) -> set[int]:
        """Which of these keys' records hold the query."""

    @abstractmethod
    def exclusive(self, engine: Engine, name: str) -> AbstractContextManager:
        """Held by one process of this store at a time (migrations, import, harvest): the
        others wait. Released when the process dies."""

    @abstractmethod
    def batch_indexing(
        self, session: Session, record_ids: Sequence[str]
    ) -> AbstractContextManager[None]:
        """Around the insert of these new records: index them for search as one batch."""

    @staticmethod
    @abstractmethod
    def insert(table: Table) -> Any:
        """The dialect's INSERT, the one that has ON CONFLICT (both engines spell it alike)."""

    def upsert_adding(self, table: Table, keys: Sequence[str], column: str) -> Insert:
        """INSERT into `table` that, for a row whose `keys` exist, adds to `column`."""
        statement = self.insert(table)
        return statement.on_conflict_do_update(
            index_elements=list(keys),
            set_={column: table.c[column] + statement.excluded[column]},
        )

    def upsert_selected(
        self, table: Table, keys: Sequence[str], columns: Sequence[str], rows: Select
    ) -> Insert:
        """INSERT into `table`'s `columns` the rows `rows` selects; a row whose `keys` exist
        takes the selected values of the other columns."""
        statement = self.insert(table).from_select(list(columns), rows)
        replaced = [column for column in columns if column not in keys]
        return statement.on_conflict_do_update(
            index_elements=list(keys),
            set_={column: statement.excluded[column] for column in replaced},
        )

    def insert_ignoring(self, table: Table) -> Insert:
        """INSERT into `table` that leaves a row whose key exists as it is."""
        return self.insert(table).on_conflict_do_nothing()

    @abstractmethod
    def after_copy(self, connection: Connection, table: Table) -> None:
        """Fix up what copying rows with their own ids leaves behind (`errkb db copy`)."""

    def keys(self, session: Session, record_ids: Iterable[str]) -> dict[str, int]:
        """The index key of each of these records."""
        ids = list(record_ids)
        if not ids:
            return {}
        statement = select(record_search.c.record_id, record_search.c.fts_rowid).where(
            record_search.c.record_id.in_(ids)
        )
        return dict(session.execute(statement).all())

    def sharing(
        self, session: Session, column: str, value: str, record_id: str, limit: int
    ) -> list[str]:
        """Other records with this value of a fact (background tag, file), newest first."""
        facts = record_search.c
        statement = (
            select(facts.record_id)
            .where(facts[column] == value, facts.record_id != record_id)
            .order_by(facts.fts_rowid.desc())
            .limit(limit)
        )
        return list(session.execute(statement).scalars())

    def sharing_tags(
        self, session: Session, tags: Sequence[str], record_id: str, limit: int
    ) -> list[tuple[Any, ...]]:
        """(record id, tags shared, those tags joined) of other records with these tags,
        most shared first."""
        shared = func.count().label("shared")
        statement = (
            select(
                col(RecordTag.record_id), shared, func.aggregate_strings(col(RecordTag.tag), ", ")
            )
            .where(col(RecordTag.tag).in_(list(tags)), col(RecordTag.record_id) != record_id)
            .group_by(col(RecordTag.record_id))
            .order_by(shared.desc(), col(RecordTag.record_id))
            .limit(limit)
        )
        return [tuple(row) for row in session.execute(statement)]
