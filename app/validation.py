"""Validation of record documents against data/record.schema.json, the one schema (issue 2).

Import, the write API and the tests all call `record_errors`, so a record is judged the same
way wherever it comes from: JSON Schema first, then the checks a schema cannot express
(the messagePattern must run on the linear-time engines; source line bounds must agree).

The schema runs on two engines: fastjsonschema compiles it to Python and decides whether a
record is valid in ~10 us (importing 50k records must take seconds, not minutes), and only
for a record it refuses does the reference `jsonschema` explain every reason, field by field.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator

from app.config import PROJECT_ROOT
from app.matching.index import PatternError, check_pattern

SCHEMA_PATH = PROJECT_ROOT / "data" / "record.schema.json"
# `errkb curate` starts each prose field a curator must write with this (issue 13); a record
# still holding it is refused, field by field, wherever it is written.
TO_FILL = "TO FILL: "


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
    except fastjsonschema.JsonSchemaException:
        pass
    else:
        return []
    ordered = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    return [
        FieldError(".".join(str(p) for p in error.absolute_path) or "(record)", error.message)
        for error in ordered
    ]


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
    try:
        check_pattern(record["messagePattern"])
    except PatternError as error:
        errors.append(FieldError("messagePattern", str(error)))
    start, end, line = record["sourceCodeStart"], record["sourceCodeEnd"], record["lineNumber"]
    if start is not None and end is not None and start > end:
        errors.append(FieldError("sourceCodeEnd", "must not be before sourceCodeStart"))
    elif start is not None and end is not None and line is not None and not start <= line <= end:
        errors.append(FieldError("lineNumber", "must lie within sourceCodeStart..sourceCodeEnd"))
    return errors
