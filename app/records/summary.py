"""The fields a list, a search hit or a match shows of a record."""

from app.records.service import StoredRecord
from app.wire import ApiModel


class RecordSummary(ApiModel):
    """The fields a list or a match shows of a record."""

    id: str
    repo: str
    slug: str
    error_class: str
    error_message: str
    file_path: str | None
    line_number: int | None
    severity: str
    tags: list[str]
    review_state: str


def summarize(stored: StoredRecord) -> RecordSummary:
    """The summary of a stored record."""
    record = stored.record
    return RecordSummary(
        id=stored.id,
        repo=record.repo,
        slug=record.slug,
        error_class=record.error_class,
        error_message=record.error_message,
        file_path=record.file_path,
        line_number=record.line_number,
        severity=record.severity,
        tags=record.tags,
        review_state=stored.review_state,
    )
