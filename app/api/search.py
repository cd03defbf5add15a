"""/api/search: full-text search over the records, ranked, with marked snippets."""

from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.api.responses import problems
from app.records import service as records
from app.records.summary import RecordSummary, summarize
from app.search import service as search
from app.search.highlight import Marked
from app.search.query import MAX_QUERY_LENGTH
from app.serving.deps import CursorQuery, RecordFiltersDep, ServicesDep, SessionDep
from app.wire import ApiModel

router = APIRouter(prefix="/api/search", tags=["search"], responses=problems(400, 422, 503))


class MarkedText(ApiModel):
    """A text and the [start, end) character spans of it that the query matched."""

    text: str
    marks: list[tuple[int, int]]


class SearchHitOut(ApiModel):
    """One record found; `matchedBy` is matcher, reviewed, summary, text or recent
    (see app.search.fts)."""

    record: RecordSummary
    score: float
    matched_by: str
    title: MarkedText
    snippet: MarkedText | None


class SearchPage(ApiModel):
    """GET /api/search: a page of hits, the total (a floor when not totalExact), a cursor."""

    query: str
    items: list[SearchHitOut]
    total: int
    total_exact: bool
    relaxed: bool
    next_cursor: str | None
    dataset_version: str


def _marked_out(marked: Marked | None) -> MarkedText | None:
    return None if marked is None else MarkedText(text=marked.text, marks=list(marked.marks))


def search_page(results: search.SearchResults, version: str) -> SearchPage:
    """The API shape of a page of search results."""
    items = [
        SearchHitOut(
            record=summarize(hit.record),
            score=hit.score,
            matched_by=hit.matched_by,
            title=_marked_out(hit.title),
            snippet=_marked_out(hit.snippet),
        )
        for hit in results.hits
    ]
    return SearchPage(
        query=results.query,
        items=items,
        total=results.total,
        total_exact=results.total_exact,
        relaxed=results.relaxed,
        next_cursor=results.next_cursor,
        dataset_version=version,
    )


@router.get("", response_model=SearchPage)
def read_search(
    services: ServicesDep,
    session: SessionDep,
    filters: RecordFiltersDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_LENGTH)] = "",
    limit: Annotated[int, Query(ge=1, le=search.MAX_SEARCH_LIMIT)] = search.DEFAULT_SEARCH_LIMIT,
    cursor: CursorQuery = None,
) -> Response:
    """Search the records' text; an error line also goes through the matcher, first."""
    results = search.search(
        session,
        q,
        filters,
        limit=limit,
        cursor=cursor,
        matcher=services.matcher,
    )
    page = search_page(results, records.dataset_version(session))
    # Serialized here: FastAPI would validate the finished model once more on the way out.
    return Response(page.model_dump_json(by_alias=True), media_type="application/json")
