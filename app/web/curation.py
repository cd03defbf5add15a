"""The curator's and the operator's pages: /curate (what to explain next) and /stats (charts).

They render what /api/curation/queue and /api/stats/charts return, from the same service
functions, and link to those JSON twins.
"""

from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, PlainTextResponse

from app.curation import stats
from app.curation.queue import DEFAULT_QUEUE_PAGE, curation_queue
from app.records import service as records
from app.records.filters import RecordFilters
from app.serving.deps import (
    DaysQuery,
    QueueCursorQuery,
    RecordFiltersDep,
    ServicesDep,
    SessionDep,
)
from app.web.charts import charts, stylesheet
from app.web.routes import templates

router = APIRouter(include_in_schema=False)
CHART_STYLES_URL = "/stats/charts.css"
CHART_STYLES_MAX_AGE_S = 3600


def _json_link(url: str) -> dict[str, str]:
    return {"Link": f'<{url}>; rel="alternate"; type="application/json"'}


def _with_query(path: str, **params: str | int | None) -> str:
    query = urlencode({key: value for key, value in params.items() if value is not None})
    return f"{path}?{query}" if query else path


@router.get("/curate", response_class=HTMLResponse)
def read_curate_page(
    request: Request,
    services: ServicesDep,
    session: SessionDep,
    filters: RecordFiltersDep,
    cursor: QueueCursorQuery = None,
) -> Response:
    """The curation queue: the drafts and unexplained errors people hit most, first."""
    services.hits.flush()
    # The form's "any repository" sends repo=: an empty field is no filter.
    filters = RecordFilters.model_validate({k: v for k, v in filters.active().items() if v})
    vocabulary = services.matcher.vocabulary()
    page = curation_queue(session, vocabulary, filters, DEFAULT_QUEUE_PAGE, cursor)
    params = filters.active()
    json_url = _with_query("/api/curation/queue", **params, cursor=cursor)
    context = {
        "page": page,
        "repo": filters.repo,
        "repos": sorted(records.dataset_stats(session).per_repo),
        "json_url": json_url,
        "next_url": page.next_cursor and _with_query("/curate", **params, cursor=page.next_cursor),
    }
    return templates.TemplateResponse(request, "curate.html", context, headers=_json_link(json_url))


@router.get("/stats", response_class=HTMLResponse)
def read_stats_page(
    request: Request,
    services: ServicesDep,
    session: SessionDep,
    days: DaysQuery = stats.DEFAULT_DAYS,
) -> Response:
    """Charts of the dataset, its use, its reproducers and its drift."""
    services.hits.flush()
    overview = stats.overview(session, services.settings, services.matcher.vocabulary(), days)
    json_url = _with_query("/api/stats/charts", days=days)
    context = {
        "overview": overview,
        "charts": charts(overview),
        "days": days,
        "day_choices": (7, 30, 90, 365),
        "json_url": json_url,
        "chart_styles_url": CHART_STYLES_URL,
    }
    return templates.TemplateResponse(request, "stats.html", context, headers=_json_link(json_url))


@router.get(CHART_STYLES_URL)
def read_chart_styles() -> Response:
    """The charts' colours and fonts, served from this origin so that the page's policy,
    which refuses styles written inside the page, lets them apply."""
    return PlainTextResponse(
        stylesheet(),
        media_type="text/css",
        headers={"Cache-Control": f"public, max-age={CHART_STYLES_MAX_AGE_S}"},
    )
