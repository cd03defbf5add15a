"""Kept replies: GET /api/errors/{id} answers kept bytes until the store changes, and what a
write, an import or a reproducer run changes is in the next reply."""

import json
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from app.records import service as records
from app.reproducers import drift, runner
from app.serving.replies import Replies
from app.store.engine import unit_of_work
from tests.helpers.places import IN_THREAD, ON_LOOP, where
from tests.helpers.postgres import SQLITE
from tests.helpers.records import DATA_DIR, SEED_002, curated_records
from tests.helpers.statements import captured

RECORD = "c53f6de81577a6bc"  # curated: "Attempted to free more buffers than allocated"


def _statements(client: TestClient, call) -> tuple[object, list[str]]:
    """What `call()` answers, and the statements it sent to the store."""
    with captured(client.app.state.services.engine, everything=True) as sent:
        answer = call()
    return answer, [statement for statement, _ in sent]


def test_a_kept_record_costs_one_statement_and_the_same_bytes(client: TestClient) -> None:
    first = client.get(f"/api/errors/{RECORD}")
    again, sent = _statements(client, lambda: client.get(f"/api/errors/{RECORD}"))
    assert again.status_code == first.status_code == 200
    assert again.content == first.content
    assert again.headers["etag"] == first.headers["etag"]
    assert len(sent) == 1
    assert "dataset_state" in sent[0]


def test_a_kept_record_is_answered_on_the_event_loop_where_the_store_is_read_in_process(
    client: TestClient, store_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite the kept reply's one statement runs on the loop, and only a reply to make
    goes to a request thread; on PostgreSQL, whose reads wait for the server, every GET
    looks for it in a thread."""
    places: list[str] = []
    real = Replies.kept_record

    def recorded(self: Replies, *args: object) -> object:
        places.append(where())
        return real(self, *args)

    monkeypatch.setattr(Replies, "kept_record", recorded)
    made = client.get(f"/api/errors/{RECORD}")
    kept = client.get(f"/api/errors/{RECORD}")
    assert made.status_code == kept.status_code == 200
    assert kept.content == made.content
    if store_engine == SQLITE:
        assert places == [ON_LOOP, ON_LOOP]  # the thread that made it did not look again
    else:
        assert places == [IN_THREAD, IN_THREAD]


def test_an_etag_sent_back_answers_304_without_a_body(client: TestClient) -> None:
    etag = client.get(f"/api/errors/{RECORD}").headers["etag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        unchanged = client.get(f"/api/errors/{RECORD}", headers={"If-None-Match": header})
        assert unchanged.status_code == 304, header
        assert unchanged.content == b""
        assert unchanged.headers["etag"] == etag
    changed = client.get(f"/api/errors/{RECORD}", headers={"If-None-Match": '"other"'})
    assert changed.status_code == 200
    assert changed.headers["etag"] == etag


def test_a_write_is_in_the_next_reply(client: TestClient, auth) -> None:
    before = client.get(f"/api/errors/{RECORD}")
    record = dict(curated_records()[RECORD], severity="critical")
    assert client.put(f"/api/errors/{RECORD}", json=record, headers=auth).status_code == 200
    after = client.get(f"/api/errors/{RECORD}")
    assert after.json()["record"]["severity"] == "critical"
    assert after.json()["datasetVersion"] > before.json()["datasetVersion"]
    assert after.headers["etag"] != before.headers["etag"]
    stale = client.get(f"/api/errors/{RECORD}", headers={"If-None-Match": before.headers["etag"]})
    assert stale.status_code == 200

    assert client.delete(f"/api/errors/{RECORD}", headers=auth).status_code == 204
    assert client.get(f"/api/errors/{RECORD}").status_code == 404


def test_an_import_outside_the_server_is_in_the_next_reply(client: TestClient, tmp_path) -> None:
    """Another process (`errkb import`) writes the store: the version it moves is read on
    every request, so no reply kept from before is answered."""
    before = client.get(f"/api/errors/{RECORD}").json()
    record = dict(curated_records()[RECORD], severity="critical")
    (tmp_path / "changed.json").write_text(json.dumps(record))
    with unit_of_work(client.app.state.services.engine) as session:
        assert records.import_paths(session, [tmp_path]).counts.updated == 1
    after = client.get(f"/api/errors/{RECORD}").json()
    assert before["record"]["severity"] != after["record"]["severity"] == "critical"


def test_a_reproducer_run_and_drift_check_are_in_the_next_reply(client: TestClient) -> None:
    """Runs and drift checks are written without moving the dataset version (a verify run of
    thousands must not drop every memo); they move the reproducers version instead."""
    before = client.get(f"/api/errors/{SEED_002}").json()
    assert before["runs"] == []
    assert before["drift"] is None
    with unit_of_work(client.app.state.services.engine) as session:
        result = {"status": "passed", "target": {"package": "sglang", "version": "0.5.23"}}
        started = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
        outcome = runner.RunOutcome(SEED_002, "cpu", "passed", "ok", 2.5, "", result, started)
        runner.store_run(session, outcome)
    ran = client.get(f"/api/errors/{SEED_002}").json()
    assert [run["status"] for run in ran["runs"]] == ["passed"]
    assert ran["datasetVersion"] == before["datasetVersion"]
    with unit_of_work(client.app.state.services.engine) as session:
        checked = drift.DriftOutcome(SEED_002, "sglang", "0.5.23", "moved", 412, "moved by 3")
        drift.store_drift(session, checked)
    assert client.get(f"/api/errors/{SEED_002}").json()["drift"]["foundLine"] == 412


def test_no_replies_are_kept_when_asked_for_none(make_client) -> None:
    client = make_client(DATA_DIR, reply_cache_entries=0)
    first = client.get(f"/api/errors/{RECORD}")
    again, sent = _statements(client, lambda: client.get(f"/api/errors/{RECORD}"))
    assert again.content == first.content
    assert len(sent) > 1
