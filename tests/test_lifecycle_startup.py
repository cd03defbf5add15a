"""/readyz: 503 while the default harvest runs or the index loads, 200 after, the failure
named when a step fails; /healthz answers all along; older releases harvested in
the background once ready, with their progress."""

import json
import time
from contextlib import ExitStack

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlmodel import Session

from app.harvest import drafts
from app.lifecycle.readiness import FAILED
from app.lifecycle.startup import LOAD_INDEX, harvest_step, startup_lock
from app.main import create_app
from app.records import release_history, site_keys
from app.store.tables import Record

pytestmark = pytest.mark.network  # downloads from the package index

READY_WITHIN_S = 60.0
BACKGROUND_WITHIN_S = 180.0


def _wait_ready(client: TestClient) -> dict:
    deadline = time.monotonic() + READY_WITHIN_S
    while (response := client.get("/readyz")).status_code != 200:
        assert response.status_code == 503
        assert response.json()["status"] == "starting"
        assert time.monotonic() < deadline, response.json()
        time.sleep(0.05)
    return response.json()


def test_not_ready_until_the_default_release_is_harvested_and_indexed(settings) -> None:
    settings = settings.model_copy(update={"harvest_on_start": True, "default_releases": ["typer"]})
    app = create_app(settings)
    with ExitStack() as stack:
        lock = stack.enter_context(ExitStack())
        lock.enter_context(startup_lock(app.state.services.engine))  # another worker's turn
        client = stack.enter_context(TestClient(app))
        waiting = client.get("/readyz")
        assert waiting.status_code == 503
        body = waiting.json()
        assert body | {"index": None} == {
            "status": "starting",
            "pending": [harvest_step("typer"), LOAD_INDEX],
            "failed": None,
            "index": None,
        }
        assert body["index"]["version"] is None
        assert client.get("/healthz").status_code == 200
        lock.close()  # the other worker is done
        ready = _wait_ready(client)
        assert ready | {"index": None} == {
            "status": "ready",
            "pending": [],
            "failed": None,
            "index": None,
        }
        assert not ready["index"]["stale"]
        with Session(app.state.services.engine) as session:
            assert drafts.is_harvested(session, "typer")
        drafts_total = client.get("/api/errors", params={"repo": "fastapi/typer"}).json()["total"]
        assert drafts_total > 10
        metrics = {
            sample.name: sample.value
            for family in text_string_to_metric_families(client.get("/metrics").text)
            for sample in family.samples
        }
        with Session(app.state.services.engine) as session:
            patterns = session.execute(
                select(Record.message_pattern).where(Record.repo == "fastapi/typer")
            ).scalars()
            by_message = [p for p in patterns if not site_keys.matched_by_location(p)]
        assert metrics["errkb_index_patterns"] == len(by_message) < drafts_total
        assert metrics["errkb_index_build_seconds"] > 0


def test_a_failed_harvest_is_reported_and_never_ready(settings, caplog) -> None:
    settings = settings.model_copy(
        update={"harvest_on_start": True, "default_releases": ["no-such-distribution-errkb"]}
    )
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + READY_WITHIN_S
        while (body := client.get("/readyz").json())["status"] == "starting":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.get("/readyz").status_code == 503
        assert body["status"] == "failed"
        # the step, not its exception: that may hold the deployment's paths or credentials
        assert body["failed"] == "harvest no-such-distribution-errkb: " + FAILED
        assert "not installed" in caplog.text
        assert "not installed" not in str(body)
        assert client.get("/healthz").status_code == 200


def test_without_harvest_only_the_index_is_waited_for(settings) -> None:
    with TestClient(create_app(settings)) as client:
        assert _wait_ready(client)["status"] == "ready"


def test_older_releases_are_harvested_after_ready(settings) -> None:
    """The server is ready once the current release is in; the older ones follow
    in the background, their progress (and a failure, which stops nothing) in /readyz."""
    settings = settings.model_copy(
        update={
            "harvest_on_start": True,
            "default_releases": ["typer==0.29.2"],
            "older_releases": ["no-such-distribution-errkb==1.0", "typer==0.20.0"],
            # What this test looks at is that the background harvest never makes the server
            # "starting" again. On a busy two-core machine the harvest thread can keep the
            # probe's database read past the default 2 s: that is "unreachable", another check.
            "readiness_timeout_s": 30.0,
        }
    )
    with TestClient(create_app(settings)) as client:
        _wait_ready(client)
        deadline = time.monotonic() + BACKGROUND_WITHIN_S
        while True:
            response = client.get("/readyz")
            body = response.json()
            assert (response.status_code, body["status"]) == (200, "ready"), body  # all along
            if not (body["background"]["pending"] or body["background"]["running"]):
                break
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        background = body["background"]
        assert (background["total"], background["done"]) == (2, 1)
        (failed,) = background["failed"]
        assert failed == harvest_step("no-such-distribution-errkb==1.0")
        with Session(client.app.state.services.engine) as session:
            assert drafts.is_harvested(session, "typer==0.20.0")
            harvested = release_history.harvested_releases(session)
        assert harvested == ["typer==0.20.0", "typer==0.29.2"]


def test_kept_runs_of_drafts_wait_for_the_harvest_that_stores_their_record(
    settings, tmp_path
) -> None:
    """A run data/runs/ keeps for a draft (a verified generated reproducer) cannot be kept
    before its release is harvested; start-up keeps it once the harvest stored the draft."""
    first = settings.model_copy(update={"harvest_on_start": True, "default_releases": ["typer"]})
    with TestClient(create_app(first)) as client:
        _wait_ready(client)
        [draft] = client.get("/api/errors", params={"repo": "fastapi/typer", "limit": 1}).json()[
            "items"
        ]
    kept = tmp_path / "runs"
    line = {
        "id": draft["id"],
        "status": "passed",
        "device": "cpu",
        "reason": "the trigger raised the record's error and the fix held",
        "durationS": 0.4,
        "startedAt": "2026-12-04T12:00:00+00:00",
        "machine": {"kind": "cpu", "name": "Some CPU", "cores": 2},
        "python": "3.11.7",
    }
    kept.mkdir()
    (kept / "generated.jsonl").write_text(json.dumps(line) + "\n")
    fresh = first.model_copy(
        update={"database_url": f"sqlite:///{tmp_path / 'fresh.db'}", "runs_dir": kept}
    )
    with TestClient(create_app(fresh)) as client:
        _wait_ready(client)
        runs = client.get(f"/api/errors/{draft['id']}").json()["runs"]
    assert [run["summary"] for run in runs] == ["Reproduced on CPU (Python 3.11.7) on 2026-12-04"]
