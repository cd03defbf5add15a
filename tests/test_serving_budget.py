"""The paste budget: a client past its bytes of paste per minute gets 429 with Retry-After,
on the API and the paste box alike, and other clients match as before."""

from fastapi.testclient import TestClient

from app.serving.budget import REFILL_S, PasteBudget
from tests.helpers.records import DATA_DIR

LINE = "RuntimeError: Attempted to free more buffers than allocated"
PASTE = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 200 + LINE
BUDGET = 3 * len(PASTE)


def test_a_client_past_its_budget_gets_429_and_another_client_does_not(make_client) -> None:
    first = make_client(DATA_DIR, paste_budget_bytes=BUDGET)
    first_client = TestClient(first.app, client=("192.0.2.1", 40000))
    second_client = TestClient(first.app, client=("192.0.2.2", 40000))
    plain = {"content-type": "text/plain"}
    for _ in range(3):
        assert first_client.post("/api/match", content=PASTE, headers=plain).status_code == 200

    refused = first_client.post("/api/match", content=PASTE, headers=plain)
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    wait = int(refused.headers["retry-after"])
    assert 1 <= wait <= REFILL_S
    assert refused.json()["title"] == "Paste budget spent"
    assert "ERRKB_PASTE_BUDGET_BYTES" in refused.json()["detail"]
    batch = first_client.post("/api/match/batch", json={"texts": [PASTE]})
    assert batch.status_code == 429
    page = first_client.post("/match", data={"text": PASTE, "mode": "match"})
    assert page.status_code == 429
    assert "Paste budget spent" in page.text
    assert "retry-after" in page.headers

    matched = second_client.post("/api/match", content=PASTE, headers=plain)
    assert matched.status_code == 200
    assert matched.json()["matches"][0]["id"] == "c53f6de81577a6bc"
    assert second_client.post("/match", data={"text": PASTE, "mode": "match"}).status_code == 200


def test_no_budget_means_no_limit(make_client) -> None:
    client = make_client(DATA_DIR, paste_budget_bytes=0)
    for _ in range(5):
        assert client.post("/api/match", json={"text": PASTE}).status_code == 200


def test_the_budget_refills_over_a_minute() -> None:
    now = [0.0]
    budget = PasteBudget(6000, clock=lambda: now[0])
    assert budget.take("a", 4000) is None
    assert budget.take("a", 4000) == (4000 - 2000) / (6000 / REFILL_S)  # 20 s to go
    assert budget.take("b", 6000) is None  # every client has its own
    now[0] = 20.0
    assert budget.take("a", 4000) is None
    assert budget.take("a", 1) is not None
    now[0] = 20.0 + REFILL_S
    assert budget.take("a", 10**9) is None  # larger than the budget: waits for a full one
    assert budget.take("a", 1) is not None
