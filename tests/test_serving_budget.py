"""The paste budget: a client past its bytes of paste per minute gets 429 with Retry-After,
on the API and the paste box alike, and other clients match as before."""

import asyncio

from fastapi.testclient import TestClient

from app.serving.budget import LARGE_PASTE_BYTES, REFILL_S, PasteBudget, PastesInFlight
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


LARGE = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 800 + LINE
SMALL = LINE


def test_large_pastes_share_the_server_wide_budget_and_small_ones_never_wait(
    make_client,
) -> None:
    """With the server-wide budget taken (other large pastes being matched), a large paste
    from any address waits and then answers 503 with Retry-After; a small one is matched
    at once; once the bytes come back, a large paste is matched again."""
    assert len(LARGE) > LARGE_PASTE_BYTES >= len(SMALL)
    client = make_client(DATA_DIR, large_pastes_in_flight_bytes=len(LARGE), match_deadline_s=0.3)
    # The short deadline is for the wait for room; the matching itself, slower on a loaded
    # machine, gets none, so a slow match cannot pass for a refusal.
    client.app.state.services.matcher.deadline_s = None
    in_flight: PastesInFlight = client.app.state.services.pastes_in_flight
    taken = asyncio.run(in_flight.take(len(LARGE), 0))  # another large paste, being matched
    assert taken == len(LARGE)
    plain = {"content-type": "text/plain"}
    for address in ("192.0.2.1", "192.0.2.2"):  # a budget of its own does not help
        other = TestClient(client.app, client=(address, 40000))
        refused = other.post("/api/match", content=LARGE, headers=plain)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["title"] == "Too many large pastes"
        assert "ERRKB_LARGE_PASTES_IN_FLIGHT_BYTES" in refused.json()["detail"]
        assert other.post("/api/match/batch", json={"texts": [LARGE]}).status_code == 503
        page = other.post("/match", data={"text": LARGE, "mode": "match"})
        assert page.status_code == 503
        assert "Too many large pastes" in page.text
        small = other.post("/api/match", content=SMALL, headers=plain)
        assert small.status_code == 200
        assert small.json()["matches"][0]["id"] == "c53f6de81577a6bc"
    in_flight.give_back(taken)
    assert in_flight.used == 0  # the refused ones left nothing taken
    matched = client.post("/api/match", content=LARGE, headers=plain)
    assert matched.status_code == 200
    assert matched.json()["matches"][0]["id"] == "c53f6de81577a6bc"
    assert client.post("/match", data={"text": LARGE, "mode": "match"}).status_code == 200
    assert client.post("/api/match/batch", json={"texts": [LARGE]}).status_code == 200
    assert in_flight.used == 0


def test_large_pastes_wait_their_turn_first_come_first() -> None:
    async def run() -> list[str]:
        in_flight = PastesInFlight(100)
        order: list[str] = []

        async def paste(name: str, size: int) -> None:
            taken = await in_flight.take(size, 5)
            assert taken is not None
            order.append(name)
            await asyncio.sleep(0.01)
            in_flight.give_back(taken)

        first = await in_flight.take(100, 0)  # the whole budget
        assert first == 100
        assert await in_flight.take(1, 0) is None  # no room: nothing taken
        waiting = [asyncio.create_task(paste(name, 60)) for name in "abc"]
        waiting.append(asyncio.create_task(paste("d", 10**9)))  # larger than the budget
        await asyncio.sleep(0.01)
        assert order == []
        in_flight.give_back(first)
        await asyncio.gather(*waiting)
        assert in_flight.used == 0
        return order

    assert asyncio.run(run()) == ["a", "b", "c", "d"]


def test_a_paste_that_goes_away_while_it_waits_takes_nothing() -> None:
    async def run() -> None:
        in_flight = PastesInFlight(100)
        first = await in_flight.take(100, 0)
        assert first is not None
        gone = asyncio.create_task(in_flight.take(50, 5))
        await asyncio.sleep(0.01)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        in_flight.give_back(first)
        assert in_flight.used == 0
        assert await in_flight.take(100, 0) == 100  # the gone one holds no room

    asyncio.run(run())


def test_no_server_wide_budget_means_no_wait() -> None:
    async def run() -> None:
        in_flight = PastesInFlight(0)
        for _ in range(3):
            assert await in_flight.take(10**9, 0) == 0

    asyncio.run(run())
