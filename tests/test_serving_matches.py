"""Where POST /api/match computes: a small paste on the event loop in its turn and within
its budget, the rest in the request threads; the hits a match makes due are written either
way."""

import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlmodel import Session

from app.curation.hits import RECORD
from app.serving import matches
from app.store.tables import Hit
from tests.helpers.places import IN_THREAD, ON_LOOP, where
from tests.helpers.postgres import SQLITE
from tests.helpers.real_errors import sglang_cancel_traceback
from tests.helpers.records import DATA_DIR
from tests.helpers.writers import probe_record

READY_WAIT_S = 30


def ready(client: TestClient) -> TestClient:
    """The client once its app has loaded the match index: a paste before that waits for
    the load in a request thread."""
    deadline = time.monotonic() + READY_WAIT_S
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the app did not get ready"
        time.sleep(0.05)
    return client


@pytest.fixture
def places_of_matches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Where each match ran, in order: on the event loop or in a thread. The loop's budget
    is made roomy, so that a slow test machine does not send a paste on."""
    monkeypatch.setattr(matches, "LOOP_BUDGET_S", 60.0)
    places: list[str] = []
    for name in ("match_text", "match_text_now"):
        real = getattr(matches, name)

        def recorded(*args, real=real, **kwargs):
            places.append(where())
            return real(*args, **kwargs)

        monkeypatch.setattr(matches, name, recorded)
    return places


def test_a_small_paste_is_matched_on_the_event_loop_a_large_one_in_a_request_thread(
    make_client, places_of_matches: list[str], store_engine: str
) -> None:
    """On PostgreSQL, whose reads wait for the server, every paste goes to a request thread."""
    with make_client(DATA_DIR) as client:
        ready(client)
        small = sglang_cancel_traceback(8192)
        large = small + "\n" + "INFO 12-02 10:00:00 [core.py:1] step\n" * 600
        assert len(small) <= matches.SMALL_PASTE_BYTES < len(large)
        for text in (small, large):
            response = client.post("/api/match", json={"text": text})
            assert response.status_code == 200
            assert response.json()["matches"][0]["id"] == "edc4df790b100979"
    small_place = ON_LOOP if store_engine == SQLITE else IN_THREAD
    assert places_of_matches == [small_place, IN_THREAD]


@pytest.mark.sqlite_only
def test_after_a_write_the_next_paste_brings_the_index_up_and_finds_the_record(
    make_client, places_of_matches: list[str], auth: dict[str, str]
) -> None:
    """A match on the event loop never syncs the index: the first paste after a write finds
    it behind the store there, and goes on to a request thread, which brings it up; so the
    written record answers at once, and the next paste is on the loop again."""
    with make_client(DATA_DIR, index_poll_s=0) as client:
        ready(client)
        assert client.post("/api/match", json={"text": "ValueError: x"}).status_code == 200
        record = probe_record("c0de00000000f00d", "written by this test")
        assert client.post("/api/errors", json=record, headers=auth).status_code == 201
        response = client.post("/api/match", json={"text": record["errorMessage"]})
        assert response.json()["matches"][0]["id"] == record["id"]
        again = client.post("/api/match", json={"text": record["errorMessage"]})
        assert again.json()["matches"][0]["id"] == record["id"]
    assert places_of_matches == [ON_LOOP, ON_LOOP, IN_THREAD, ON_LOOP]


def test_hits_due_after_a_small_paste_are_written(make_client) -> None:
    """A match on the event loop leaves the write of due hits to after the reply."""
    with make_client(DATA_DIR) as client:
        hits = client.app.state.services.hits  # type: ignore[attr-defined]
        hits.interval_s = 0  # every count is due
        text = sglang_cancel_traceback(8192)
        assert client.post("/api/match", json={"text": text}).status_code == 200
        with Session(client.app.state.services.engine) as session:  # type: ignore[attr-defined]
            stored = session.execute(select(Hit.kind, Hit.subject, Hit.count)).all()
        assert stored == [(RECORD, "edc4df790b100979", 1)]


@pytest.mark.sqlite_only
def test_a_paste_past_its_budget_on_the_loop_is_matched_again_in_a_request_thread(
    make_client, places_of_matches: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A match stops on the loop once it has had its budget, and the request thread's
    answer is the whole one: the same as a match that kept to its budget."""
    text = sglang_cancel_traceback(8192)
    with make_client(DATA_DIR) as client:
        ready(client)
        within_budget = client.post("/api/match", json={"text": text})
        monkeypatch.setattr(matches, "LOOP_BUDGET_S", 0.0)
        past_budget = client.post("/api/match", json={"text": text})
    assert within_budget.status_code == past_budget.status_code == 200
    assert past_budget.json() == within_budget.json()
    assert places_of_matches == [ON_LOOP, ON_LOOP, IN_THREAD]
