"""/api/curation/queue: what to explain next, most-hit first."""

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.responses import problems
from app.curation.queue import DEFAULT_QUEUE_PAGE, MAX_QUEUE_PAGE, curation_queue
from app.serving.deps import QueueCursorQuery, RecordFiltersDep, ServicesDep, SessionDep
from app.wire.curation import QueuePageOut

router = APIRouter(prefix="/api/curation", tags=["curation"], responses=problems(400, 422))


@router.get("/queue", response_model=QueuePageOut)
def read_queue(
    services: ServicesDep,
    session: SessionDep,
    filters: RecordFiltersDep,
    limit: Annotated[int, Query(ge=1, le=MAX_QUEUE_PAGE)] = DEFAULT_QUEUE_PAGE,
    cursor: QueueCursorQuery = None,
) -> QueuePageOut:
    """Drafts and unexplained templates people hit, most-hit first; filters keep drafts."""
    services.hits.flush()
    page = curation_queue(session, services.matcher.vocabulary(), filters, limit, cursor)
    return QueuePageOut.model_validate(page)
