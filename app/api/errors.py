"""/api/errors: read, list, create, replace and delete records."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app import store
from app.api.responses import problems
from app.app_error import AppError, not_found
from app.config import Settings
from app.records import dataset_cache, locations
from app.records import service as records
from app.records.service import MAX_PAGE_SIZE
from app.serving.deps import (
    AdminBodyDep,
    AdminDep,
    CursorQuery,
    RecordFiltersDep,
    ServicesDep,
    SessionDep,
    SettingsDep,
    WriteSessionDep,
)
from app.serving.replies import Reply, etag_matches
from app.serving.services import Services
from app.serving.views import record_document_json, record_view
from app.wire.records import RecordDocument, RecordPage

router = APIRouter(prefix="/api/errors", tags=["errors"], responses=problems(422))
JSON_MEDIA = "application/json"
_DOCUMENT = {200: {"model": RecordDocument}, **problems(404)}
_WRITE_PROBLEMS = (401, 403, 413, 422, 503)


def _record_body() -> dict[str, Any]:
    """The request body of POST and PUT in OpenAPI: one record, the typed ErrorRecord that
    GET answers too (the handlers read the body themselves, after the token is checked)."""
    content = {JSON_MEDIA: {"schema": {"$ref": "#/components/schemas/ErrorRecord"}}}
    return {"requestBody": {"required": True, "content": content}}


def _document_json(session: Session, settings: Settings, stored: records.StoredRecord) -> str:
    """The record as its page shows it (app.serving.views.record_view), as JSON; the text is
    kept per dataset version and the runs and drift check it shows (written without moving
    the version), so a record read again costs its lookups and no serializing."""
    view = record_view(session, settings, stored)
    key = (
        "record json",
        stored.id,
        view.reproducer.script if view.reproducer else None,
        tuple(run.id for run in view.runs),
        view.drift.id if view.drift else None,
    )
    return dataset_cache.memo.get(
        session, view.dataset_version, key, lambda: record_document_json(view)
    )


def _document_response(
    session: Session, settings: Settings, stored: records.StoredRecord, status: int = 200
) -> Response:
    body = _document_json(session, settings, stored)
    return Response(body, status_code=status, media_type=JSON_MEDIA)


def _written_response(
    services: Services, written: Session, record_id: str, status: int
) -> Response:
    """The document of the record this request has just written, read once the write is
    committed: the document reads much of the store (related records, release history,
    all computed afresh after a write), and reading it inside the write transaction would
    hold the write turn that long, so every writer would queue behind it beside a harvest,
    whose threads share the GIL with it (`bench/bench_store.py --sections writes`)."""
    written.commit()
    with Session(services.engine) as session:
        stored = records.get_record(session, record_id)
        if stored is None:
            raise RuntimeError(f"record {record_id} was written but cannot be read back")
        return _document_response(session, services.settings, stored, status)


@router.get("", response_model=RecordPage, responses=problems(400))
def read_errors(
    session: SessionDep,
    filters: RecordFiltersDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = records.DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> RecordPage:
    """List record summaries in a stable order, filtered, with the total and a cursor."""
    page = records.list_records(session, filters, limit, cursor)
    return RecordPage.model_validate(page)


@router.get("/by-slug/{owner}/{repo}/{slug}", responses=_DOCUMENT)
def read_error_by_slug(
    session: SessionDep, settings: SettingsDep, owner: str, repo: str, slug: str
) -> Response:
    """One record by its repo and slug."""
    stored = records.get_record_by_slug(session, f"{owner}/{repo}", slug)
    if stored is None:
        raise not_found(f"record {owner}/{repo}/{slug}")
    return _document_response(session, settings, stored)


@router.get(
    "/{record_id}",
    responses=_DOCUMENT | {308: {"description": "The id of a draft that a record absorbed"}},
)
async def read_error(request: Request, services: ServicesDep, record_id: str) -> Response:
    """One record exactly as stored, with what its page shows: locations, history, related
    records, reproducer runs and drift; the id of an absorbed draft redirects to the record
    that took it. The reply is kept until the store changes (app.serving.replies): a kept one
    costs one statement and no session (a session would be a large part of its time:
    docs/benchmarks.md, "Costs behind the code's choices"); its ETag sent back in If-None-Match
    answers 304.

    Where the store is read in this process (SQLite), a kept reply is looked up on the event
    loop: that statement takes microseconds, and the hop to a request thread and back costs
    more than the rest of the request. A reply to make, or a store read over the network,
    is left to a request thread."""
    looked = store.backend(services.engine).reads_in_process
    if looked:
        reply = services.replies.kept_record(services.settings, record_id)
        if reply is not None:
            return _reply_response(request, reply)
    return await run_in_threadpool(_read_error, request, services, record_id, not looked)


def _read_error(request: Request, services: Services, record_id: str, look: bool) -> Response:
    """read_error in a request thread: the reply kept (looked for first without a session
    when `look`: the loop has not looked), or made and kept."""
    settings, replies = services.settings, services.replies
    reply = replies.kept_record(settings, record_id) if look else None
    if reply is None:
        with Session(services.engine) as session:
            reply = replies.record(
                session, settings, record_id, lambda: _stored_json(session, settings, record_id)
            )
            if reply is None:
                target = locations.resolve_alias(session, record_id)
                if target is not None:
                    return RedirectResponse(f"{router.prefix}/{target}", status_code=308)
                statement = services.matcher.statements.get(record_id)
                if statement is None:
                    raise not_found(f"record {record_id}")
                return _document_response(session, settings, statement)
    return _reply_response(request, reply)


def _reply_response(request: Request, reply: Reply) -> Response:
    headers = {"ETag": reply.etag}
    if etag_matches(request.headers.get("if-none-match"), reply.etag):
        return Response(status_code=304, headers=headers)
    return Response(reply.body, media_type=JSON_MEDIA, headers=headers)


def _stored_json(session: Session, settings: Settings, record_id: str) -> bytes | None:
    stored = records.get_record(session, record_id)
    return None if stored is None else _document_json(session, settings, stored).encode()


@router.post(
    "",
    status_code=201,
    responses={201: {"model": RecordDocument}, **problems(409, *_WRITE_PROBLEMS)},
    openapi_extra=_record_body(),
)
def create_error(services: ServicesDep, session: WriteSessionDep, record: AdminBodyDep) -> Response:
    """Create a record (admin token required); 409 if its id exists."""
    records.check_record(record)
    if records.get_record(session, record["id"]) is not None:
        raise AppError(409, "Conflict", f"record {record['id']} exists; PUT replaces it")
    records.write_records(session, [record], origin="api")
    return _written_response(services, session, record["id"], 201)


@router.put(
    "/{record_id}",
    responses={**_DOCUMENT, 201: {"model": RecordDocument}, **problems(*_WRITE_PROBLEMS)},
    openapi_extra=_record_body(),
)
def replace_error(
    services: ServicesDep,
    session: WriteSessionDep,
    record_id: str,
    record: AdminBodyDep,
) -> Response:
    """Create or replace the record with this id (admin token required)."""
    records.check_record(record)
    if record["id"] != record_id:
        raise AppError(
            422,
            "Invalid record",
            f"body id {record['id']} is not {record_id}",
            [{"field": "id", "reason": "must equal the id in the path"}],
        )
    counts = records.write_records(session, [record], origin="api")
    status = 201 if counts.created else 200
    return _written_response(services, session, record_id, status)


@router.delete("/{record_id}", status_code=204, responses=problems(404, *_WRITE_PROBLEMS))
def delete_error(session: WriteSessionDep, _admin: AdminDep, record_id: str) -> Response:
    """Delete a record (admin token required)."""
    if not records.delete_record(session, record_id):
        raise not_found(f"record {record_id}")
    return Response(status_code=204)
