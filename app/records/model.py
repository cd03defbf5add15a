# ruff: noqa: E501 (descriptions are the schema's, one line each)
"""The typed error record: generated from data/record.schema.json, do not edit.

Regenerate with `python -m app.records.codegen`; tests/test_records_model.py fails when this
file and the schema disagree. It moves to app/records/model.py with the records package.
Readers use attribute names (`record.error_message`); the wire, the files and the stored
text keep the schema's camelCase keys (`errorMessage`).
"""

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel, to_snake

_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
    r"(?:[Zz]|[+-](\d{2}):?(\d{2}))"
)


def _date_time(value: str) -> str:
    """JSON Schema's `format: date-time` (RFC 3339) as fastjsonschema checks it: a real
    calendar day (leap years too), hours to 23, minutes to 59, seconds to 60."""
    parts = _DATE_TIME.fullmatch(value)
    if parts is None:
        raise ValueError("is not a valid date-time")
    year, month, day, hour, minute, second = (int(part) for part in parts.groups()[:6])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    month_days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    offset = [int(part) for part in parts.groups()[6:] if part is not None]
    if not (
        1 <= month <= 12
        and 1 <= day <= month_days[month - 1]
        and hour <= 23
        and minute <= 59
        and second <= 60
        and (not offset or (offset[0] <= 23 and offset[1] <= 59))
    ):
        raise ValueError("is not a valid date-time")
    return value


def _unique_items(items: list[str]) -> list[str]:
    """JSON Schema's `uniqueItems: true`."""
    if len(set(items)) != len(items):
        raise ValueError("has repeated items")
    return items


ErrorType = Literal["exception", "assertion", "warning", "log"]
Severity = Literal["critical", "error", "warning", "info"]
HandlingStrategy = Literal[
    "validation", "retry", "fallback", "propagate", "cleanup", "configuration"
]

ID_PATTERN = r"^[0-9a-f]{16}$"
ID_LENGTH = 16
SCHEMA_VERSION = 2


class ErrorRecord(BaseModel):
    """One error record, schemaVersion 2: the `record` object of GET /api/errors/{id}. Every key is present; fields a record does not know are null."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        frozen=True,
        title="ErrorRecord",
    )

    id: Annotated[str, Field(pattern=ID_PATTERN)] = Field(description="16 lowercase hex digits.")
    repo: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", max_length=200)] = (
        Field(description="GitHub owner/name of the code that raises.")
    )
    slug: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=50)] = Field(
        description="The first 50 characters of errorMessage, lowercased, runs of other characters turned into '-'."
    )
    error_code: Annotated[str, Field(max_length=200)] | None
    error_message: Annotated[str, Field(min_length=1, max_length=4000)] = Field(
        description="The message, with {name} for each variable part."
    )
    message_pattern: Annotated[str, Field(min_length=1, max_length=8000)] = Field(
        description="Regex (RE2 syntax: no backreferences or lookaround) matching the full message."
    )
    error_type: ErrorType
    error_class: Annotated[
        str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$", max_length=256)
    ]
    http_status: Annotated[int, Field(ge=100, le=599)] | None
    severity: Severity
    file_path: Annotated[str, Field(min_length=1, max_length=1000)] | None
    line_number: Annotated[int, Field(ge=1, le=2147483647)] | None
    source_code: Annotated[str, Field(max_length=20000)] | None
    source_code_start: Annotated[int, Field(ge=1, le=2147483647)] | None
    source_code_end: Annotated[int, Field(ge=1, le=2147483647)] | None
    github_url: Annotated[str, Field(pattern=r"^https://github\.com/", max_length=2000)] | None
    documentation: Annotated[str, Field(max_length=20000)] | None
    trigger_scenarios: Annotated[str, Field(max_length=20000)] | None
    common_situations: Annotated[str, Field(max_length=20000)] | None
    solutions: Annotated[list[Annotated[str, Field(max_length=4000)]], Field(max_length=32)] | None
    example_fix: Annotated[str, Field(max_length=20000)] | None
    handling_strategy: HandlingStrategy | None
    validation_code: Annotated[str, Field(max_length=20000)] | None
    type_guard: Annotated[str, Field(max_length=20000)] | None
    try_catch_pattern: Annotated[str, Field(max_length=20000)] | None
    prevention_tips: (
        Annotated[list[Annotated[str, Field(max_length=4000)]], Field(max_length=32)] | None
    )
    tags: Annotated[
        list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=64)]],
        Field(max_length=32, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_unique_items),
    ]
    background_tag: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=64)] | None
    analyzed_sha: Annotated[str, Field(max_length=200)] | None
    analyzed_at: (
        Annotated[
            str,
            Field(
                pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$",
                json_schema_extra={"format": "date-time"},
            ),
            AfterValidator(_date_time),
        ]
        | None
    )
    schema_version: Literal[2]


LOGGED_TYPES: frozenset[ErrorType] = frozenset({"log", "warning"})
"""The error types of sites that log or warn rather than raise."""


def max_chars(alias: str) -> int:
    """The schema's maxLength of a string field, by its camelCase name (`errorMessage`)."""
    for constraint in ErrorRecord.model_fields[to_snake(alias)].metadata:
        if getattr(constraint, "max_length", None) is not None:
            return constraint.max_length
    raise KeyError(f"{alias} has no maxLength")


def parse_record(document: str) -> ErrorRecord:
    """The typed record of a stored or exported JSON text."""
    return ErrorRecord.model_validate_json(document)
