"""HEAD on every GET route: HEAD is GET without the body (RFC 9110), which FastAPI's routes
do not answer on their own (405), so a load balancer's `HEAD /healthz` or a link checker's
`HEAD /errors/...` failed."""

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
"""The methods a 405's Allow header may name, in the order it names them."""


class HeadAsGet:
    """Answer HEAD as the GET of the same URL would, headers and all, without its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        # A copy: the server's own scope keeps HEAD, so it sends no body either.
        as_get = {**scope, "method": "GET"}
        try:
            await self.app(as_get, receive, send_head)
        finally:
            if "route" in as_get:  # the route template, for the metrics outside
                scope["route"] = as_get["route"]


def allowed_methods(routes: list[BaseRoute], scope: Scope) -> str:
    """Every method some route answers at the scope's path, for a 405's Allow header, HEAD
    wherever GET is: Starlette names those of the first route of the path only, and GET,
    PUT and DELETE of /api/errors/{id} are three routes. Each method is asked of the routes
    as a request would be (they may be routers of routes), only when a 405 is answered."""
    methods = [
        method
        for method in METHOD_ORDER
        if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)
    ]
    if "GET" in methods and "HEAD" not in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return ", ".join(methods)
