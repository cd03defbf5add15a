"""/api/curation/queue: what to explain next, most-hit first."""

from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query

from app.api.responses import problems
from app.curation.queue import DEFAULT_QUEUE_PAGE, MAX_QUEUE_PAGE, QueueItem, curation_queue
from app.records.summary import RecordSummary, summarize
from app.serving.deps import QueueCursorQuery, RecordFiltersDep, ServicesDep, SessionDep
from app.wire import ApiModel

router = APIRouter(prefix="/api/curation", tags=["curation"], responses=problems(400, 422))


class QueueItemOut(ApiModel):
    """A draft (`record`) or an unexplained error's scrubbed template (`template`)."""

    id: str
    hits: int
    last_hit: date
    review_state: str
    record: RecordSummary | None
    template: str | None


class QueuePageOut(ApiModel):
    """One page of the curation queue."""

    items: list[QueueItemOut]
    total: int
    next_cursor: str | None


def queue_item_out(item: QueueItem) -> QueueItemOut:
    """The API shape of a queue item."""
    return QueueItemOut(
        id=item.id,
        hits=item.hits,
        last_hit=item.last_hit,
        review_state=item.review_state,
        record=summarize(item.record) if item.record else None,
        template=item.template,
    )


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
    return QueuePageOut(
        items=[queue_item_out(item) for item in page.items],
        total=page.total,
        next_cursor=page.next_cursor,
    )
