"""GET /api/search on the wire: a page of ranked hits with their marked text."""

from pydantic import Field

from app.wire.base import ApiModel
from app.wire.records import RecordSummary


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
    items: list[SearchHitOut] = Field(validation_alias="hits")
    total: int
    total_exact: bool
    relaxed: bool
    next_cursor: str | None
    dataset_version: str
