"""/api/search: full-text search over the records, ranked, with marked snippets."""

from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.api.responses import problems
from app.records import service as records
from app.search import service as search
from app.search.query import MAX_QUERY_LENGTH
from app.serving.deps import CursorQuery, RecordFiltersDep, ServicesDep, SessionDep
from app.wire.search import SearchPage

router = APIRouter(prefix="/api/search", tags=["search"], responses=problems(400, 422, 503))


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
    page = search.search_page(results, records.dataset_version(session))
    # Serialized here: FastAPI would validate the finished model once more on the way out.
    return Response(page.model_dump_json(by_alias=True), media_type="application/json")
