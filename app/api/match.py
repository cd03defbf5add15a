"""/api/match: pasted tracebacks and logs -> the records that explain them."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from app.api.responses import json_object, problems
from app.app_error import AppError
from app.jsontext import NO_NUL
from app.matching.service import DEFAULT_MATCHES, MAX_MATCHES
from app.serving.budget import charge_paste, client_of, large_paste_turn
from app.serving.deps import ServicesDep, SessionDep, body_field, parse_body, services_of
from app.serving.matches import matches_counted, reply_to_paste
from app.wire.matching import BatchResult, MatchResult

router = APIRouter(prefix="/api/match", tags=["match"], responses=problems(413, 422, 429, 503))
MAX_BATCH_TEXTS = 100
LimitQuery = Annotated[int, Query(ge=1, le=MAX_MATCHES, description="Most matches per text.")]
_TEXT = {"type": "string", "pattern": NO_NUL}
_TEXT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": json_object({"text": _TEXT})},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}
_TEXTS_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": json_object(
                    {"texts": {"type": "array", "maxItems": MAX_BATCH_TEXTS, "items": _TEXT}}
                )
            }
        },
    }
}


async def _raw_body(request: Request) -> bytes:
    """The request body, taken from its client's paste budget (429 past it) before it is
    parsed; read here so that the handlers' work can run in a thread (a plain function, or
    app.serving.matches.reply_to_paste): matching a large log must not stall the event loop."""
    raw = await request.body()
    charge_paste(services_of(request).paste_budget, client_of(request), len(raw))
    return raw


BodyDep = Annotated[bytes, Depends(_raw_body)]


def _json(result: BaseModel) -> Response:
    """The result as JSON, serialised once: it is built and valid already, so FastAPI's
    second pass through the response model would only cost time on every paste."""
    return Response(result.model_dump_json(by_alias=True), media_type="application/json")


@router.post("", response_model=MatchResult, openapi_extra=_TEXT_BODY)
async def create_match(request: Request, limit: LimitQuery = DEFAULT_MATCHES) -> Response:
    """Match a pasted traceback, log or error line: JSON {"text": ...} or a text/plain body.

    The hottest endpoint reads its body itself rather than through a dependency (a second round
    of FastAPI's dependency solving: docs/benchmarks.md, "Costs behind the code's choices"),
    and makes and closes its session in the code that matches, sparing the event loop a
    generator dependency's exit stack."""
    raw = await _raw_body(request)
    services = services_of(request)
    is_json = request.headers.get("content-type", "").startswith("application/json")
    async with large_paste_turn(
        services.pastes_in_flight, len(raw), services.settings.match_deadline_s
    ):
        reply, hits_due = await reply_to_paste(services, raw, is_json, limit)
    response = Response(reply, media_type="application/json")
    if hits_due:  # written after the reply, in a request thread
        response.background = BackgroundTask(services.hits.flush)
    return response


@router.post("/batch", response_model=BatchResult, openapi_extra=_TEXTS_BODY)
async def create_matches(
    services: ServicesDep,
    session: SessionDep,
    raw: BodyDep,
    limit: LimitQuery = DEFAULT_MATCHES,
) -> Response:
    """Match up to 100 texts at once, together no larger than one paste: {"texts": [...]} ->
    one result per text, in order (none for none)."""

    def match() -> Response:
        texts = body_field(parse_body(raw), "texts", list)
        if len(texts) > MAX_BATCH_TEXTS:
            raise AppError(422, "Invalid batch", f"send at most {MAX_BATCH_TEXTS} texts")
        if not all(isinstance(text, str) for text in texts):
            raise AppError(422, "Invalid batch", "every item of 'texts' must be a string")
        return _json(BatchResult(results=matches_counted(services, session, texts, limit)))

    async with large_paste_turn(
        services.pastes_in_flight, len(raw), services.settings.match_deadline_s
    ):
        return await run_in_threadpool(match)
