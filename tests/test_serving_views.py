"""One data path for a page and its JSON twin: the record page and GET
/api/errors/{id} are built from one RecordView, so the twin carries everything the page
shows, and each page names its twin in a visible link and a `Link: rel="alternate"`."""

import re
from datetime import UTC, datetime

from fastapi.testclient import TestClient

from app.reproducers import drift, runner
from app.store.engine import unit_of_work
from tests.helpers.records import SEED_002

STARTED = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _store_run_and_drift(client: TestClient) -> None:
    with unit_of_work(client.app.state.services.engine) as session:
        result = {"status": "passed", "target": {"package": "sglang", "version": "0.5.23"}}
        outcome = runner.RunOutcome(SEED_002, "cpu", "passed", "ok", 2.5, "", result, STARTED)
        runner.store_run(session, outcome)
        checked = drift.DriftOutcome(SEED_002, "sglang", "0.5.23", "moved", 412, "moved by 3")
        drift.store_drift(session, checked)


def _section(html: str, name: str) -> str:
    return re.search(rf'<section id="{name}".*?</section>', html, re.S).group(0)


def test_the_record_twin_carries_what_the_page_shows(client: TestClient) -> None:
    _store_run_and_drift(client)
    page = client.get(f"/errors/{SEED_002}")
    body = client.get(f"/api/errors/{SEED_002}").json()

    linked = re.findall(r'href="/errors/([0-9a-f]{16})"', _section(page.text, "related"))
    assert [item["record"]["id"] for item in body["related"]] == linked != []
    for item in body["related"]:
        assert "; ".join(item["reasons"]) in page.text

    reproducer = _section(page.text, "reproducer")
    [run] = body["runs"]
    assert run["status"] == "passed"
    assert run["package"] == "sglang"
    assert run["version"] == "0.5.23"
    assert run["startedAt"].startswith("2026-11-29T12:00:00")
    assert f"<strong>{run['summary']}</strong>" in reproducer
    assert run["summary"].startswith("Reproduced on ")
    assert body["drift"]["status"] == "moved"
    assert body["drift"]["foundLine"] == 412
    assert "<strong>moved</strong> (line 412)" in reproducer
    assert body["reproducer"] == f"reproducers/{SEED_002}.py"

    assert (
        page.headers["link"]
        == f'</api/errors/{SEED_002}>; rel="alternate"; type="application/json"'
    )
    assert f'<a href="/api/errors/{SEED_002}" type="application/json">JSON</a>' in page.text


def test_a_record_without_runs_says_so_in_both(client: TestClient) -> None:
    body = client.get(f"/api/errors/{SEED_002}").json()
    assert body["runs"] == []
    assert body["drift"] is None
    assert "No reproducer run yet" in client.get(f"/errors/{SEED_002}").text


def test_writes_answer_the_same_document_as_reads(
    client: TestClient, seed_records: dict, auth: dict
) -> None:
    record = seed_records[SEED_002]
    written = client.put(f"/api/errors/{SEED_002}", json=record, headers=auth)
    assert written.status_code == 200
    assert written.json() == client.get(f"/api/errors/{SEED_002}").json()


def test_the_search_page_names_the_twin_of_its_own_page(client: TestClient) -> None:
    first = client.get("/api/search", params={"q": "free", "limit": 1}).json()
    assert first["nextCursor"]
    page = client.get("/search", params={"q": "free", "tag": "cuda", "cursor": first["nextCursor"]})
    twin = f"/api/search?q=free&tag=cuda&cursor={first['nextCursor']}"
    assert page.headers["link"] == f'<{twin}>; rel="alternate"; type="application/json"'
    assert f'<a href="{twin.replace("&", "&amp;")}">JSON</a>' in page.text


def test_the_match_page_shows_its_twins_matches(client: TestClient) -> None:
    paste = "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096"
    page = client.post("/match", data={"text": paste, "mode": "match"})
    twin = page.headers["link"].split(">")[0][1:]
    assert twin == "/api/match?limit=10"
    body = client.post(twin, content=paste).json()
    shown = re.findall(r'<h3><a href="/errors/([0-9a-f]{16})">', page.text)
    assert shown == [match["id"] for match in body["matches"]] != []
