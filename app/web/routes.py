"""The web pages: home, search results, match results, record pages, the error page.

Server-rendered with Jinja2 (autoescape on), every page usable without JavaScript. Pages
call the same service functions as the JSON API (records, search, match_text, verify) and
only render what those return; each page that has a JSON
twin links to it, visibly and with `Link: rel="alternate"`.
"""

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.app_error import AppError, not_found
from app.records import locations
from app.records import service as records
from app.records.filters import NO_FILTERS, RecordFilters
from app.records.service import StoredRecord
from app.reproducers import runs
from app.search import query
from app.search import service as search
from app.serving.budget import charge_paste, client_of, large_paste_turn
from app.serving.deps import CursorQuery, RecordFiltersDep, ServicesDep, SessionDep
from app.serving.matches import match_counted
from app.serving.services import Services
from app.serving.views import count_view, record_view
from app.web import render

WEB_DIR = Path(__file__).parent
STATIC_DIR = WEB_DIR / "static"
RECENT_ON_HOME = 5
MATCHES_ON_PAGE = 10

router = APIRouter(include_in_schema=False)


def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(WEB_DIR / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals["search_url"] = render.search_url
    environment.filters["python_code"] = render.python_code
    environment.filters["source_excerpt"] = render.source_excerpt
    environment.filters["holds_on"] = runs.holds_on
    return environment


templates = Jinja2Templates(env=_environment())


def _given(**params: str | None) -> dict[str, str]:
    return {name: value for name, value in params.items() if value is not None}


def _alternate(path: str) -> dict[str, str]:
    return {"Link": f'<{path}>; rel="alternate"; type="application/json"'}


@router.get("/", response_class=HTMLResponse)
def read_home(request: Request, session: SessionDep) -> Response:
    """The one box for a query or a paste, recent records and the dataset's numbers."""
    recent = search.search(session, "", limit=RECENT_ON_HOME)
    stats = records.dataset_stats(session)
    context = {"recent": recent, "stats": stats}
    return templates.TemplateResponse(
        request, "home.html", context, headers=_alternate("/api/stats")
    )


@router.get("/search", response_class=HTMLResponse)
def read_search_page(
    request: Request,
    services: ServicesDep,
    session: SessionDep,
    filters: RecordFiltersDep,
    q: Annotated[str, Query(max_length=query.MAX_QUERY_LENGTH)] = "",
    cursor: CursorQuery = None,
) -> Response:
    """Search results: marked snippets, filters as links, pages."""
    return _search_page(request, services, session, q, filters, cursor)


def _search_page(
    request: Request,
    services: Services,
    session: Session,
    q: str,
    filters: RecordFilters,
    cursor: str | None,
) -> Response:
    results = search.search(session, q, filters, cursor=cursor, matcher=services.matcher)
    context: dict[str, Any] = {
        "results": results,
        "params": {"q": q or None, **filters.active()},
        "facets": render.page_facets(results.hits),
        "stats": records.dataset_stats(session),
        "json_url": "/api/search?"
        + urlencode({"q": q, **filters.active(), **_given(cursor=cursor)}),
    }
    headers = _alternate(context["json_url"])
    return templates.TemplateResponse(request, "search.html", context, headers=headers)


@router.post("/match", response_class=HTMLResponse)
async def create_match_page(
    request: Request,
    services: ServicesDep,
    session: SessionDep,
    text: Annotated[str, Form()] = "",
    mode: Annotated[Literal["auto", "search", "match"], Form()] = "auto",
) -> Response:
    """The home box: a paste is matched here, a query searched here. Never redirected to
    /search?q=...: what was pasted would then be in a URL, and so in access logs, the
    browser's history and a proxy's logs (a one-line paste is often a secret's line)."""
    if mode == "search" or (mode == "auto" and not query.looks_like_paste(text)):
        searched = text.strip()[: query.MAX_QUERY_LENGTH]
        return await run_in_threadpool(
            _search_page, request, services, session, searched, NO_FILTERS, None
        )
    size = len(text.encode("utf-8", "surrogatepass"))
    charge_paste(services.paste_budget, client_of(request), size)
    async with large_paste_turn(
        services.pastes_in_flight, size, services.settings.match_deadline_s
    ):
        return await run_in_threadpool(_match_page, request, services, session, text)


def _match_page(request: Request, services: Services, session: Session, text: str) -> Response:
    result = match_counted(services, session, text, MATCHES_ON_PAGE)
    matched = {m.exception_index for m in result.matches if m.exception_index is not None}
    spans = {exc.index: exc.message_spans or [exc.span] for exc in result.exceptions}
    json_url = f"/api/match?limit={MATCHES_ON_PAGE}"  # the same MatchResult, POSTed
    context = {
        "result": result,
        "pieces": render.paste_pieces(text, spans, matched),
        "exceptions": {exc.index: exc for exc in result.exceptions},
        "json_url": json_url,
    }
    headers = _alternate(json_url)
    return templates.TemplateResponse(request, "match.html", context, headers=headers)


def _record_page(
    request: Request, services: Services, session: Session, stored: StoredRecord
) -> Response:
    """The page of the same RecordView that GET /api/errors/{id} answers."""
    count_view(services.hits, services.metrics, stored.id)
    view = record_view(session, services.settings, stored)
    context: dict[str, Any] = {
        "stored": stored,
        "record": stored.record,
        "draft": stored.review_state == records.DRAFT,
        "locations": view.locations,
        "history": view.history,
        # the newest full code context: an older release's location keeps only its guard
        "code": next(
            (
                loc.context
                for loc in reversed(view.locations)
                if loc.context and "callers" in loc.context
            ),
            None,
        ),
        "related": view.related,
        "reproducer": view.reproducer,
        "generated": view.generated,
        "runs": view.runs,
        "drift": view.drift,
        "explanation": view.explanation,
        "json_url": f"/api/errors/{stored.id}",
    }
    headers = _alternate(context["json_url"])
    return templates.TemplateResponse(request, "record.html", context, headers=headers)


@router.get("/errors/{record_id}", response_class=HTMLResponse)
def read_record_page(
    request: Request, services: ServicesDep, session: SessionDep, record_id: str
) -> Response:
    """A record as a page: message, meaning, source, fixes, reproducer, related errors."""
    stored = records.get_record(session, record_id)
    if stored is None:
        target = locations.resolve_alias(session, record_id)
        if target is not None:
            return RedirectResponse(f"/errors/{target}", status_code=308)
        stored = services.matcher.statements.get(record_id)
        if stored is None:
            raise not_found(f"record {record_id}")
    return _record_page(request, services, session, stored)


@router.get("/{owner}/{repo}/{slug}", response_class=HTMLResponse)
def read_record_page_by_slug(
    request: Request, services: ServicesDep, session: SessionDep, owner: str, repo: str, slug: str
) -> Response:
    """A record page by its repo and slug, the address the seeds' pages use."""
    stored = records.get_record_by_slug(session, f"{owner}/{repo}", slug)
    if stored is None:
        raise not_found(f"record {owner}/{repo}/{slug}")
    return _record_page(request, services, session, stored)


def error_page(request: Request, error: AppError) -> Response:
    """The page of an error outside /api (404, 422, ...), from the same AppError as JSON."""
    return templates.TemplateResponse(
        request, "error.html", {"error": error}, status_code=error.status, headers=error.headers()
    )
