"""create_app(settings) -> the FastAPI application: routers, limits and error handlers."""

import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.api import curation, errors, match, meta, reproducers, search
from app.api.limits import BodySizeLimit
from app.api.methods import HeadAsGet, allowed_methods
from app.api.responses import with_problem_details
from app.app_error import PROBLEM_MEDIA, AppError
from app.config import Settings, get_settings
from app.curation.hits import HitCounter
from app.lifecycle.follow import follow
from app.lifecycle.readiness import Readiness
from app.lifecycle.startup import LOAD_INDEX, start_up
from app.matching.matcher import Matcher
from app.ops.logs import configure_logging
from app.ops.metrics import Metrics
from app.ops.middleware import RequestObserver
from app.ops.protocol import HEADER_TIMEOUT_STATE
from app.serving.budget import PasteBudget, PastesInFlight
from app.serving.loop_turns import LoopTurns
from app.serving.replies import Replies
from app.serving.services import Services
from app.store.engine import is_lock_timeout, open_store
from app.upstreams.release_cache import Upstream
from app.web import curation as web_curation
from app.web import docs
from app.web import routes as web
from app.web.security import SecurityHeaders

JSON_ESCAPE_FACTOR = 6
LOCK_RETRY_AFTER_S = 1
GIL_SWITCH_INTERVAL_S = 0.001
"""How long a thread waits for the GIL before it asks the holder to let go (Python's default
is 5 ms). The event loop waits in turn behind every busy request thread, once per step of a
request, so a shorter wait lowers the probes' p99 under load (`pytest -m perf
tests/test_api_meta.py -k 32_clients -s`; docs/benchmarks.md, "Hostile input and hardening")."""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app on the given settings, migrating its database first."""
    settings = settings or get_settings()
    app = FastAPI(
        title="errkb",
        summary="Match ML-serving tracebacks to explained, reproduced error records.",
        version="0.1.0",
        lifespan=_start_up,
        docs_url=None,  # app.web.docs serves /docs from local files
        redoc_url=None,
        redirect_slashes=False,  # Starlette's redirect names the Host header: _slash_redirect
        # A form field may be as large as the body limit lets it be: the paste box's text is
        # then measured against the paste limit, and refused with that reason (413), not
        # by the form parser's own 1 MiB part limit with a bare 400.
        form_limits={"max_part_size": settings.max_paste_bytes * JSON_ESCAPE_FACTOR},
    )
    configure_logging(settings.log_format)
    engine = open_store(settings)
    services = Services(
        settings=settings,
        engine=engine,
        matcher=Matcher(
            engine,
            settings.cache_dir,
            settings.max_paste_bytes,
            settings.match_deadline_s,
            settings.match_concurrency,
            Upstream(settings.cache_dir).cached_root,
        ),
        metrics=Metrics(),
        readiness=Readiness([LOAD_INDEX]),
        hits=HitCounter(
            engine, settings.record_hits, templates_per_day=settings.queue_templates_per_day
        ),
        paste_budget=PasteBudget(settings.paste_budget_bytes),
        pastes_in_flight=PastesInFlight(settings.large_pastes_in_flight_bytes),
        replies=Replies(engine, settings.reply_cache_entries),
        loop_turns=LoopTurns(),
    )
    app.state.services = services  # handed out by app.serving.deps.ServicesDep
    app.add_middleware(HeadAsGet)
    app.add_middleware(
        BodySizeLimit,
        limit_for=lambda path: body_limit(settings, path),
        timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(SecurityHeaders)  # a 413 from the limit gets them too
    app.add_middleware(RequestObserver, metrics=services.metrics)  # outermost: sees the 413s
    # Each request tries the routers in this order, every route of each until one fits:
    # the hot paths first (matches, records, probes).
    app.include_router(match.router)
    app.include_router(errors.router)
    app.include_router(meta.router)
    app.include_router(search.router)
    app.include_router(reproducers.router)
    app.include_router(curation.router)
    app.include_router(docs.router)
    app.mount(docs.ASSETS_URL, StaticFiles(directory=docs.ASSETS_DIR), name="docs-assets")
    app.mount("/static", StaticFiles(directory=web.STATIC_DIR), name="static")
    app.include_router(web_curation.router)
    app.include_router(web.router)  # last: its /{owner}/{repo}/{slug} would shadow others
    _add_error_handlers(app)
    app.openapi = with_problem_details(app.openapi)  # type: ignore[method-assign]
    return app


@asynccontextmanager
async def _start_up(app: FastAPI) -> AsyncIterator[dict[str, float]]:
    """Harvest (if asked) and load the match index in a thread while the server already
    answers, /readyz saying when it is done; follow other processes' writes in
    another; write pending hits on the way out. The state yielded tells the server's
    protocol (app.ops.protocol) the header time limit."""
    services: Services = app.state.services
    settings = services.settings
    # The request threads; the database pool holds as many connections (app.config).
    to_thread.current_default_thread_limiter().total_tokens = settings.threads
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    arguments = (settings, services.engine, services.matcher, services.readiness, services.metrics)
    threading.Thread(target=start_up, args=arguments, name="errkb-start-up", daemon=True).start()
    stop = threading.Event()
    if settings.index_poll_s > 0:
        following = (services.matcher, services.engine, settings.index_poll_s, stop)
        threading.Thread(target=follow, args=following, name="errkb-follow", daemon=True).start()
    yield {HEADER_TIMEOUT_STATE: settings.header_timeout_s}
    stop.set()
    services.hits.flush()


def body_limit(settings: Settings, path: str) -> int:
    """Bytes a request body may have: pastes may be larger than records, and their JSON
    escaping (up to 6 bytes a character) must not refuse a paste within the paste limit;
    the paste itself is then measured after decoding (app.matching.service.check_paste).
    A batch is one paste cut in pieces: the same limits hold for all its texts together."""
    if path.startswith("/api/match") or path.startswith("/match"):
        return settings.max_paste_bytes * JSON_ESCAPE_FACTOR
    return settings.max_body_bytes


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api") or request.url.path in ("/healthz", "/readyz")


def error_response(request: Request, error: AppError) -> Response:
    """The error as problem details under /api, as a page elsewhere."""
    if _wants_json(request):
        return JSONResponse(
            error.body(request.url.path),
            status_code=error.status,
            headers=error.headers(),
            media_type=PROBLEM_MEDIA,
        )
    return web.error_page(request, error)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def handle_app_error(request: Request, error: AppError) -> Response:
        return error_response(request, error)

    @app.exception_handler(RequestValidationError)
    async def handle_validation_error(request: Request, error: RequestValidationError) -> Response:
        fields = [
            {
                "field": ".".join(str(part) for part in item["loc"]),
                "reason": item["msg"],
            }
            for item in error.errors()
        ]
        detail = "; ".join(f"{f['field']}: {f['reason']}" for f in fields)
        return error_response(request, AppError(422, "Invalid request", detail, fields))

    @app.exception_handler(OperationalError)
    async def handle_database_error(request: Request, error: OperationalError) -> Response:
        if not is_lock_timeout(error):
            raise error  # anything else is a bug: a 500 that stays visible
        detail = "the database is busy with other writes; retry shortly"
        busy = AppError(503, "Database busy", detail, retry_after_s=LOCK_RETRY_AFTER_S)
        return error_response(request, busy)

    @app.exception_handler(DataError)
    async def handle_data_error(request: Request, error: DataError) -> Response:
        """A value the store cannot hold, such as a NUL character or an integer beyond 32
        bits on PostgreSQL: the request's fault, not the server's."""
        reason = str(error.orig).splitlines()[0] if error.orig else "invalid value"
        detail = f"the store cannot hold a value of this request: {reason}"
        return error_response(request, AppError(422, "Invalid value", detail))

    @app.exception_handler(StarletteHTTPException)
    async def handle_http_error(request: Request, error: StarletteHTTPException) -> Response:
        if error.status_code == 404 and (redirect := _slash_redirect(request)) is not None:
            return redirect
        title = {404: "Not found", 405: "Method not allowed"}.get(error.status_code, "Error")
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = allowed_methods(request.app.router.routes, request.scope)
        answer = AppError(error.status_code, title, str(error.detail), more_headers=headers)
        return error_response(request, answer)


def _slash_redirect(request: Request) -> Response | None:
    """/api/errors/ -> /api/errors (and the other way) when only the other one is a route:
    a redirect to a relative Location, as a link on this site would be. Starlette's own
    built the absolute URL from the Host header, which the client chooses."""
    path = request.url.path
    if path == "/":
        return None
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    scope = {**request.scope, "path": other}
    if not any(route.matches(scope)[0] != Match.NONE for route in request.app.router.routes):
        return None
    query = request.url.query
    return RedirectResponse(other + (f"?{query}" if query else ""), status_code=307)
