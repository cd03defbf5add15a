"""The memo of what depends only on the store: values kept per dataset version, computed
together for the keys not kept, dropped once the store moves on."""

import time

from sqlmodel import Session

from app.records import dataset_cache
from app.records import service as records
from app.records.dataset_cache import Memo
from app.store.engine import open_store, unit_of_work, write_session
from tests.helpers.records import make_record
from tests.helpers.statements import captured


def test_only_the_missing_keys_are_computed_in_one_call(session: Session) -> None:
    memo = Memo()
    calls: list[list[str]] = []

    def compute(keys: list[str]) -> dict[str, str]:
        calls.append(keys)
        return {key: key.upper() for key in keys}

    assert memo.get_many(session, "v1", ["a", "b"], compute) == {"a": "A", "b": "B"}
    assert memo.get_many(session, "v1", ["a", "b", "c", "d"], compute) == {
        "a": "A",
        "b": "B",
        "c": "C",
        "d": "D",
    }
    assert calls == [["a", "b"], ["c", "d"]]
    assert memo.get_many(session, "v1", ["d", "a"], compute) == {"d": "D", "a": "A"}
    assert len(calls) == 2


def test_a_newer_version_computes_again_and_an_older_one_is_not_kept(session: Session) -> None:
    memo = Memo()
    seen: list[tuple[str, str]] = []

    def at(version: str):
        def compute(keys: list[str]) -> dict[str, str]:
            seen.extend((version, key) for key in keys)
            return {key: f"{key}@{version}" for key in keys}

        return compute

    assert memo.get_many(session, "v1", ["a"], at("v1")) == {"a": "a@v1"}
    assert memo.get_many(session, "v2", ["a"], at("v2")) == {"a": "a@v2"}
    # a reader still on the older snapshot gets its own value, which is not kept
    assert memo.get_many(session, "v1", ["a"], at("v1")) == {"a": "a@v1"}
    assert memo.get_many(session, "v1", ["a"], at("v1")) == {"a": "a@v1"}
    assert memo.get(session, "v2", "a", lambda: "recomputed") == "a@v2"
    assert seen == [("v1", "a"), ("v2", "a"), ("v1", "a"), ("v1", "a")]


def test_the_least_recently_used_value_goes_first(session: Session) -> None:
    memo = Memo(entries=2)
    computed: list[str] = []

    def compute(keys: list[str]) -> dict[str, str]:
        computed.extend(keys)
        return {key: key for key in keys}

    memo.get_many(session, "v1", ["a", "b"], compute)
    memo.get_many(session, "v1", ["a"], compute)  # a is used again: b is the oldest
    memo.get_many(session, "v1", ["c"], compute)
    memo.get_many(session, "v1", ["a", "b"], compute)
    assert computed == ["a", "b", "c", "b"]


def test_a_fresh_session_reads_the_version_outside_any_transaction_a_writer_its_own(
    settings,
) -> None:
    """A session that has begun nothing reads the committed version without beginning a
    transaction; one that has written reads what it wrote, which nobody else sees yet."""
    engine = open_store(settings)
    with unit_of_work(engine) as writing:
        records.bump_dataset_version(writing)
    with Session(engine) as reading:
        committed = dataset_cache.dataset_version(reading)
        assert committed != dataset_cache.EMPTY_DATASET_VERSION
        assert not reading.in_transaction()
    with write_session(engine) as writing:
        own = records.bump_dataset_version(writing)
        assert dataset_cache.dataset_version(writing) == own != committed
        with Session(engine) as other:
            assert dataset_cache.dataset_version(other) == committed
        writing.rollback()
    with Session(engine) as reading:
        assert dataset_cache.dataset_version(reading) == committed


def _reads(engine, call) -> tuple[object, int]:
    """What `call()` answers, and how many statements it sent to the store."""
    with captured(engine, everything=True) as sent:
        answer = call()
    return answer, len(sent)


def test_a_request_reads_the_version_unless_a_read_began_after_it_arrived(settings) -> None:
    """A read begun after a request arrived saw every write committed before the request was
    sent, so that request uses it; a request arriving after a write reads again and sees the
    write; outside a request every call reads."""
    engine = open_store(settings)
    with unit_of_work(engine) as writing:
        first = records.bump_dataset_version(writing)

    def versions_in_request(arrived_ns: int) -> tuple[object, int]:
        token = dataset_cache.ARRIVED_NS.set(arrived_ns)
        try:
            return _reads(engine, lambda: dataset_cache.record_versions_now(engine)[0])
        finally:
            dataset_cache.ARRIVED_NS.reset(token)

    arrived = time.monotonic_ns()
    assert versions_in_request(arrived) == (first, 1)
    assert versions_in_request(arrived) == (first, 0)  # the read began after it arrived
    with unit_of_work(engine) as writing:
        second = records.bump_dataset_version(writing)
    assert versions_in_request(arrived) == (first, 0)  # it arrived before the write
    assert versions_in_request(time.monotonic_ns()) == (second, 1)
    assert _reads(engine, lambda: dataset_cache.record_versions_now(engine)[0]) == (second, 1)
    assert _reads(engine, lambda: dataset_cache.record_versions_now(engine)[0]) == (second, 1)
    engine.dispose()


def test_a_write_through_one_app_is_in_the_next_reply_of_another(make_client, auth) -> None:
    """Two apps on one store, as two workers: a record written through one is matched and
    served by the other at once, however busy it was reading the version before."""
    writer, reader = make_client(), make_client()
    record = make_record(0xBEEF, "Capybara pool overflowed at depth 23")
    error_line = "MemoryError: Capybara pool overflowed at depth 23"
    for _ in range(3):
        assert reader.post("/api/match", json={"text": error_line}).json()["matches"] == []
        assert reader.get(f"/api/errors/{record['id']}").status_code == 404
    assert writer.post("/api/errors", json=record, headers=auth).status_code == 201
    matched = reader.post("/api/match", json={"text": error_line}).json()["matches"]
    assert [match["id"] for match in matched] == [record["id"]]
    assert reader.get(f"/api/errors/{record['id']}").status_code == 200
