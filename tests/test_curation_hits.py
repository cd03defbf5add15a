"""Hits: one per match (its top record, else its scrubbed template) and per record-page view;
only the subject and the day are kept, never the paste nor a captured value."""

import time
from datetime import date, timedelta

import pytest
from sqlalchemy import Engine, func, insert, select
from sqlmodel import Session

from app.curation.hits import RECORD, TEMPLATE, HitCounter, retotal, today
from app.curation.scrub import COMMON_WORDS, template_key
from app.records.vocabulary import Vocabulary, words_of
from app.store.engine import unit_of_work, upgrade
from app.store.tables import Hit, HitTotal
from tests.helpers.old_store import downgrade
from tests.helpers.records import DATA_DIR
from tests.helpers.store_dump import database_text

SEED_002 = "edc4df790b100979"
SECRET_OFFSET = "987654321"  # a value the seed-002 pattern captures
SECRET_LOG = "user=alice.secret-77319046 token=sk-live-41f9c0de"
MATCHED = (
    f"INFO 08-28 05:02:10 [tokenizer_manager.py:702] {SECRET_LOG}\n"
    "Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/utils/cuda_vmm_transport_utils.py", '
    "line 535, in _cancel_control_offset\n"
    "    raise RuntimeError(\n"
    f"RuntimeError: CUDA VMM pool has no occupied slice at control offset {SECRET_OFFSET}\n"
)
UNMATCHED = (
    "Traceback (most recent call last):\n"
    '  File "/home/alice/serve.py", line 12, in <module>\n'
    "    load()\n"
    "ValueError: cannot open '/home/alice/models/llama-7b.safetensors' for rank 3 "
    "(handle 0x7f3a9c001e40, shard 5ac8d6f2e1b3, 12.5 GiB)\n"
)
UNMATCHED_TEMPLATE = (
    "ValueError: cannot open <str> for rank <num> (handle <hex>, shard <hex>, <num> GiB)"
)
# The same, on a store of data/records alone: its templates say handle (cuBLAS's), never open
# or shard.
UNMATCHED_SEEDS_TEMPLATE = (
    "ValueError: cannot <value> <str> for rank <num> (handle <hex>, <value> <hex>, <num> GiB)"
)
# Words of upstream message templates, as a store holds them (app.records.vocabulary).
VOCABULARY = Vocabulary(
    words_of(
        "Cannot open {path} for rank {rank}. Invalid handle {handle} of shard {shard_id}. "
        "Unknown path {path} in the first line of {file}: {size} GiB."
    )
)


def _hits(engine) -> list[tuple[str, str, int]]:
    with Session(engine) as session:
        rows = session.execute(select(Hit.kind, Hit.subject, Hit.day, Hit.count)).all()
    assert all(day == today() for _, _, day, _ in rows)
    return sorted((kind, subject, count) for kind, subject, _, count in rows)


def test_template_replaces_every_value() -> None:
    message = UNMATCHED.splitlines()[-1][12:]
    assert template_key("ValueError", message, VOCABULARY) == UNMATCHED_TEMPLATE
    assert template_key("KeyError", "'layers.31.mlp'", VOCABULARY) == "KeyError: <str>"
    assert template_key(
        "RuntimeError",
        "bad path C:\\models\\x.bin, id 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        VOCABULARY,
    ) == ("RuntimeError: <value> path <path>, id <hex>")
    assert template_key("OSError", "first line 1e-05\nsecond line /etc/x", VOCABULARY) == (
        "OSError: first line <num>"
    )
    assert template_key("StopIteration", "", VOCABULARY) == "StopIteration"


def test_matches_and_views_count_and_no_paste_or_capture_is_kept(make_client) -> None:
    client = make_client(DATA_DIR)
    matched = client.post("/api/match", json={"text": MATCHED}).json()
    assert matched["matches"][0]["id"] == SEED_002
    assert matched["matches"][0]["captures"] == {"control_offset": SECRET_OFFSET}
    assert client.post("/api/match", json={"text": UNMATCHED}).json()["matches"] == []
    assert client.get(f"/errors/{SEED_002}").status_code == 200
    batch = client.post("/api/match/batch", json={"texts": [MATCHED, "no error here at all"]})
    assert batch.status_code == 200
    assert client.post("/match", data={"text": MATCHED, "mode": "match"}).status_code == 200
    assert client.get(f"/api/errors/{SEED_002}").status_code == 200  # the JSON is no view
    client.app.state.services.hits.flush()
    assert _hits(client.app.state.services.engine) == [
        (RECORD, SEED_002, 4),
        (TEMPLATE, UNMATCHED_SEEDS_TEMPLATE, 1),
    ]
    stored = database_text(client.app.state.services.engine)
    for secret in (SECRET_OFFSET, "alice", "sk-live", "77319046", "llama-7b", "0x7f3a9c001e40"):
        assert secret not in stored, secret


def test_hits_off_keeps_nothing(make_client) -> None:
    client = make_client(DATA_DIR, record_hits=False)
    client.post("/api/match", json={"text": MATCHED})
    client.post("/api/match", json={"text": UNMATCHED})
    client.get(f"/errors/{SEED_002}")
    assert client.get("/api/curation/queue").json()["total"] == 0
    assert _hits(client.app.state.services.engine) == []


def test_flushes_add_up_per_subject_and_day(session) -> None:
    engine = session.get_bind()
    counter = HitCounter(engine, enabled=True, interval_s=0.0)  # every hit is due at once
    for _ in range(3):
        assert counter.add(RECORD, SEED_002)
    counter.add(TEMPLATE, "KeyError: <str>")
    assert counter.flush() == 0  # nothing left in memory
    assert _hits(engine) == [(RECORD, SEED_002, 3), (TEMPLATE, "KeyError: <str>", 1)]
    assert not HitCounter(engine, enabled=False).add(RECORD, SEED_002)


def test_a_flush_stores_any_subject_and_keeps_every_other_hit(session) -> None:
    engine = session.get_bind()
    counter = HitCounter(engine, enabled=True, interval_s=3600.0)
    counter.add(TEMPLATE, "ValueError: a \ud800 b\x00")  # what no filter should let through
    counter.add(RECORD, SEED_002)
    assert counter.flush() == 2
    assert _hits(engine) == [(RECORD, SEED_002, 1), (TEMPLATE, "ValueError: a ? b", 1)]


@pytest.mark.postgresql_only
def test_a_row_the_store_refuses_costs_only_its_own_count(session) -> None:
    """PostgreSQL refuses a count past 32 bits: the batch is then written row by row."""
    engine = session.get_bind()
    full = 2**31 - 1
    session.add(Hit(kind=TEMPLATE, subject="KeyError: <str>", day=today(), count=full))
    session.commit()
    counter = HitCounter(engine, enabled=True, interval_s=3600.0)
    counter.add(TEMPLATE, "KeyError: <str>")
    counter.add(RECORD, SEED_002)
    assert counter.flush() == 1
    assert _hits(engine) == [(RECORD, SEED_002, 1), (TEMPLATE, "KeyError: <str>", full)]


def test_the_queue_keeps_at_most_the_cap_of_templates_per_day(make_client) -> None:
    client = make_client(queue_templates_per_day=5)
    names = sorted(COMMON_WORDS)[:25]  # 25 distinct words that every template may keep
    popular = names[:3]
    for name in popular:  # hit more often than any other: never the ones dropped
        for _ in range(3):
            client.post("/api/match", json={"text": f"ValueError: no {name} here"})
    for start in range(0, len(names), 10):  # batches, each flushed on its own
        texts = [f"ValueError: no {name} here" for name in names[start : start + 10]]
        assert client.post("/api/match/batch", json={"texts": texts}).status_code == 200
        client.app.state.services.hits.flush()
    queue = client.get("/api/curation/queue").json()
    assert queue["total"] == 5
    shown = {item["template"]: item["hits"] for item in queue["items"]}
    assert all(shown[f"ValueError: no {name} here"] == 4 for name in popular)
    assert sorted(shown.values()) == [1, 1, 4, 4, 4]


def test_memory_holds_no_more_new_templates_than_the_cap(session) -> None:
    counter = HitCounter(session.get_bind(), enabled=True, interval_s=3600.0, templates_per_day=3)
    for name in ("ab", "cd", "ef", "gh", "ij"):
        assert counter.add(TEMPLATE, f"KeyError: {name}")
    counter.add(TEMPLATE, "KeyError: ab")  # one already held is still counted
    counter.add(RECORD, SEED_002)  # records are not templates
    assert counter.flush() == 4
    assert _hits(session.get_bind()) == [
        (RECORD, SEED_002, 1),
        (TEMPLATE, "KeyError: ab", 2),
        (TEMPLATE, "KeyError: cd", 1),
        (TEMPLATE, "KeyError: ef", 1),
    ]


def _totals(engine: Engine) -> list[tuple[str, str, int, date]]:
    with Session(engine) as session:
        rows = session.execute(
            select(HitTotal.kind, HitTotal.subject, HitTotal.hits, HitTotal.last_hit)
        )
    return sorted((kind, subject, int(hits), last) for kind, subject, hits, last in rows)


def _sums(engine: Engine) -> list[tuple[str, str, int, date]]:
    """What the totals must be: every subject's hits summed over its days, its last day."""
    summed = select(Hit.kind, Hit.subject, func.sum(Hit.count), func.max(Hit.day)).group_by(
        Hit.kind, Hit.subject
    )
    with Session(engine) as session:
        rows = session.execute(summed)
    return sorted((kind, subject, int(hits), last) for kind, subject, hits, last in rows)


def test_the_totals_are_the_sums_of_the_hits_after_every_flush(session) -> None:
    """The queue lists the totals: a flush adds today's hits to them, and a template the
    cap drops today keeps the hits of its other days, or, with none, leaves the queue."""
    engine = session.get_bind()
    yesterday = today() - timedelta(days=1)
    older = [(TEMPLATE, "KeyError: ab", 5), (TEMPLATE, "KeyError: cd", 1), (RECORD, SEED_002, 2)]
    with unit_of_work(engine) as writing:
        rows = [{"kind": k, "subject": s, "day": yesterday, "count": n} for k, s, n in older]
        writing.execute(insert(Hit), rows)
        retotal(writing, {(kind, subject) for kind, subject, _ in older}, set())
    counter = HitCounter(engine, enabled=True, interval_s=3600.0, templates_per_day=2)
    for subject in ("KeyError: ab", "KeyError: ij"):
        counter.add(TEMPLATE, subject)
    counter.add(RECORD, SEED_002)
    counter.flush()
    assert _totals(engine) == _sums(engine)
    for _ in range(3):  # two templates hit more often today: ab and ij are dropped today
        counter.add(TEMPLATE, "KeyError: ef")
        counter.add(TEMPLATE, "KeyError: gh")
    counter.flush()
    assert (
        _totals(engine)
        == _sums(engine)
        == [
            (RECORD, SEED_002, 3, today()),
            (TEMPLATE, "KeyError: ab", 5, yesterday),
            (TEMPLATE, "KeyError: cd", 1, yesterday),
            (TEMPLATE, "KeyError: ef", 3, today()),
            (TEMPLATE, "KeyError: gh", 3, today()),
        ]
    )


def test_the_upgrade_totals_the_hits_already_stored(session) -> None:
    engine = session.get_bind()
    downgrade(engine, "0009")  # below the totals' migration, 0010
    days = [today() - timedelta(days=n) for n in range(3)]
    rows = [{"kind": TEMPLATE, "subject": "KeyError: ab", "day": d, "count": 2} for d in days]
    rows.append({"kind": RECORD, "subject": SEED_002, "day": days[1], "count": 7})
    with engine.begin() as connection:
        connection.execute(insert(Hit), rows)
    upgrade(engine)
    assert _totals(engine) == [
        (RECORD, SEED_002, 7, days[1]),
        (TEMPLATE, "KeyError: ab", 6, days[0]),
    ]


def test_a_due_flush_is_owed_by_one_caller_only(session) -> None:
    """Once the interval has passed, the next count is told the flush is due, and the
    counts after it are not until the interval passes again: each caller told had sent a
    flush of its own to the request threads."""
    counter = HitCounter(session.get_bind(), True, interval_s=0.05)
    time.sleep(0.06)
    told = [counter.count(RECORD, "c53f6de81577a6bc")[1] for _ in range(100)]
    assert told == [True] + [False] * 99
    time.sleep(0.06)
    assert counter.count(RECORD, "c53f6de81577a6bc") == (True, True)
    assert counter.flush() == 1
