"""One set of record filters for every listing: /api/errors, /api/search, /api/curation/queue,
their pages and the CLI, and the one SQL that applies them.

The API reads RecordFilters as a model of query parameters (its fields' aliases are the
parameter names, their descriptions the OpenAPI text, their constraints the 422s), the CLI
makes one option of each field, and every query that filters records adds
`record_condition(filters)`. Adding a filter therefore touches two places: a field here and
its condition in `record_condition`.
"""

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field, field_validator
from sqlalchemy import ColumnElement, Table, and_, select

from app.jsontext import NO_NUL
from app.store.tables import Record, RecordTag
from app.wire.base import ApiModel

# The longest value each field can hold in a valid record (data/record.schema.json): a longer
# filter can match nothing, so it is refused with the reason instead of searched for.
MAX_REPO_CHARS = 200
MAX_CLASS_CHARS = 256
MAX_TAG_CHARS = 64
MAX_WORD_CHARS = 64  # the enumerated fields: errorType, severity, handlingStrategy, reviewState


def _text(max_length: int, description: str) -> Any:
    return Field(
        None, max_length=max_length, description=description, json_schema_extra={"pattern": NO_NUL}
    )


Text = Annotated[
    str | None, Field(max_length=MAX_WORD_CHARS, json_schema_extra={"pattern": NO_NUL})
]


class RecordFilters(ApiModel):
    """Exact filters on records; a field left out (None) means any."""

    repo: str | None = _text(MAX_REPO_CHARS, "Only records of this repository (owner/name).")
    error_class: str | None = _text(MAX_CLASS_CHARS, "Only records raising this exception class.")
    error_type: Text = Field(None, description="Only exception, assertion, warning or log records.")
    severity: Text = Field(None, description="Only records of this severity (critical, error...).")
    tag: str | None = _text(MAX_TAG_CHARS, "Only records with this tag.")
    handling_strategy: Text = Field(
        None, description="Only records handled this way (validation, retry, fallback...)."
    )
    review_state: Text = Field(None, description="Only reviewed records, or only drafts.")
    modified_since: datetime | None = Field(
        None, description="Only records changed at or after this moment (ISO 8601; UTC if naive)."
    )

    @field_validator(
        "repo",
        "error_class",
        "error_type",
        "severity",
        "tag",
        "handling_strategy",
        "review_state",
    )
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        """A NUL is refused with its reason, alike on both engines."""
        if value is not None and "\x00" in value:
            raise ValueError("must not contain a NUL character (U+0000)")
        return value

    @field_validator("modified_since")
    @classmethod
    def _in_utc(cls, moment: datetime | None) -> datetime | None:
        """The moment in UTC (naive ones are UTC). One that falls outside the years datetime
        covers once in UTC (0001-01-01T00:00:00+03:00) becomes the first or last moment
        there is, which filters the same."""
        if moment is None:
            return None
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            edge = datetime.min if moment.year == datetime.min.year else datetime.max
            return edge.replace(tzinfo=UTC)

    def active(self) -> dict[str, str]:
        """The filters set, by their query parameter names: for links to the same listing."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


NO_FILTERS = RecordFilters()
# Plain tables, not ORM entities: the store's full-text queries are Core statements with text
# FROM clauses, which the ORM's compiler does not take.
RECORDS: Table = Record.__table__  # type: ignore[attr-defined]
TAGS: Table = RecordTag.__table__  # type: ignore[attr-defined]


def record_condition(filters: RecordFilters) -> ColumnElement[bool] | None:
    """The SQL condition on the records table (app.store.tables.Record) that keeps the
    records passing the filters; None when no filter is set. The one place filters become
    SQL: listing, search (app.store's full-text queries take it) and the curation queue."""
    equal = {
        RECORDS.c.repo: filters.repo,
        RECORDS.c.error_class: filters.error_class,
        RECORDS.c.error_type: filters.error_type,
        RECORDS.c.severity: filters.severity,
        RECORDS.c.handling_strategy: filters.handling_strategy,
        RECORDS.c.review_state: filters.review_state,
    }
    conditions = [column == value for column, value in equal.items() if value is not None]
    if filters.modified_since is not None:
        conditions.append(RECORDS.c.modified_at >= filters.modified_since)
    if filters.tag is not None:
        tagged = select(TAGS.c.record_id).where(TAGS.c.tag == filters.tag)
        conditions.append(RECORDS.c.id.in_(tagged))
    return and_(*conditions) if conditions else None


def filtered(statement: Any, filters: RecordFilters) -> Any:
    """A statement over the records table, narrowed to the records passing the filters."""
    condition = record_condition(filters)
    return statement if condition is None else statement.where(condition)
