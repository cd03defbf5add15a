"""A record on the wire: its summary in lists, search hits and matches, a page of them,
the dataset's counts, and GET /api/errors/{id}'s document with all its page shows."""

from typing import Any

from pydantic import AliasPath, Field, ValidationInfo, field_validator, model_validator

from app.records.model import ErrorRecord
from app.wire.base import ApiModel
from app.wire.explanation import Explanation
from app.wire.reproducers import DriftOut, GeneratedOut, ReproducerRunOut, project_path


def _of_record(name: str) -> Any:
    """A summary field read from the stored record's typed record (a StoredRecord keeps the
    id and review state beside it)."""
    return Field(validation_alias=AliasPath("record", name))


class RecordSummary(ApiModel):
    """The fields a list or a match shows of a record."""

    id: str
    repo: str = _of_record("repo")
    slug: str = _of_record("slug")
    error_class: str = _of_record("error_class")
    error_message: str = _of_record("error_message")
    file_path: str | None = _of_record("file_path")
    line_number: int | None = _of_record("line_number")
    severity: str = _of_record("severity")
    tags: list[str] = _of_record("tags")
    review_state: str


class RecordPage(ApiModel):
    """One page of GET /api/errors."""

    items: list[RecordSummary]
    total: int
    next_cursor: str | None
    dataset_version: str = Field(validation_alias="version")


class DatasetStats(ApiModel):
    """GET /api/stats."""

    records: int
    per_repo: dict[str, int]
    per_review_state: dict[str, int]
    dataset_version: str


class RecordLinks(ApiModel):
    """Where to find more about a record."""

    self: str
    html: str
    reproducer: str

    @model_validator(mode="before")
    @classmethod
    def _of_id(cls, value: Any) -> Any:
        """A record's links follow from its id."""
        if isinstance(value, str):
            return {
                "self": f"/api/errors/{value}",
                "html": f"/errors/{value}",
                "reproducer": f"/api/errors/{value}/reproducer",
            }
        return value


class ReviewInfo(ApiModel):
    """The state kept beside a record: reviewed or draft, where it came from, gone in."""

    state: str = Field(validation_alias="review_state")
    origin: str
    gone_in: str | None


class LocationOut(ApiModel):
    """Where the record's raise site is in one harvested release.

    `status` compares it with the record as written: `same` line, `moved` (another line or
    file), or `gone` (the release no longer raises it).
    """

    release: str
    ref: str
    file_path: str
    line_number: int | None
    function: str | None
    source_code: str | None
    source_code_start: int | None
    source_code_end: int | None
    github_url: str | None
    gone: bool
    status: str
    code_context: dict[str, Any] | None = Field(  # function, docstring, guard, callers...
        validation_alias="context"
    )

    @field_validator("status", mode="before")
    @classmethod
    def _compared(cls, status: Any, info: ValidationInfo) -> Any:
        """A Location's status is its comparison with a record: the record as written comes
        in the validation context (`model_validate(location, context={"record": record})`)."""
        return status((info.context or {})["record"]) if callable(status) else status

    @field_validator("code_context", mode="before")
    @classmethod
    def _without_explanation(cls, context: dict[str, Any] | None) -> dict[str, Any] | None:
        """The explanation is answered once, typed, beside the locations (RecordDocument)."""
        if not context:
            return context
        return {key: value for key, value in context.items() if key != "explanation"}


class HistoryOut(ApiModel):
    """The releases of one package that raise the record's message."""

    package: str
    present: list[str]
    changed_in: str | None
    text: str  # "in vllm 0.12.0–0.32.0; changed in 0.33.0"


class RelatedOut(ApiModel):
    """A record related to this one, and why (the same background, file or tags)."""

    record: RecordSummary
    reasons: list[str]


class RecordDocument(ApiModel):
    """GET /api/errors/{id}: the record exactly as stored, the dataset version, its
    location in each harvested release, the releases that raise it, links, and what its
    page shows besides: related records, its reproducer script, recent runs
    (newest first), latest drift check, and what its code says (`explanation`: the
    settings that reach the raise site, upstream's advice, the trigger, the releases that
    changed it, each with the release, file and line it was read from)."""

    record: ErrorRecord = Field(validation_alias=AliasPath("stored", "record"))
    dataset_version: str
    review: ReviewInfo = Field(validation_alias="stored")
    locations: list[LocationOut]
    history: list[HistoryOut]
    links: RecordLinks = Field(validation_alias=AliasPath("stored", "id"))
    related: list[RelatedOut]
    reproducer: str | None  # the script, relative to the project
    generated: GeneratedOut | None  # a reproducer generated from the raise site
    runs: list[ReproducerRunOut]
    drift: DriftOut | None
    explanation: Explanation | None

    @field_validator("reproducer", mode="before")
    @classmethod
    def _script(cls, reproducer: Any) -> Any:
        """A curated reproducer is shown by its script's path."""
        return project_path(getattr(reproducer, "script", reproducer))
