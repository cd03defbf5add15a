"""The body limits, driven at the ASGI level where a client can stop or stall mid-body: a
client gone before its body is complete reaches no handler (half a paste is neither matched
nor counted as a hit), and a body that trickles in is cut off with a 408."""

import json
import time
from collections.abc import Awaitable, Callable

import anyio

from tests.helpers.records import DATA_DIR

LINE = b"RuntimeError: Attempted to free more buffers than allocated"
Receive = Callable[[], Awaitable[dict]]


def _post(app, body_length: int, receive: Receive) -> list[dict]:
    """POST /api/match with this Content-Length and body; what the app sent back."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/match",
        "raw_path": b"/api/match",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"text/plain"),
            (b"content-length", str(body_length).encode()),
        ],
        "client": ("192.0.2.7", 40000),
        "server": ("testserver", 80),
    }
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    return sent


def _matches_run(app) -> float | None:
    return app.state.services.metrics.registry.get_sample_value("errkb_match_seconds_count")


def _chunks(*messages: dict) -> Receive:
    pending = list(messages)

    async def receive() -> dict:
        if pending:
            return pending.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return receive


def test_a_client_gone_mid_body_is_not_matched_nor_counted(make_client) -> None:
    app = make_client(DATA_DIR).app
    first_half = {"type": "http.request", "body": LINE, "more_body": True}
    sent = _post(app, 2 * len(LINE), _chunks(first_half, {"type": "http.disconnect"}))
    assert sent == []
    assert app.state.services.hits.flush() == 0
    assert _matches_run(app) == 0

    whole = {"type": "http.request", "body": LINE, "more_body": False}
    sent = _post(app, len(LINE), _chunks(whole))
    assert sent[0]["status"] == 200
    assert json.loads(sent[1]["body"])["matches"][0]["id"] == "c53f6de81577a6bc"
    assert app.state.services.hits.flush() == 1  # the test sees a counted hit when there is one
    assert _matches_run(app) == 1


def test_a_body_that_trickles_in_gets_408(make_client) -> None:
    app = make_client(DATA_DIR, body_timeout_s=0.3).app
    started = time.monotonic()
    first_bytes = {"type": "http.request", "body": LINE[:5], "more_body": True}
    sent = _post(app, len(LINE), _chunks(first_bytes))  # and nothing more, ever
    assert time.monotonic() - started < 5
    assert sent[0]["status"] == 408
    assert (b"connection", b"close") in sent[0]["headers"]
    problem = json.loads(sent[1]["body"])
    assert problem["title"] == "Request timeout"
    assert "0.3 s" in problem["detail"]
    assert app.state.services.hits.flush() == 0
