"""/api/match: pasted tracebacks and logs -> the records that explain them."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel
from sqlmodel import Session
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from app.api.responses import json_object, problems
from app.app_error import AppError
from app.jsontext import NO_NUL
from app.matching.service import DEFAULT_MATCHES, MAX_MATCHES
from app.serving.budget import charge_paste, large_paste_turn
from app.serving.deps import SessionDep, parse_body
from app.serving.observed import match_observed, matches_counted, served
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
    app.serving.observed.served): matching a large log must not stall the event loop."""
    raw = await request.body()
    charge_paste(request, len(raw))
    return raw


BodyDep = Annotated[bytes, Depends(_raw_body)]


def _json(result: BaseModel) -> Response:
    """The result as JSON, serialised once: it is built and valid already, so FastAPI's
    second pass through the response model would only cost time on every paste."""
    return Response(result.model_dump_json(by_alias=True), media_type="application/json")


def _texts_field(body: Any, key: str, kind: type) -> Any:
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


@router.post("", response_model=MatchResult, openapi_extra=_TEXT_BODY)
async def create_match(request: Request, limit: LimitQuery = DEFAULT_MATCHES) -> Response:
    """Match a pasted traceback, log or error line: JSON {"text": ...} or a text/plain body.

    The hottest endpoint reads its body itself rather than through a dependency (a second round
    of FastAPI's dependency solving: docs/benchmarks.md, "Costs behind the code's choices"),
    and makes and closes its session in the code that matches, sparing the event loop a
    generator dependency's exit stack."""
    raw = await _raw_body(request)

    def match(waits: bool) -> tuple[Response, bool]:
        if request.headers.get("content-type", "").startswith("application/json"):
            text = _texts_field(parse_body(raw), "text", str)
        else:
            text = raw.decode("utf-8", "replace")
        with Session(request.app.state.engine) as session:
            result, due = match_observed(request, session, text, limit, waits)
        return _json(result), due

    async with large_paste_turn(request, len(raw)):
        response, hits_due = await served(request, len(raw), match)
    if hits_due:  # written after the reply, in a request thread
        response.background = BackgroundTask(request.app.state.hits.flush)
    return response


@router.post("/batch", response_model=BatchResult, openapi_extra=_TEXTS_BODY)
async def create_matches(
    request: Request, session: SessionDep, raw: BodyDep, limit: LimitQuery = DEFAULT_MATCHES
) -> Response:
    """Match up to 100 texts at once, together no larger than one paste: {"texts": [...]} ->
    one result per text, in order (none for none)."""

    def match() -> Response:
        texts = _texts_field(parse_body(raw), "texts", list)
        if len(texts) > MAX_BATCH_TEXTS:
            raise AppError(422, "Invalid batch", f"send at most {MAX_BATCH_TEXTS} texts")
        if not all(isinstance(text, str) for text in texts):
            raise AppError(422, "Invalid batch", "every item of 'texts' must be a string")
        return _json(BatchResult(results=matches_counted(request, session, texts, limit)))

    async with large_paste_turn(request, len(raw)):
        return await run_in_threadpool(match)
