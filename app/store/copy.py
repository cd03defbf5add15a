"""Copying a whole store into an empty one, engine to engine, losslessly (`errkb db copy`).

Every table the migrations make is copied row for row with its own keys: records (their
documents byte for byte), tags, locations with their code context, aliases, reproducer
runs, drift checks, hits and their totals, and the dataset state with its version, so an
export of the copy is the export of the original. The full-text index is not copied: the
target's own triggers build it as the records arrive (its keys follow the source's order of
writes, so equal scores keep their order). The source is read in one snapshot; the target
is written in one transaction, so a failed copy leaves it empty.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine, Table, func, insert, select
from sqlmodel import Session

from app import store
from app.store.tables import (
    DatasetState,
    DriftCheck,
    GeneratedReproducer,
    Hit,
    HitTotal,
    Record,
    RecordAlias,
    RecordLocation,
    RecordTag,
    ReproducerRun,
    table_of,
)

CHUNK_ROWS = 5000
# Parents before children (foreign keys); records in the order they were last written.
TABLES: tuple[Table, ...] = tuple(
    table_of(model)
    for model in (
        Record,
        RecordTag,
        RecordLocation,
        RecordAlias,
        ReproducerRun,
        GeneratedReproducer,
        DriftCheck,
        Hit,
        HitTotal,
        DatasetState,
    )
)


class CopyError(Exception):
    """Why a copy was refused before anything was written."""


@dataclass(slots=True)
class CopyReport:
    """Rows copied per table."""

    rows: dict[str, int] = field(default_factory=dict)


def _order(table: Table) -> list:
    if table is table_of(Record):
        return [table.c.modified_at, table.c.id]
    return list(table.primary_key.columns)


def copy_store(
    source: Engine, target: Engine, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy every row of `source` into `target`, both migrated to head; `target` must hold
    no rows yet. `progress(table, rows)` is told each chunk."""
    report = CopyReport()
    with Session(target) as writer:
        for table in TABLES:
            if writer.execute(select(func.count()).select_from(table)).scalar_one():
                raise CopyError(f"the target store is not empty: {table.name} has rows")
        reading = source.connect()
        snapshot = store.backend(source).snapshot_isolation
        if snapshot:
            reading = reading.execution_options(isolation_level=snapshot)
        with reading:
            for table in TABLES:
                report.rows[table.name] = 0
                statement = select(table).order_by(*_order(table))
                rows = reading.execution_options(yield_per=CHUNK_ROWS).execute(statement)
                for chunk in rows.mappings().partitions(CHUNK_ROWS):
                    _insert(writer, table, [dict(row) for row in chunk])
                    report.rows[table.name] += len(chunk)
                    if progress is not None:
                        progress(table.name, len(chunk))
                store.backend(target).after_copy(writer.connection(), table)
        writer.commit()
    return report


def _insert(writer: Session, table: Table, rows: list[dict]) -> None:
    if table is table_of(Record):
        ids = [row["id"] for row in rows]
        with store.backend(writer).batch_indexing(writer, ids):
            writer.execute(insert(table), rows)
    else:
        writer.execute(insert(table), rows)
