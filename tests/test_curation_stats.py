"""/api/stats/charts and the /stats page over real reproducer runs, real drift checks and
counted hits."""

import pytest
from sqlmodel import Session

from app.curation.hits import today
from app.records import service as records
from app.reproducers import drift, runner
from tests.helpers.records import SEED_FILES

pytestmark = pytest.mark.network  # downloads from the package index

C53, B6B, EDC = "c53f6de81577a6bc", "b6bab2e17ae18394", "edc4df790b100979"
SEED_002_PASTE = (
    "Traceback (most recent call last):\n"
    "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096\n"
)
UNEXPLAINED = "Traceback (most recent call last):\nKeyError: 'layers.31.mlp'\n"


def test_charts_data_of_runs_drift_and_hits(make_client, settings) -> None:
    client = make_client(*SEED_FILES)  # the charts below count the three seeds
    with Session(client.app.state.services.engine) as session:
        ran = runner.verify(client.app.state.services.engine, settings, [C53, EDC], "cpu")
        outcomes = {outcome.record_id: outcome for outcome in ran}
        for _ in range(2):  # checked twice: only the latest check of each record counts
            for record_id in (C53, B6B, EDC):
                stored = records.get_record(session, record_id)
                drift.store_drift(session, drift.check_drift(settings, stored))
            session.commit()
    assert outcomes[C53].status == "passed"
    assert outcomes[EDC].status == "skipped"
    client.post("/api/match", json={"text": SEED_002_PASTE})
    client.post("/api/match", json={"text": UNEXPLAINED})
    client.post("/api/match", json={"text": UNEXPLAINED})

    body = client.get("/api/stats/charts", params={"days": 7}).json()
    assert body["recordsPerRepo"] == {
        "sgl-project/sglang": {"draft": 0, "reviewed": 1},
        "vllm-project/vllm": {"draft": 0, "reviewed": 2},
    }
    days = body["hitsPerDay"]
    assert len(days) == 7
    assert days[-1]["day"] == today().isoformat()
    assert days[-1] | {"day": None} == {"day": None, "reviewed": 1, "draft": 0, "unexplained": 2}
    assert all(day["reviewed"] + day["unexplained"] == 0 for day in days[:-1])
    assert [(item["template"], item["hits"]) for item in body["mostHit"]] == [
        ("KeyError: <str>", 2)
    ]
    by_record = {status["recordId"]: status for status in body["reproducers"]}
    assert set(by_record) == {info.record_id for info in runner.all_reproducers(settings)}
    assert {C53, B6B, EDC} <= set(by_record)
    assert by_record[C53]["latestStatus"] == "passed"
    assert by_record[C53]["latest"].startswith("Reproduced on CPU (torch 2.13.0")
    assert by_record[B6B]["latest"] is None
    assert by_record[C53]["runs"]["passed"] == 1
    assert by_record[EDC]["latestStatus"] == "skipped"
    assert by_record[EDC]["latestAt"]
    assert by_record[B6B]["latestStatus"] is None
    assert sum(by_record[B6B]["runs"].values()) == 0
    per_release = body["driftPerRelease"]
    assert set(per_release) == {"sglang==0.5.23", "vllm==0.33.0"}
    assert sum(per_release["vllm==0.33.0"].values()) == 2
    assert sum(per_release["sglang==0.5.23"].values()) == 1
    assert per_release["vllm==0.33.0"]["moved"] == 2  # c53 and b6b moved in 0.33.0

    page = client.get("/stats", params={"days": 7})
    assert page.status_code == 200
    assert (
        page.headers["link"]
        == '</api/stats/charts?days=7>; rel="alternate"; type="application/json"'
    )
    html = page.text
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg"') == 5
    assert html.count("<script") == 1  # app.js in the head; the charts bring none
    assert "KeyError: &lt;str&gt;" in html
    assert "vllm==0.33.0" in html
    assert "<strong>passed</strong>" in html
    assert "<strong>not run yet</strong>" in html


def test_stats_keeps_the_old_shape_and_refuses_bad_days(client) -> None:
    assert set(client.get("/api/stats").json()) == {
        "records",
        "perRepo",
        "perReviewState",
        "datasetVersion",
    }
    for days in (0, 367, "x"):
        assert client.get("/api/stats/charts", params={"days": days}).status_code == 422
        assert client.get("/stats", params={"days": days}).status_code == 422
