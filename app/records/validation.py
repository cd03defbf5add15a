"""Validation of record documents against data/record.schema.json, the one schema.

Import, the write API and the tests all call `record_errors`, so a record is judged the same
way wherever it comes from: JSON Schema first, then the checks a schema cannot express
(the messagePattern must run on the linear-time engines and hold enough literal text to tell
one message from another; source line bounds must agree).

The schema runs on two engines: fastjsonschema compiles it to Python and decides whether a
record is valid fast enough that importing 50k records takes seconds, not minutes
(`bench/bench_api.py`; docs/benchmarks.md, "Costs behind the code's choices"), and only for a
record it refuses does the reference `jsonschema` explain every reason, field by field.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator

from app.config import PROJECT_ROOT
from app.patterns import PatternError, check_literal_text, check_pattern
from app.records.site_keys import matched_by_location

SCHEMA_PATH = PROJECT_ROOT / "data" / "record.schema.json"
# `errkb curate` starts each prose field a curator must write with this; a record
# still holding it is refused, field by field, wherever it is written.
TO_FILL = "TO FILL: "
LOCATED_NEEDS_SITE = (
    "is one named variable part (a message built at run time), so the record is found by "
    "where it raises: it needs filePath and "
    "lineNumber"
)
MAX_REASON_CHARS = 200
"""A reason says what is wrong, never repeats the value: an 8,000-character pattern or a
megabyte of prose must not come back in the 422."""

_INTEGER_FIELDS = ("httpStatus", "lineNumber", "sourceCodeStart", "sourceCodeEnd", "schemaVersion")

# Reasons by JSON Schema keyword, from the schema's value; jsonschema's own messages start
# with the instance itself.
_REASONS = {
    "maxLength": "is longer than {} characters",
    "minLength": "is shorter than {} characters",
    "maxItems": "has more than {} items",
    "minimum": "is less than {}",
    "maximum": "is more than {}",
    "pattern": "does not match the pattern {!r}",
    "type": "is not of type {}",
    "enum": "is not one of {}",
    "const": "must be {!r}",
    "format": "is not a valid {}",
    "uniqueItems": "has repeated items",
}


@dataclass(frozen=True, slots=True)
class FieldError:
    """One reason a record was refused, named by its JSON path (e.g. `lineNumber`)."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


@lru_cache
def record_schema() -> dict[str, Any]:
    """The parsed record schema."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(record_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


@lru_cache
def _fast_check() -> Callable[[Any], Any]:
    return fastjsonschema.compile(record_schema())


def _schema_errors(record: Any) -> list[FieldError]:
    try:
        _fast_check()(record)
    except fastjsonschema.JsonSchemaValueException as refusal:
        ordered = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
        if not ordered:  # jsonschema's `$` passes a final newline; it skips `format`
            return [_compiled_reason(refusal)]
    else:
        return []
    return [
        FieldError(".".join(str(p) for p in error.absolute_path) or "(record)", _reason(error))
        for error in ordered
    ]


def _compiled_reason(refusal: fastjsonschema.JsonSchemaValueException) -> FieldError:
    """The reason fastjsonschema gives, for the refusals the reference engine misses."""
    path = re.sub(r"\[(\d+)\]", r".\1", (refusal.name or "").removeprefix("data")).lstrip(".")
    field = path or "(record)"
    template = _REASONS.get(refusal.rule or "")
    value = (refusal.rule_definition if refusal.rule != "format" else "date-time") or ""
    return FieldError(field, _shortened(template.format(value) if template else refusal.message))


def _reason(error: Any) -> str:
    template = _REASONS.get(error.validator)
    return _shortened(template.format(error.validator_value) if template else error.message)


def _shortened(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


def field_order() -> tuple[str, ...]:
    """The schema's property order: the stable key order of every stored or exported record."""
    return tuple(record_schema()["properties"])


def unfilled_fields(record: Any) -> list[FieldError]:
    """The fields that still hold the TO FILL text `errkb curate` put there."""
    if not isinstance(record, dict):
        return []
    errors = []
    for key, value in record.items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and item.startswith(TO_FILL) for item in values):
            errors.append(FieldError(key, "still to fill: replace the TO FILL text"))
    return errors


def record_errors(record: Any) -> list[FieldError]:
    """Every reason `record` is not a valid record; an empty list means it is valid."""
    errors = _schema_errors(record) + unfilled_fields(record)
    if errors:
        return errors
    for key in _INTEGER_FIELDS:  # JSON Schema's "integer" takes 12.0; the code needs 12
        if isinstance(record[key], float):
            errors.append(FieldError(key, "must be written as an integer (12, not 12.0)"))
    if matched_by_location(record["messagePattern"]):
        # One variable part: a message built at run time, never matched by its text but by
        # where it raises, so the catch-all limit does not apply; the site must.
        if record["filePath"] is None or record["lineNumber"] is None:
            errors.append(FieldError("messagePattern", LOCATED_NEEDS_SITE))
    else:
        try:
            check_pattern(record["messagePattern"])
            check_literal_text(record["messagePattern"])
        except PatternError as error:
            errors.append(FieldError("messagePattern", _shortened(str(error))))
    start, end, line = record["sourceCodeStart"], record["sourceCodeEnd"], record["lineNumber"]
    if start is not None and end is not None and start > end:
        errors.append(FieldError("sourceCodeEnd", "must not be before sourceCodeStart"))
    elif start is not None and end is not None and line is not None and not start <= line <= end:
        errors.append(FieldError("lineNumber", "must lie within sourceCodeStart..sourceCodeEnd"))
    return errors
