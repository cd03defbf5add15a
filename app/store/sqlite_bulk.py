"""Keeping the full-text index in step with a large insert: once for the batch, not per row.

Migration 0002's insert trigger indexes each new record in both FTS5 tables as it is inserted.
For thousands of records (an import, a harvest) that costs several times what the same
statements cost run once over the whole batch, most of a 50k import (`bench/bench_api.py`;
docs/benchmarks.md, "Costs behind the code's choices"). So for a large insert the trigger is
narrowed to its first statement (the record's search facts and FTS key), and its FTS statements
run afterwards, once, over the new rows: the trigger's very statements, read back from the
database, with the trigger's `new` row turned into a join. Nothing is defined twice; the full
trigger is restored in the same transaction (app.store.engine makes SQLite DDL transactional),
so a failure rolls everything back. A trigger of any other shape keeps the per-row path.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlmodel import Session

BULK_MIN_ROWS = 1000  # below this the per-row trigger is as fast
INSERT_TRIGGER = "records_search_insert"
_PER_ROW_SOURCE = "FROM record_search k WHERE k.record_id = new.id"
_BATCH_SOURCE = (
    "FROM record_search k JOIN records r ON r.id = k.record_id "
    "WHERE k.record_id IN (SELECT id FROM temp.bulk_indexed)"
)
_TRIGGER_HEAD = f"CREATE TRIGGER {INSERT_TRIGGER} AFTER INSERT ON records BEGIN "


@dataclass(frozen=True, slots=True)
class _Plan:
    trigger: str  # the full CREATE TRIGGER statement, to restore
    facts: str  # its first statement, kept per row
    batch: tuple[str, ...]  # its FTS statements, rewritten for the whole batch


def _plan(session: Session) -> _Plan | None:
    """How to split the insert trigger, or None when it is missing or of another shape."""
    trigger = session.execute(
        text("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = :name"),
        {"name": INSERT_TRIGGER},
    ).scalar_one_or_none()
    if not trigger or not trigger.startswith(_TRIGGER_HEAD) or not trigger.endswith(" END"):
        return None
    body = trigger[len(_TRIGGER_HEAD) : -len(" END")]
    facts, *indexing = [statement.strip() for statement in body.split(";") if statement.strip()]
    if not facts.startswith("INSERT INTO record_search") or not indexing:
        return None
    if any(statement.count(_PER_ROW_SOURCE) != 1 for statement in indexing):
        return None
    batch = tuple(
        statement.replace(_PER_ROW_SOURCE, _BATCH_SOURCE).replace("new.", "r.")
        for statement in indexing
    )
    return _Plan(trigger, facts, batch)


@contextmanager
def batch_indexing(session: Session, record_ids: Sequence[str]) -> Iterator[None]:
    """Around the insert of these new records: index them in full-text search as one batch.

    A no-op for small batches, or where the store has no such trigger (another database).
    """
    plan = _plan(session) if len(record_ids) >= BULK_MIN_ROWS else None
    if plan is None:
        yield
        return
    session.execute(text(f"DROP TRIGGER {INSERT_TRIGGER}"))
    session.execute(text(f"{_TRIGGER_HEAD}{plan.facts}; END"))
    yield
    session.execute(text("CREATE TEMP TABLE IF NOT EXISTS bulk_indexed (id TEXT PRIMARY KEY)"))
    session.execute(text("DELETE FROM temp.bulk_indexed"))
    session.execute(
        text("INSERT INTO temp.bulk_indexed (id) VALUES (:id)"),
        [{"id": record_id} for record_id in record_ids],
    )
    for statement in plan.batch:
        session.execute(text(statement))
    session.execute(text("DELETE FROM temp.bulk_indexed"))
    session.execute(text(f"DROP TRIGGER {INSERT_TRIGGER}"))
    session.execute(text(plan.trigger))
