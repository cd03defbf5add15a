"""Where POST /api/match computes: a small paste on the thread for small pastes, the rest in
the request threads; the hits a match makes due are written either way."""

import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlmodel import Session

from app.curation.hits import RECORD
from app.serving import observed
from app.store.tables import Hit
from tests.helpers.postgres import SQLITE
from tests.helpers.real_errors import sglang_cancel_traceback
from tests.helpers.records import DATA_DIR
from tests.helpers.writers import probe_record

SMALL_PASTE_THREAD = "errkb-small-pastes"
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
def threads_of_matches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each match ran in, in order."""
    names: list[str] = []
    real = observed.match_text

    def recorded(*args, **kwargs):
        names.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(observed, "match_text", recorded)
    return names


def test_a_small_paste_is_matched_on_its_own_thread_a_large_one_in_a_request_thread(
    make_client, threads_of_matches: list[str], store_engine: str
) -> None:
    """On PostgreSQL, whose reads wait for the server, every paste goes to a request thread."""
    with make_client(DATA_DIR) as client:
        ready(client)
        small = sglang_cancel_traceback(8192)
        large = small + "\n" + "INFO 12-02 10:00:00 [core.py:1] step\n" * 600
        assert len(small) <= observed.SMALL_PASTE_BYTES < len(large)
        for text in (small, large):
            response = client.post("/api/match", json={"text": text})
            assert response.status_code == 200
            assert response.json()["matches"][0]["id"] == "edc4df790b100979"
    on_own_thread = [name.startswith(SMALL_PASTE_THREAD) for name in threads_of_matches]
    assert on_own_thread == [store_engine == SQLITE, False]


@pytest.mark.sqlite_only
def test_after_a_write_the_next_paste_brings_the_index_up_and_finds_the_record(
    make_client, threads_of_matches: list[str], auth: dict[str, str]
) -> None:
    """A match on the small-paste thread never syncs the index: the first paste after a
    write finds it behind the store there, and goes on to a request thread, which brings it
    up; so the written record answers at once, and the next paste is small again."""
    with make_client(DATA_DIR, index_poll_s=0) as client:
        ready(client)
        assert client.post("/api/match", json={"text": "ValueError: x"}).status_code == 200
        record = probe_record("c0de00000000f00d", "written by this test")
        assert client.post("/api/errors", json=record, headers=auth).status_code == 201
        response = client.post("/api/match", json={"text": record["errorMessage"]})
        assert response.json()["matches"][0]["id"] == record["id"]
        again = client.post("/api/match", json={"text": record["errorMessage"]})
        assert again.json()["matches"][0]["id"] == record["id"]
    on_own_thread = [name.startswith(SMALL_PASTE_THREAD) for name in threads_of_matches]
    assert on_own_thread == [True, True, False, True]


def test_hits_due_after_a_small_paste_are_written(make_client) -> None:
    """The thread for small pastes leaves the write of due hits to after the reply."""
    with make_client(DATA_DIR) as client:
        hits = client.app.state.hits  # type: ignore[attr-defined]
        hits.interval_s = 0  # every count is due
        text = sglang_cancel_traceback(8192)
        assert client.post("/api/match", json={"text": text}).status_code == 200
        with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
            stored = session.execute(select(Hit.kind, Hit.subject, Hit.count)).all()
        assert stored == [(RECORD, "edc4df790b100979", 1)]
