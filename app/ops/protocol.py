"""uvicorn's HTTP protocol (httptools) with a time limit and size limits on request heads.

Time: uvicorn closes an idle keep-alive connection, but once a byte of a request has
arrived it waits for the rest of the headers for ever: a client sending them a byte a second
(slow loris) holds its connection, and a few thousand such clients hold every socket the
process may open. Here the headers must be complete within ERRKB_HEADER_TIMEOUT_S of the
moment the server is ready for them (the connection opened, or the previous response sent);
past it the client gets a 408 and the connection is closed (a connection that sent nothing
is closed quietly, as uvicorn closes an idle one). A request being answered is never cut:
the timer stops when its headers are complete, and the body has its own limit in the app
(app.api.limits).

Size: httptools sets no bound on a head, and it joins the pieces of a header (and uvicorn those
of a URL) by concatenating bytes, so a header streamed in 64 KiB reads costs time quadratic in
its length, all of it on the event loop: one client streaming a giant header holds /healthz up
(`bench/bench_hostile.py --sections headers`). Here a request target longer than
MAX_TARGET_BYTES is answered 414, and a head (request target and header fields) over
MAX_HEAD_BYTES, or with more than MAX_HEADERS fields, 431: the fields are counted as the parser
hands them over, and the bytes of a head still incomplete as they arrive, before the parser
joins them, so no head costs more than MAX_HEAD_BYTES and one read.

A refused connection is answered and then closed after LINGER_S without reading another
byte: closed at once, with the client's unread bytes still arriving, the reset that the
kernel sends would often destroy the answer before the client read it.

`errkb serve` pins this protocol (uvicorn's `http=` option, or `--http` for its workers).
The time limit comes from the app's lifespan state, so each worker process uses the one its
own app was built with.
"""

import asyncio
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

HEADER_TIMEOUT_STATE = "errkb.header_timeout_s"
"""The lifespan state key under which the app announces its header time limit."""
HEADER_TIMEOUT_S = 10.0  # ERRKB_HEADER_TIMEOUT_S's default, for an app that announces none
PROTOCOL_PATH = "app.ops.protocol:HeaderTimeoutProtocol"
"""The protocol as uvicorn's `--http` option names it."""
MAX_TARGET_BYTES = 16 * 1024
"""Longest request target (path and query): a search query is at most a few hundred
characters (app.search.query), a paste goes in a body."""
MAX_HEAD_BYTES = 64 * 1024
"""Largest request line and headers together: a browser's cookies and a proxy's headers
take a few KiB; nginx's largest default is 32 KiB."""
MAX_HEADERS = 100
"""Most header fields in a request (gunicorn's default)."""
LINGER_S = 2.0
"""How long a refused connection stays open, unread, so its client can read the answer."""
INVALID = "Invalid HTTP request received."  # uvicorn's words
TOO_LARGE = f"request headers larger than {MAX_HEAD_BYTES} bytes"


class HeadRefused(Exception):
    """A request head past one of the limits: the status and the reason the client reads."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def refusal(status: int, reason: str) -> bytes:
    """The whole answer to a refused request: the reason as text, and the connection closed."""
    body = reason.encode("ascii")
    return STATUS_LINE[status] + (
        b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
        b"connection: close\r\n\r\n%s" % (len(body), body)
    )


REQUEST_TIMEOUT = refusal(408, "request headers took too long")


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """HttpToolsProtocol whose connections must complete each request's head in time and
    within the size limits."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.header_timeout_s = float(app_state.get(HEADER_TIMEOUT_STATE, HEADER_TIMEOUT_S))
        self.header_timer: asyncio.TimerHandle | None = None
        self.headers_begun = False  # a head is being read
        self.in_message = False  # a request is being read (its head or its body)
        self.head_bytes = 0  # bytes of the head being read, as far as counted by reads
        self.head_size = 0  # bytes of its target and fields, as far as parsed
        self.header_count = 0
        self.begun_in_read = 0  # requests begun within the read being parsed
        self.refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, with the head's bytes counted and a head past a limit refused."""
        if self.refused:
            return
        self._unset_keepalive_if_required()
        starts_outside = not self.in_message
        self.begun_in_read = 0
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as error:
            if isinstance(error.__context__, HeadRefused):
                self._refuse(refusal(error.__context__.status, error.__context__.reason))
            else:
                self.logger.warning(INVALID)
                self.send_400_response(INVALID)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if self.headers_begun:
            self._count_head(len(data), starts_outside)

    def _count_head(self, size: int, starts_outside: bool) -> None:
        """Count a read that ends inside a head. A head that began before it has all of it;
        one that began at its start, all of it too; one that began after another request's
        bytes within it is counted from the next read on (its start in this one is not
        known), so a head is refused within MAX_HEAD_BYTES and one read."""
        if self.begun_in_read == 0:
            self.head_bytes += size
        elif self.begun_in_read == 1 and starts_outside:
            self.head_bytes = size
        if self.head_bytes > MAX_HEAD_BYTES:
            self._refuse(refusal(431, TOO_LARGE))

    def on_message_begin(self) -> None:
        self.headers_begun = self.in_message = True
        self.head_bytes = self.head_size = self.header_count = 0
        self.begun_in_read += 1
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self.head_size += len(url)
        if len(self.url) > MAX_TARGET_BYTES:
            raise HeadRefused(414, f"request target longer than {MAX_TARGET_BYTES} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_count += 1
        self.head_size += len(name) + len(value) + 4  # ": " and CRLF
        if self.header_count > MAX_HEADERS:
            raise HeadRefused(431, f"more than {MAX_HEADERS} request header fields")
        if self.head_size > MAX_HEAD_BYTES:
            raise HeadRefused(431, TOO_LARGE)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._stop_waiting()
        self.headers_begun = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.in_message = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        # A pipelined request already has its headers; it is started now, not waited for.
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._await_headers()

    def _await_headers(self) -> None:
        self._stop_waiting()
        self.header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _stop_waiting(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self.header_timer = None
        if self.transport.is_closing():
            return
        if self.headers_begun:
            self._refuse(REQUEST_TIMEOUT)
        else:
            self.transport.close()

    def _refuse(self, reply: bytes) -> None:
        """Answer and stop reading: the answer is followed by the end of what this side
        sends, and the connection closed LINGER_S later (or when the client closes it)."""
        self._stop_waiting()
        self.refused = True
        self.transport.write(reply)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.pause_reading()
        self.loop.call_later(LINGER_S, self.transport.close)
