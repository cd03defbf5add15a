"""Request heads must arrive in time and within their size limits: a real `errkb serve` on
127.0.0.1, raw sockets that trickle, stall or stream their headers, and ordinary clients
served meanwhile."""

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.ops.protocol import MAX_HEAD_BYTES, MAX_HEADERS, MAX_TARGET_BYTES
from tests.helpers.load import GIANT_CHUNK, GIANT_START
from tests.helpers.served import errkb_serve

HEADER_TIMEOUT_S = 1.0
# A loaded machine's event loop fires the timer late; uvloop times it from the clock of the
# loop's last turn, so it may also fire a little early.
SLACK_S = 3.0
TRICKLE_S = 0.2
PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
MAX_STREAMED = 64 * 1024 * 1024  # the giant header's client gives up past this (a bound)
STREAM_S = 20.0


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


def _refused_while_streaming(sock: socket.socket, base: str) -> tuple[bytes, int, int]:
    """Stream a header value that never ends until the server answers (within STREAM_S and
    MAX_STREAMED): the answer up to the server's close, the bytes sent, /healthz answers
    meanwhile."""
    sock.setblocking(False)
    sent, served, rounds = 0, 0, 0
    started = time.monotonic()
    with httpx.Client(base_url=base) as other:
        while sent < MAX_STREAMED and time.monotonic() - started < STREAM_S:
            if rounds % 8 == 0:
                assert other.get("/healthz").status_code == 200
                served += 1
            rounds += 1
            readable, writable, _ = select.select([sock], [sock], [], 0.5)
            if readable:
                break
            if writable:  # room in the socket's buffer: some of the chunk goes
                sent += sock.send(GIANT_CHUNK)
    sock.setblocking(True)
    return _until_closed(sock), sent, served


def test_a_giant_header_is_refused_with_431_while_others_are_served(server: str) -> None:
    with _connect(server) as sock:
        sock.sendall(GIANT_START)
        reply, sent, served = _refused_while_streaming(sock, server)
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), reply[:200]
    assert b"connection: close\r\n" in reply
    assert reply.endswith(f"request headers larger than {MAX_HEAD_BYTES} bytes".encode())
    # refused while the client streamed (what it sent is mostly what the sockets' buffers
    # took in before the server stopped reading)
    assert sent < MAX_STREAMED
    assert served >= 1
    assert httpx.get(f"{server}/healthz").status_code == 200


def _exchange(base: str, request: bytes) -> bytes:
    with _connect(base) as sock:
        sock.sendall(request)
        return _until_closed(sock)


def _get(target: bytes, headers: bytes = b"") -> bytes:
    return b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n" % (target, headers)


def test_a_head_of_the_limit_is_served_and_one_byte_more_is_refused(server: str) -> None:
    # the fields counted: the target, and each name and value with ": " and CRLF
    fixed = len(b"/healthz") + len(b"Host") + len(b"x") + len(b"Connection") + len(b"close")
    filler = MAX_HEAD_BYTES - fixed - 3 * 4 - len(b"X-Fill")
    at_limit = _exchange(server, _get(b"/healthz", b"X-Fill: %s\r\n" % (b"f" * filler)))
    assert at_limit.startswith(b"HTTP/1.1 200 "), at_limit[:200]
    over = _exchange(server, _get(b"/healthz", b"X-Fill: %s\r\n" % (b"f" * (filler + 1))))
    assert over.startswith(b"HTTP/1.1 431 "), over[:200]


def test_more_header_fields_than_the_limit_are_refused(server: str) -> None:
    def fields(count: int) -> bytes:
        return b"".join(b"X-%d: v\r\n" % n for n in range(count))

    allowed = _exchange(server, _get(b"/healthz", fields(MAX_HEADERS - 2)))  # + Host, Connection
    assert allowed.startswith(b"HTTP/1.1 200 "), allowed[:200]
    refused = _exchange(server, _get(b"/healthz", fields(MAX_HEADERS - 1)))
    assert refused.startswith(b"HTTP/1.1 431 "), refused[:200]
    assert refused.endswith(f"more than {MAX_HEADERS} request header fields".encode())


def test_a_request_target_over_the_limit_is_refused_with_414(server: str) -> None:
    query = b"/healthz?q="
    allowed = _exchange(server, _get(query + b"a" * (MAX_TARGET_BYTES - len(query))))
    assert allowed.startswith(b"HTTP/1.1 200 "), allowed[:200]
    refused = _exchange(server, _get(query + b"a" * (MAX_TARGET_BYTES - len(query) + 1)))
    assert refused.startswith(b"HTTP/1.1 414 "), refused[:200]
    assert refused.endswith(f"request target longer than {MAX_TARGET_BYTES} bytes".encode())


def test_pipelined_requests_after_a_large_body_are_not_counted_as_one_head(server: str) -> None:
    """Two requests in one send: the first with a body larger than a head may be, the
    second's head after it. Both are answered."""
    body = b"a" * (MAX_HEAD_BYTES * 2)
    first = (
        b"POST /api/match HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    reply = _exchange(server, first + _get(b"/healthz"))
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]
    assert reply.count(b"HTTP/1.1 200 ") == 2, reply[-300:]
