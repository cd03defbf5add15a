"""The full-text index on both engines: one declaration of fields and weights,
keys that order reviewed records and newer drafts first, kept by every kind of write,
safe under concurrent writers, and a migration that goes down and up again."""

import itertools
import threading
import time

import pytest
from sqlalchemy import update
from sqlmodel import Session

from app.config import Settings
from app.records import service as records
from app.search import service as search
from app.store import backend
from app.store.engine import open_store, upgrade
from app.store.fulltext import FULL_FIELDS, LABEL_WEIGHTS, REVIEWED_KEYS, rank_weights
from app.store.tables import Record
from tests.helpers.old_store import downgrade
from tests.helpers.records import make_record


def test_shared_labels_keep_the_order_of_the_field_weights() -> None:
    """PostgreSQL has four weight labels for ten fields: no field may outweigh one that
    FTS5 weighs more, and each label weighs what one of its fields weighs."""
    for one, other in itertools.permutations(FULL_FIELDS, 2):
        if one.weight > other.weight:
            assert LABEL_WEIGHTS[one.label] >= LABEL_WEIGHTS[other.label], (one, other)
    for label, weight in LABEL_WEIGHTS.items():
        assert weight in {field.weight for field in FULL_FIELDS if field.label == label}
    assert rank_weights() == (0.15, 0.3, 0.6, 1.0)  # ts_rank's order: D, C, B, A


def _key(session: Session, record_id: str) -> int:
    return backend(session).keys(session, [record_id])[record_id]


def test_keys_follow_review_state_and_searched_changes_only(session: Session) -> None:
    draft, other = make_record(1, "Okapi failed"), make_record(2, "Okapi stalled")
    records.write_records(session, [draft, other], review_state=records.DRAFT)
    session.commit()
    first = _key(session, draft["id"])
    assert first < _key(session, other["id"]) < REVIEWED_KEYS
    session.execute(update(Record).where(Record.id == draft["id"]).values(gone_in="v2"))
    session.commit()
    assert _key(session, draft["id"]) == first  # not a searched column: same key
    records.write_records(
        session, [draft | {"documentation": "Now about a zebra."}], review_state=records.DRAFT
    )
    session.commit()
    assert _key(session, draft["id"]) > _key(session, other["id"])  # newest draft now
    records.set_review_state(session, other["id"], records.REVIEWED)
    session.commit()
    assert _key(session, other["id"]) > REVIEWED_KEYS
    assert [hit.record.id for hit in search.search(session, "zebra").hits] == [draft["id"]]


def test_empty_lists_and_null_fields_are_indexed(session: Session) -> None:
    bare = make_record(7, "Ibex stalled", tags=[], solutions=[], documentation=None)
    records.write_records(session, [bare])
    session.commit()
    assert [hit.record.id for hit in search.search(session, "ibex").hits] == [bare["id"]]


def test_the_search_migration_goes_down_and_up_again(settings: Settings) -> None:
    engine = open_store(settings)
    with Session(engine) as session:
        records.write_records(session, [make_record(3, "Quokka failed")])
        session.commit()
    downgrade(engine, "0007")  # below the search migration, 0008
    upgrade(engine)
    with Session(engine) as session:
        records.write_records(session, [make_record(4, "Quokka stalled")])
        session.commit()
        found = search.search(session, "quokka")
    assert {hit.record.id for hit in found.hits} == {f"{3:016x}", f"{4:016x}"}


@pytest.mark.postgresql_only
def test_concurrent_writers_get_distinct_keys_and_versions(settings: Settings) -> None:
    """Two transactions writing at once both commit: each record gets a key of its own (a
    max() + 1 key would collide) and each write a version of its own, the later one past
    the earlier one (the version row is locked until the first commits)."""
    engine = open_store(settings)
    first_wrote, versions = threading.Event(), {}

    def write(number: int, hold_s: float) -> None:
        with Session(engine) as session:
            records.write_records(
                session,
                [make_record(number, f"Wombat {number} failed")],
                review_state=records.DRAFT,
            )
            first_wrote.set()
            time.sleep(hold_s)
            versions[number] = records.dataset_version(session)
            session.commit()

    holding = threading.Thread(target=write, args=(5, 0.5))
    holding.start()
    first_wrote.wait(10)
    write(6, 0)
    holding.join(10)
    assert versions[6] > versions[5]
    with Session(engine) as session:
        keys = backend(session).keys(session, [f"{5:016x}", f"{6:016x}"])
        assert keys[f"{6:016x}"] > keys[f"{5:016x}"]
        assert records.dataset_version(session) == versions[6]


FULL_WIDTH = "\uff31\uff55\uff4f\uff4b\uff4b\uff41"  # Quokka in full-width letters
MODIFIER_APOSTROPHE = "\u02bc"  # a letter to FTS5, an apostrophe to PostgreSQL's unaccent


def _found(session: Session, query: str) -> set[str]:
    return {hit.record.id for hit in search.search(session, query).hits}


def test_text_and_queries_are_normalised_alike_on_both_engines(session: Session) -> None:
    """NFKC and one apostrophe, in what is indexed and in what is asked: full-width letters
    and a modifier-letter apostrophe find what their plain forms find, either way round;
    a record written so is forgotten with its old text (FTS5 forgets by the text indexed)."""
    plain = make_record(5, "Okapi failed", documentation="The quokka doesn't sleep.")
    odd = make_record(
        6, "Ibex failed", documentation=f"A {FULL_WIDTH} doesn{MODIFIER_APOSTROPHE}t eat."
    )
    records.write_records(session, [plain, odd])
    session.commit()
    both = {plain["id"], odd["id"]}
    for query in ("quokka", FULL_WIDTH, "QUOKKA"):
        assert _found(session, query) == both, query
    assert _found(session, "doesn't sleep") == _found(session, f"doesn{MODIFIER_APOSTROPHE}t sleep")
    assert _found(session, "doesn't sleep") == {plain["id"]}
    assert _found(session, f"doesn{MODIFIER_APOSTROPHE}t eat") == {odd["id"]}
    assert _found(session, "doesn't eat") == {odd["id"]}
    records.write_records(session, [odd | {"documentation": "Now about a zebra."}])
    session.commit()
    assert _found(session, FULL_WIDTH) == {plain["id"]}
    assert _found(session, "zebra") == {odd["id"]}


def test_the_normalising_migration_goes_down_and_up_again(settings: Settings) -> None:
    engine = open_store(settings)
    odd = make_record(8, "Okapi failed", documentation=f"A {FULL_WIDTH} here.")
    with Session(engine) as session:
        records.write_records(session, [odd])
        session.commit()
        assert _found(session, "quokka") == {odd["id"]}
    downgrade(engine, "0011")  # as stored before
    # FTS5 held the full-width word as such; PostgreSQL's unaccent folded it already
    before = set() if engine.dialect.name == "sqlite" else {odd["id"]}
    with Session(engine) as session:
        assert _found(session, "quokka") == before
    upgrade(engine)  # the index rebuilt from the documents
    with Session(engine) as session:
        assert _found(session, "quokka") == {odd["id"]}
        records.write_records(session, [odd | {"documentation": "Gone."}])
        session.commit()
        assert _found(session, "quokka") == set()
