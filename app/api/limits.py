"""A request-body size limit that answers 413 before a huge body is parsed.

The middleware reads the body itself, up to one byte past the limit, and only then hands it
to the app: a chunked body has no Content-Length to check, and an error raised while the
framework reads the body would be reported as a parse error (400) instead of a 413.
"""

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import PROBLEM_MEDIA, AppError


class BodySizeLimit:
    """Refuse request bodies larger than `limit_for(path)` bytes with a 413 JSON error."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            await _send_413(send, limit, scope["path"])
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await _send_413(send, limit, scope["path"])
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


async def _send_413(send: Send, limit: int, path: str) -> None:
    detail = f"request body is larger than {limit} bytes"
    body = json.dumps(AppError(413, "Payload too large", detail).body(path))
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", PROBLEM_MEDIA.encode())],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})
