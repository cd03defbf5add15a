"""uvicorn's HTTP protocol (httptools) with a time limit on request headers.

uvicorn closes an idle keep-alive connection, but once a byte of a request has arrived it
waits for the rest of the headers for ever: a client sending them a byte a second (slow
loris) holds its connection, and a few thousand such clients hold every socket the process
may open. Here the headers must be complete within ERRKB_HEADER_TIMEOUT_S of the moment the
server is ready for them (the connection opened, or the previous response sent); past it the
client gets a 408 and the connection is closed (a connection that sent nothing is closed
quietly, as uvicorn closes an idle one). A request being answered is never cut: the timer
stops when its headers are complete, and the body has its own limit in the app
(app.api.limits).

`errkb serve` pins this protocol (uvicorn's `http=` option, or `--http` for its workers).
The limit comes from the app's lifespan state, so each worker process uses the one its own
app was built with.
"""

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

HEADER_TIMEOUT_STATE = "errkb.header_timeout_s"
"""The lifespan state key under which the app announces its header time limit."""
HEADER_TIMEOUT_S = 10.0  # ERRKB_HEADER_TIMEOUT_S's default, for an app that announces none
PROTOCOL_PATH = "app.ops.protocol:HeaderTimeoutProtocol"
"""The protocol as uvicorn's `--http` option names it."""
_TOO_SLOW = b"request headers took too long"
REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_SLOW), _TOO_SLOW)
)


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """HttpToolsProtocol whose connections must complete each request's headers in time."""

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
        self.headers_begun = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        self.headers_begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._stop_waiting()
        self.headers_begun = False
        super().on_headers_complete()

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
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()
