"""The curation queue on the wire: GET /api/curation/queue, and the most-hit items of
/api/stats/charts."""

from datetime import date

from app.wire.base import ApiModel
from app.wire.records import RecordSummary


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
