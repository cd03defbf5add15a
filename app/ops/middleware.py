"""One middleware for what every request owes the operator: an id, metrics, an access log;
and the moment it arrived, which tells the store's version checks which earlier read is
still fresh enough for it (app.records.dataset_cache.ARRIVED_NS).

It sits outermost (under Starlette's own error handler), so it also sees the 413s of the
body limit; a route is labelled by its template (`/errors/{record_id}`), never by the raw
path, so the metrics keep a bounded number of series.
"""

import logging
import time

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.ops.logs import REQUEST_ID, REQUEST_ID_HEADER, request_id_from
from app.ops.metrics import Metrics
from app.records.dataset_cache import ARRIVED_NS

UNMATCHED_ROUTE = "unmatched"
access_log = logging.getLogger("app.access")


def route_label(scope: Scope) -> str:
    """The route template that answered (FastAPI puts the route in the scope), or the mount."""
    route = scope.get("route")
    if route is not None:
        return route.path
    if "app_root_path" in scope:  # a mount (/static) extends root_path by its own path
        return scope["root_path"][len(scope["app_root_path"]) :]
    return UNMATCHED_ROUTE


class RequestObserver:
    """Give each HTTP request an id (echoed as X-Request-ID), count and time it, log it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(Headers(scope=scope).get(REQUEST_ID_HEADER))
        token = REQUEST_ID.set(request_id)
        arrived = ARRIVED_NS.set(time.monotonic_ns())
        status = 500  # what the client gets if the app raises before answering

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message).append(REQUEST_ID_HEADER, request_id)
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route, method = route_label(scope), scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.request_seconds.labels(route, method).observe(seconds)
            access_log.info(
                "%s %s %s",
                method,
                scope["path"],
                status,
                extra={
                    "method": method,
                    "path": scope["path"],
                    "route": route,
                    "status": status,
                    "durationMs": round(seconds * 1000, 3),
                },
            )
            REQUEST_ID.reset(token)
            ARRIVED_NS.reset(arrived)
