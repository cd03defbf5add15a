"""SQLite: a large insert is indexed for search as one batch: same results as row by row, the
trigger restored afterwards, and nothing half-done when the insert fails."""

import pytest
from sqlalchemy import text
from sqlmodel import Session

from app.config import Settings
from app.records import service as records
from app.search import service as search
from app.store import sqlite_bulk
from app.store.engine import open_store
from tests.helpers.records import make_record

COUNT = sqlite_bulk.BULK_MIN_ROWS
WORDS = ["spindle", "gasket", "ratchet", "sprocket", "flywheel"]


def _records() -> list[dict]:
    return [
        make_record(
            n + 1,
            f"{WORDS[n % 5]} jammed in stage {n}",
            documentation=f"The {WORDS[(n + 2) % 5]} rubs on part{n}.",
            solutions=[f"Replace the {WORDS[(n + 3) % 5]}."],
            tags=[f"group-{n % 7}"],
        )
        for n in range(COUNT)
    ]


def _trigger_sql(session: Session) -> str:
    return session.execute(
        text("SELECT sql FROM sqlite_master WHERE name = :name"),
        {"name": sqlite_bulk.INSERT_TRIGGER},
    ).scalar_one()


def _session(tmp_path, name: str) -> Session:
    return Session(open_store(Settings(database_url=f"sqlite:///{tmp_path / name}")))


def _results(session: Session, query: str) -> tuple[int, list[str]]:
    found = search.search(session, query, limit=50)
    return found.total, [hit.record.id for hit in found.hits]


def test_batch_indexing_finds_what_row_by_row_finds(tmp_path, monkeypatch) -> None:
    batch = _session(tmp_path, "batch.db")
    original = _trigger_sql(batch)
    records.write_records(batch, _records())
    batch.commit()
    assert _trigger_sql(batch) == original

    monkeypatch.setattr(sqlite_bulk, "BULK_MIN_ROWS", COUNT + 1)
    per_row = _session(tmp_path, "per-row.db")
    records.write_records(per_row, _records())
    per_row.commit()

    for query in (
        "spindle",
        "gasket rubs",
        "part77",
        "replace sprocket",
        "group",
        "jammed stage 5",
    ):
        assert _results(batch, query) == _results(per_row, query), query
    assert _results(batch, "part77 rubs")[0] == 1


def test_batch_indexed_records_can_be_edited_and_deleted(tmp_path) -> None:
    session = _session(tmp_path, "edit.db")
    rows = _records()
    records.write_records(session, rows)
    session.commit()
    assert records.delete_record(session, rows[77]["id"])
    records.write_records(session, [rows[78] | {"documentation": "Now about a camshaft."}])
    records.write_records(session, [make_record(COUNT + 5, "brand new gizmo failure")])
    session.commit()
    for gone in ("part77 rubs", "part78 rubs"):  # no record holds both words any more
        assert search.search(session, gone, limit=50).relaxed, gone
    assert _results(session, "camshaft")[1] == [rows[78]["id"]]
    assert _results(session, "gizmo")[1] == [f"{COUNT + 5:016x}"]


def test_a_failed_batch_leaves_the_trigger_whole(tmp_path) -> None:
    session = _session(tmp_path, "fail.db")
    original = _trigger_sql(session)
    rows = _records()
    ids = [r["id"] for r in rows]
    # PT012: the failure has to happen inside the batch, once it has swapped the trigger out
    with pytest.raises(RuntimeError), sqlite_bulk.batch_indexing(session, ids):  # noqa: PT012
        assert _trigger_sql(session) != original
        raise RuntimeError("the insert failed")
    session.rollback()
    assert _trigger_sql(session) == original
    records.write_records(session, rows[:3])
    session.commit()
    assert _results(session, "part1 rubs")[0] == 1
