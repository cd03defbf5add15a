"""GET /api/curation/queue and the /curate page over real harvested drafts: most-hit first,
paged, filtered by repo, reviewed records left out."""

import base64
import json

import pytest

from app.curation.queue import template_id
from app.store.engine import unit_of_work
from tests.helpers.harvested import KEY_EXISTS, NO_LOCK, OBJECT_TOO_BIG, harvest_into
from tests.helpers.records import DATA_DIR

pytestmark = pytest.mark.network  # downloads from the package index

SEED_002 = "edc4df790b100979"
KEY_PASTE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/vllm/vllm/distributed/device_communicators/shm_object_storage.py", '
    "line 699, in put\n"
    "ValueError: Key 'mm-cache-8f2a' already exists in the storage.\n"
)
# In words the store's templates have (app.records.vocabulary): kept in the template.
UNEXPLAINED = "Traceback (most recent call last):\nOSError: data 7 of /models/x is empty\n"
UNEXPLAINED_TEMPLATE = "OSError: data <num> of <path> is empty"


def _client(make_client, tmp_path):
    client = make_client(DATA_DIR)
    with unit_of_work(client.app.state.services.engine) as session:
        harvest_into(session, tmp_path)
    return client


def _hit(client, pastes: int, unexplained: int, views: dict[str, int]) -> None:
    for _ in range(pastes):
        assert client.post("/api/match", json={"text": KEY_PASTE}).json()["matches"][0]["id"] == (
            KEY_EXISTS
        )
    for _ in range(unexplained):
        client.post("/api/match", json={"text": UNEXPLAINED})
    for record_id, count in views.items():
        for _ in range(count):
            assert client.get(f"/errors/{record_id}").status_code == 200


def test_queue_orders_drafts_and_templates_by_hits(make_client, tmp_path) -> None:
    client = _client(make_client, tmp_path)
    _hit(client, pastes=3, unexplained=2, views={KEY_EXISTS: 1, NO_LOCK: 1, SEED_002: 9})
    body = client.get("/api/curation/queue").json()
    assert [(item["id"], item["hits"]) for item in body["items"]] == [
        (KEY_EXISTS, 4),
        (template_id(UNEXPLAINED_TEMPLATE), 2),
        (NO_LOCK, 1),
    ]  # the reviewed seed, however often seen, is explained already
    assert body["total"] == 3
    assert body["nextCursor"] is None
    first = body["items"][0]
    assert first["reviewState"] == "draft"
    assert first["template"] is None
    assert first["record"]["errorMessage"] == "Key '{key}' already exists in the storage."
    assert first["lastHit"] == client.get("/api/stats/charts?days=1").json()["hitsPerDay"][0]["day"]
    template = body["items"][1]
    assert template["reviewState"] == "unexplained"
    assert template["record"] is None
    assert template["template"] == UNEXPLAINED_TEMPLATE


def test_queue_pages_and_filters(make_client, tmp_path) -> None:
    client = _client(make_client, tmp_path)
    _hit(client, pastes=0, unexplained=1, views={KEY_EXISTS: 3, OBJECT_TOO_BIG: 2, NO_LOCK: 2})
    seen, params = [], {"limit": 1}
    while True:
        page = client.get("/api/curation/queue", params=params).json()
        assert page["total"] == 4
        seen += [item["id"] for item in page["items"]]
        if page["nextCursor"] is None:
            break
        params["cursor"] = page["nextCursor"]
    ties = sorted([OBJECT_TOO_BIG, NO_LOCK], reverse=True)  # equal hits: later id first
    assert seen == [KEY_EXISTS, *ties, template_id(UNEXPLAINED_TEMPLATE)]
    vllm = client.get("/api/curation/queue", params={"repo": "vllm-project/vllm"}).json()
    assert [item["id"] for item in vllm["items"]] == [KEY_EXISTS, *ties]
    assert client.get("/api/curation/queue", params={"repo": "nobody/none"}).json()["total"] == 0


def test_bad_queue_parameters_are_4xx(client) -> None:
    assert client.get("/api/curation/queue", params={"cursor": "not-ours"}).status_code == 400
    assert client.get("/api/curation/queue", params={"cursor": "W10"}).status_code == 400
    forged = base64.urlsafe_b64encode(json.dumps([10**30, "record", "x"]).encode()).decode()
    assert client.get("/api/curation/queue", params={"cursor": forged}).status_code == 400
    assert client.get("/api/curation/queue", params={"limit": 0}).status_code == 422
    assert client.get("/api/curation/queue", params={"limit": 201}).status_code == 422
    assert client.get("/api/curation/queue", params={"repo": "x" * 201}).status_code == 422
    assert client.get("/curate", params={"cursor": "not-ours"}).status_code == 400


def test_curate_page_shows_the_queue_and_links_its_json(make_client, tmp_path) -> None:
    client = _client(make_client, tmp_path)
    _hit(client, pastes=2, unexplained=1, views={})
    page = client.get("/curate")
    assert page.status_code == 200
    assert page.headers["link"] == '</api/curation/queue>; rel="alternate"; type="application/json"'
    html = page.text
    assert html.index(f"errkb curate {KEY_EXISTS}") < html.index("OSError: data &lt;num&gt;")
    assert f'href="/errors/{KEY_EXISTS}"' in html
    assert "unexplained" in html
    assert '<option value="vllm-project/vllm">' in html
    filtered = client.get("/curate", params={"repo": "sgl-project/sglang"}).text
    assert "No hits yet for sgl-project/sglang" in filtered
    assert client.get("/curate", params={"repo": ""}).status_code == 200


def test_stats_page_names_the_most_hit_draft_by_its_typed_record(make_client, tmp_path) -> None:
    """The most-hit chart reads the record's attributes, not camelCase keys."""
    client = _client(make_client, tmp_path)
    _hit(client, pastes=2, unexplained=1, views={})
    page = client.get("/stats")
    assert page.status_code == 200
    assert "ValueError: Key '{key}' already exists in the storage." in page.text
