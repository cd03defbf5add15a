"""Tests for app.store.engine: how transactions begin, bounded lock waits, and concurrent writers
against a real server."""

import gc
import time
from collections import Counter

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from app.config import PROJECT_ROOT, Settings
from app.records import service as records
from app.store.engine import is_lock_timeout, make_engine, open_store, write_session, writer
from tests.helpers.servers import ADMIN_TOKEN
from tests.helpers.writers import probe_record, run_writers, stored_markers

# SQLite's locking (BEGIN IMMEDIATE, busy timeouts) is what these tests are about.
pytestmark = pytest.mark.sqlite_only

WRITERS = 8
WRITE_SECONDS = 3.0
CONTESTED = [f"{0xD000:04x}{n:012x}" for n in range(10)]


def _statements(engine) -> list[str]:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def test_readers_begin_deferred_and_writers_immediate(settings: Settings) -> None:
    engine = open_store(settings)
    seen = _statements(engine)
    with Session(engine) as session:
        session.execute(text("SELECT 1"))
    with write_session(engine) as session:
        session.execute(text("SELECT 1"))
    assert [s for s in seen if s.startswith("BEGIN")] == ["BEGIN", "BEGIN IMMEDIATE"]


def test_a_write_session_holds_the_write_lock_from_its_first_read(settings: Settings) -> None:
    engine = open_store(settings)
    other = make_engine(settings.database_url, lock_timeout_s=0)
    with write_session(engine) as session:
        session.execute(text("SELECT 1"))
        with pytest.raises(OperationalError) as raised, other.begin() as connection:
            connection.exec_driver_sql("INSERT INTO dataset_state VALUES ('k', 'v')")
        assert is_lock_timeout(raised.value)


def test_a_reader_that_writes_late_fails_where_a_writer_waits(settings: Settings) -> None:
    """A lost write in miniature: read, another writer commits, then write."""
    engine = open_store(settings)
    other = make_engine(settings.database_url)

    def commit_elsewhere() -> None:
        with other.begin() as connection:
            connection.exec_driver_sql("INSERT INTO dataset_state VALUES ('other', 'x')")

    with Session(engine) as session:  # plain BEGIN: a read snapshot, no lock
        session.execute(text("SELECT count(*) FROM records")).scalar_one()
        commit_elsewhere()
        with pytest.raises(OperationalError) as raised:
            session.execute(text("INSERT INTO dataset_state VALUES ('late', 'x')"))
        assert is_lock_timeout(raised.value)  # SQLITE_BUSY_SNAPSHOT, whatever the timeout
    with write_session(engine) as session:  # BEGIN IMMEDIATE: the read and write agree
        session.execute(text("SELECT count(*) FROM records")).scalar_one()
        session.execute(text("INSERT INTO dataset_state VALUES ('writer', 'x')"))
        session.commit()


def test_a_write_waiting_past_the_lock_timeout_is_a_503(make_client, settings, auth) -> None:
    client = make_client(lock_timeout_s=0.2)
    with writer(make_engine(settings.database_url)).begin():  # another writer holds the lock
        started = time.monotonic()
        response = client.post(
            "/api/errors", json=probe_record("00000000000000aa", "held"), headers=auth
        )
        waited = time.monotonic() - started
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json()["title"] == "Database busy"
    assert waited >= 0.2
    assert client.get("/api/errors/00000000000000aa").status_code == 404  # not written
    created = client.post(
        "/api/errors", json=probe_record("00000000000000aa", "free"), headers=auth
    )
    assert created.status_code == 201


def test_other_database_errors_stay_errors(settings: Settings) -> None:
    engine = make_engine(settings.database_url)
    with pytest.raises(OperationalError) as raised, engine.connect() as connection:
        connection.exec_driver_sql("SELECT * FROM no_such_table")
    assert not is_lock_timeout(raised.value)


def test_writes_of_the_store_layer_go_through_write_sessions(settings: Settings) -> None:
    """import_paths under a write session begins with BEGIN IMMEDIATE."""
    engine = open_store(settings)
    seen = _statements(engine)
    with write_session(engine) as session:
        report = records.import_paths(session, [PROJECT_ROOT / "data" / "records"])
    assert report.written
    assert "BEGIN IMMEDIATE" in seen


def test_eight_writers_lose_nothing_and_see_no_5xx(live_server) -> None:
    """8 writer processes for a few seconds: no 5xx, no dropped connection, every
    acknowledged write in the store and nothing else; each contested id created once."""
    base, database = live_server
    logs = run_writers(base, ADMIN_TOKEN, WRITERS, WRITE_SECONDS, CONTESTED)
    statuses = sum((log.statuses for log in logs), Counter())
    assert sum(log.transport_errors for log in logs) == 0
    assert not [s for s in statuses if s >= 500], statuses
    assert sum(log.writes for log in logs) > WRITERS  # the writers did write
    expected = {rid: marker for log in logs for rid, marker in log.expected.items()}
    assert stored_markers(f"sqlite:///{database}", list(expected)) == expected
    for rid in CONTESTED:
        outcomes = Counter(log.contested[rid] for log in logs)
        assert outcomes[201] == 1, (rid, outcomes)
        assert set(outcomes) <= {201, 409}, (rid, outcomes)
    winners = stored_markers(f"sqlite:///{database}", CONTESTED)
    assert all(marker and marker.startswith("contested by writer") for marker in winners.values())


@pytest.mark.sqlite_only
def test_a_dropped_write_session_gives_its_turn_back(settings: Settings) -> None:
    """A write session dropped mid-transaction, without commit or rollback, does not keep
    the next writer of the process waiting for a turn it will never give back."""
    engine = open_store(settings.model_copy(update={"lock_timeout_s": 0.5}))
    dropped = write_session(engine)
    dropped.execute(text("SELECT 1"))  # begun: it holds the process's turn to write
    del dropped
    gc.collect()
    with write_session(engine) as session:
        assert session.execute(text("SELECT 1")).scalar_one() == 1
