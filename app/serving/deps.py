"""Dependencies shared by the routers of the API and the pages, as annotated types, and the
query parameters both read alike."""

import hmac
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from anyio import CapacityLimiter, to_thread
from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from app.app_error import AppError
from app.config import Settings
from app.curation import stats
from app.jsontext import JsonTextError, parse_json
from app.records.filters import RecordFilters
from app.serving.services import Services
from app.store.engine import unit_of_work

# Dependencies that only read memory are coroutines: FastAPI runs a plain function in its
# thread pool, and each such hop costs the event loop work and a turn for the GIL.


def services_of(request: Request) -> Services:
    """The services of the app serving this request (app.serving.services): the one reader
    of app.state. A route reaches them through ServicesDep; the hottest ones, which take no
    dependency (app.api.match.create_match, /healthz), call this directly."""
    services: Services = request.app.state.services
    return services


async def get_services(request: Request) -> Services:
    """The app's services, as a dependency."""
    return services_of(request)


async def get_settings_dep(request: Request) -> Settings:
    """The settings the app was built with (tests build apps with their own)."""
    return services_of(request).settings


async def get_session(request: Request) -> AsyncIterator[Session]:
    """A database session for one request. Made on the event loop: a new session has no
    connection yet (the handler's first query takes one, in its thread), and a plain
    function would wait for a thread of the pool only to make it. Closed when the handler
    returns (scope="function" below), before the reply is sent, since a connection held until
    then is one that other request threads may be waiting for.

    Closing gives the connection back. On PostgreSQL that is a round trip, so it runs in a
    thread, outside the pool's limit, as FastAPI closes a plain generator's, so that it
    never waits for a busy pool's turn. On SQLite it is the end of a read transaction in
    this process, a few microseconds, done on the loop: the hop to a thread and back costs
    the loop more than that (docs/benchmarks.md, "Costs behind the code's choices")."""
    engine = services_of(request).engine
    session = Session(engine)
    try:
        yield session
    finally:
        if engine.dialect.name == "sqlite":
            session.close()
        else:
            await to_thread.run_sync(session.close, limiter=CapacityLimiter(1))


def get_write_session(request: Request) -> Iterator[Session]:
    """The unit of work of a request that writes (app.store.engine.unit_of_work): its
    transaction takes the write lock when it begins, and commits when the handler returns,
    before the reply is sent (scope="function" below); a handler that raises writes nothing."""
    with unit_of_work(services_of(request).engine) as session:
        yield session


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
WriteSessionDep = Annotated[Session, Depends(get_write_session, scope="function")]
_bearer = HTTPBearer(auto_error=False, description="ERRKB_ADMIN_TOKEN")


async def require_admin(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Allow a write only with `Authorization: Bearer <ERRKB_ADMIN_TOKEN>`.

    With no token configured, writes are off (403) rather than open to anyone. The token is
    compared in constant time so its prefix cannot be guessed from response times.
    """
    if not settings.admin_token:
        raise AppError(403, "Writes disabled", "set ERRKB_ADMIN_TOKEN to enable writes")
    supplied = credentials.credentials if credentials else ""
    if not hmac.compare_digest(supplied.encode(), settings.admin_token.encode()):
        raise AppError(
            401,
            "Unauthorized",
            "a valid 'Authorization: Bearer <token>' is required",
            more_headers={"WWW-Authenticate": "Bearer"},
        )


AdminDep = Annotated[None, Depends(require_admin)]


def parse_body(raw: bytes) -> Any:
    """A JSON request body; bytes that are not UTF-8 are decoded with replacement, not
    refused. Malformed, too deeply nested or absurd JSON is a 422 saying where."""
    try:
        return parse_json(raw.decode("utf-8", "replace"))
    except JsonTextError as error:
        raise AppError(422, "Invalid JSON", str(error)) from None


def body_field(body: Any, key: str, kind: type) -> Any:
    """The `key` field of a parsed JSON body (a paste's "text", a batch's "texts"), or a 422
    when the body is no object or the field is not of that kind."""
    value = body.get(key) if isinstance(body, dict) else None
    if not isinstance(value, kind):
        name = "a string" if kind is str else "a list of strings"
        raise AppError(
            422,
            "Invalid request",
            f"body must be a JSON object with {key!r}: {name}",
            [{"field": key, "reason": f"must be {name}"}],
        )
    return value


async def admin_body(request: Request, _admin: AdminDep) -> Any:
    """The JSON body of a write, read only after the token is checked: a caller without it
    learns nothing from how its body was parsed."""
    return parse_body(await request.body())


AdminBodyDep = Annotated[Any, Depends(admin_body)]


async def record_filters(filters: Annotated[RecordFilters, Query()]) -> RecordFilters:
    """The record filters of a request, one query parameter per field (repo, errorClass,
    tag...), read alike by every listing of the API and the pages. A dependency
    of its own, so the model stays the only query model of its function."""
    return filters


RecordFiltersDep = Annotated[RecordFilters, Depends(record_filters)]
MAX_CURSOR_CHARS = 64  # a listing's or a search's cursor: an id or a position
MAX_QUEUE_CURSOR_CHARS = 2048  # the curation queue's carries the scrubbed template it resumes at
CURSOR_PATTERN = "^[A-Za-z0-9_-]+$"
"""A cursor as OpenAPI describes it: URL-safe base64 without padding, what the server makes
(app.cursor); opaque, so only a nextCursor it returned is valid, any other a 400."""
_CURSOR_TEXT = (
    "Opaque: a nextCursor of an earlier page, as returned; another value of this shape is a 400."
)
CursorQuery = Annotated[
    str | None,
    Query(max_length=MAX_CURSOR_CHARS, pattern=CURSOR_PATTERN, description=_CURSOR_TEXT),
]
QueueCursorQuery = Annotated[
    str | None,
    Query(max_length=MAX_QUEUE_CURSOR_CHARS, pattern=CURSOR_PATTERN, description=_CURSOR_TEXT),
]
DaysQuery = Annotated[
    int, Query(ge=1, le=stats.MAX_DAYS, description="Days of hits to show, today included.")
]
