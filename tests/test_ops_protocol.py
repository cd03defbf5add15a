"""Request headers must arrive in time: a real `errkb serve` on 127.0.0.1, raw sockets that
trickle or stall their headers, and ordinary clients served meanwhile."""

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.served import errkb_serve

HEADER_TIMEOUT_S = 1.0
# A loaded machine's event loop fires the timer late; uvloop times it from the clock of the
# loop's last turn, so it may also fire a little early.
SLACK_S = 3.0
TRICKLE_S = 0.2
PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("header-timeout")
    with errkb_serve(folder, ERRKB_HEADER_TIMEOUT_S=str(HEADER_TIMEOUT_S)) as base:
        yield base


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=HEADER_TIMEOUT_S + SLACK_S)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_trickled_headers_are_cut_off_while_other_clients_are_served(server: str) -> None:
    served = 0
    with _connect(server) as sock, httpx.Client(base_url=server) as other:
        started = time.monotonic()
        sock.sendall(PARTIAL + b"X-Slow: ")
        while not select.select([sock], [], [], TRICKLE_S)[0]:
            assert time.monotonic() - started < HEADER_TIMEOUT_S + SLACK_S, "never cut off"
            sock.sendall(b"a")  # a byte at a time, the headers never finished
            assert other.get("/healthz").status_code == 200
            served += 1
        try:
            reply = _until_closed(sock)
        except ConnectionResetError:  # a byte crossed the server's close: closed all the same
            reply = b""
        took = time.monotonic() - started
    assert HEADER_TIMEOUT_S / 2 <= took < HEADER_TIMEOUT_S + SLACK_S
    assert reply == b"" or reply.startswith(b"HTTP/1.1 408 ")
    assert served >= 2  # others were answered while the slow client was held


def test_stalled_headers_get_a_408_and_the_connection_closed(server: str) -> None:
    with _connect(server) as sock:
        started = time.monotonic()
        sock.sendall(PARTIAL)
        reply = _until_closed(sock)
        took = time.monotonic() - started
    assert HEADER_TIMEOUT_S / 2 <= took < HEADER_TIMEOUT_S + SLACK_S
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"connection: close\r\n" in reply


def test_a_connection_that_sends_nothing_is_closed_quietly(server: str) -> None:
    with _connect(server) as sock:
        started = time.monotonic()
        reply = _until_closed(sock)
        took = time.monotonic() - started
    assert HEADER_TIMEOUT_S / 2 <= took < HEADER_TIMEOUT_S + SLACK_S
    assert reply == b""


def test_the_next_request_on_a_kept_alive_connection_has_the_same_limit(server: str) -> None:
    with _connect(server) as sock:
        sock.sendall(PARTIAL + b"\r\n")
        first = b""
        while b'"status":"ok"' not in first:  # the first answer, in full
            first += sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        sock.sendall(PARTIAL)  # a byte cancels uvicorn's keep-alive timer: only ours is left
        reply = _until_closed(sock)
        took = time.monotonic() - started
    assert took < HEADER_TIMEOUT_S + SLACK_S
    assert reply.startswith(b"HTTP/1.1 408 ")


def test_a_request_that_outlasts_the_limit_after_its_headers_is_answered(server: str) -> None:
    """The limit is on the headers: headers in pieces within it, then a body that takes
    longer than it (within the body's own limit), is an ordinary request."""
    body = b'{"text": "RuntimeError: Attempted to free more buffers than allocated"}'
    head = (
        b"POST /api/match HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    with _connect(server) as sock:
        for start in range(0, len(head), len(head) // 3 + 1):
            sock.sendall(head[start : start + len(head) // 3 + 1])
            time.sleep(HEADER_TIMEOUT_S / 5)
        time.sleep(HEADER_TIMEOUT_S * 1.5)
        sock.sendall(body)
        reply = _until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:300]
    assert b"c53f6de81577a6bc" in reply
