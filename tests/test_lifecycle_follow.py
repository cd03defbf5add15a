"""A process's match index follows writes made by other processes: found by
content, whatever the writer's clock; in the background; and a request never waits for a
sync under way, answering with the index as it is while health says it is behind."""

import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session

from app.config import Settings
from app.lifecycle.follow import follow
from app.matching.matcher import Matcher
from app.records import service as records
from app.store.engine import open_store
from app.store.tables import Record
from tests.helpers.records import make_record

WAIT_S = 10.0


def _write(engine, number: int, message: str, *, written_at: datetime | None = None) -> str:
    """Write a record as another replica would: its own session, maybe its own clock."""
    record = make_record(number, message)
    with Session(engine) as session:
        records.write_records(session, [record])
        if written_at is not None:
            session.execute(
                update(Record).where(Record.id == record["id"]).values(modified_at=written_at)
            )
        session.commit()
    return record["id"]


def _loaded(settings: Settings) -> tuple[Matcher, object]:
    engine = open_store(settings)
    matcher = Matcher(engine, settings.cache_dir, settings.max_paste_bytes)
    with Session(engine) as session:
        matcher.index(session)
    return matcher, engine


def test_a_write_stamped_by_a_clock_an_hour_behind_is_found(settings: Settings) -> None:
    matcher, engine = _loaded(settings)
    late = datetime.now(UTC) - timedelta(hours=1)
    record_id = _write(engine, 1, "Marmot hibernated too long", written_at=late)
    with Session(engine) as session:
        assert record_id in matcher.index(session)


def test_a_request_answers_with_the_index_as_it_is_while_a_sync_runs(
    settings: Settings,
) -> None:
    matcher, engine = _loaded(settings)
    record_id = _write(engine, 2, "Lemur dropped the packet")
    answered = threading.Event()

    def request() -> None:
        with Session(engine) as session:
            assert record_id not in matcher.index(session)  # the index as it is
            freshness = matcher.freshness(records.dataset_version(session))
            assert freshness.stale
            assert freshness.behind_s >= 0
        answered.set()

    with matcher._lock:  # a sync under way in another thread
        worker = threading.Thread(target=request)
        worker.start()
        assert answered.wait(WAIT_S), "the request waited for the sync"
        worker.join()
    assert matcher.refresh(engine)
    with Session(engine) as session:
        assert record_id in matcher.index(session)
        assert not matcher.freshness(records.dataset_version(session)).stale


def test_the_follower_syncs_without_any_request(settings: Settings) -> None:
    matcher, engine = _loaded(settings)
    stop = threading.Event()
    follower = threading.Thread(target=follow, args=(matcher, engine, 0.05, stop))
    follower.start()
    try:
        record_id = _write(engine, 3, "Tapir chewed the cable")
        with Session(engine) as session:
            version = records.dataset_version(session)
        deadline = time.monotonic() + WAIT_S
        while matcher.freshness(version).stale:  # asking does not sync
            assert time.monotonic() < deadline, "the follower did not sync"
            time.sleep(0.02)
    finally:
        stop.set()
        follower.join(WAIT_S)
    with Session(engine) as session:
        assert not matcher.freshness(records.dataset_version(session)).stale
        assert record_id in matcher.index(session)  # already there: nothing left to sync
