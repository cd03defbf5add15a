"""HEAD on every GET route: HEAD is GET without the body (RFC 9110), which FastAPI's routes
do not answer on their own (405), so a load balancer's `HEAD /healthz` or a link checker's
`HEAD /errors/...` failed."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
