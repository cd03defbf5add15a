"""A request-body size and time limit that answers 413 or 408 before a body is parsed.

The middleware reads the body itself, up to one byte past the limit, and only then hands it
to the app: a chunked body has no Content-Length to check, and an error raised while the
framework reads the body would be reported as a parse error (400) instead of a 413. A body
must arrive within its time limit (ERRKB_BODY_TIMEOUT_S), so a client trickling it byte by
byte holds nothing for long; a client that goes away before its body is complete reaches no
handler, so half a paste is never matched nor counted as a hit.
"""

import json
from collections.abc import Callable

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.app_error import PROBLEM_MEDIA, AppError


class BodySizeLimit:
    """Refuse request bodies larger than `limit_for(path)` bytes with a 413 JSON error, and
    those that take longer than `timeout_s` to arrive with a 408."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int], timeout_s: float) -> None:
        self.app = app
        self.limit_for = limit_for
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        headers = dict(scope["headers"])
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            detail = f"request body is larger than {limit} bytes"
            await _send_error(send, AppError(413, "Payload too large", detail), scope["path"])
            return
        if length in (b"", b"0") and b"transfer-encoding" not in headers:
            # No body to wait for (a GET, mostly): the time limit's cancel scope and the
            # replay would be a large share of what such a request costs the server
            # (docs/benchmarks.md, "Costs behind the code's choices").
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.timeout_s) as waiting:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # gone before its body was complete: nothing to answer
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                if size > limit:
                    detail = f"request body is larger than {limit} bytes"
                    error = AppError(413, "Payload too large", detail)
                    await _send_error(send, error, scope["path"])
                    return
                if not message.get("more_body", False):
                    break
        if waiting.cancelled_caught:
            detail = f"the request body did not arrive within {self.timeout_s:g} s"
            await _send_error(send, AppError(408, "Request timeout", detail), scope["path"])
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


async def _send_error(send: Send, error: AppError, path: str) -> None:
    body = json.dumps(error.body(path))
    headers = [(b"content-type", PROBLEM_MEDIA.encode())]
    if error.status == 408:  # the connection holds an unread body: close it
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
