"""Every file in data/ passes the one schema; broken records are refused with the field."""

import copy
import json

import pytest
from jsonschema import Draft202012Validator

from app.records.validation import MAX_REASON_CHARS, SCHEMA_PATH, field_order, record_errors
from tests.helpers.records import DATA_DIR, SEED_IDS


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.parametrize("path", sorted(DATA_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_every_data_record_is_valid(path) -> None:
    record = json.loads(path.read_text())
    assert record_errors(record) == []
    assert path.stem == record["id"]
    assert list(record) == list(field_order())


def test_data_holds_the_three_seed_records() -> None:
    assert set(SEED_IDS) <= {p.stem for p in DATA_DIR.glob("*.json")}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"severity": "fatal"}, "severity"),
        ({"errorType": "oops"}, "errorType"),
        ({"handlingStrategy": "pray"}, "handlingStrategy"),
        ({"lineNumber": "285"}, "lineNumber"),
        ({"id": "XYZ"}, "id"),
        ({"unknownField": 1}, "(record)"),
        ({"schemaVersion": 3}, "schemaVersion"),
        ({"messagePattern": "(a)\\1"}, "messagePattern"),
        ({"messagePattern": "(?<=x)y"}, "messagePattern"),
        ({"messagePattern": "unbalanced ("}, "messagePattern"),
        ({"lineNumber": 400}, "lineNumber"),
        ({"tags": ["a", "a"]}, "tags"),
        # found by Schemathesis; a 216.0 slipped through and broke ranking later
        ({"sourceCodeStart": 199.0}, "sourceCodeStart"),
        ({"lineNumber": 2**31}, "lineNumber"),
        ({"messagePattern": ".*"}, "messagePattern"),
        ({"documentation": "x" * 20_001}, "documentation"),
        ({"solutions": ["x"] * 33}, "solutions"),
    ],
)
def test_invalid_records_name_the_field(seed_records, change, field) -> None:
    record = copy.deepcopy(seed_records["c53f6de81577a6bc"]) | change
    errors = record_errors(record)
    assert errors, change
    assert errors[0].field == field


def test_missing_field_is_refused(seed_records) -> None:
    record = copy.deepcopy(seed_records["b6bab2e17ae18394"])
    del record["documentation"]
    assert any("documentation" in e.reason for e in record_errors(record))


def test_non_object_is_refused() -> None:
    assert record_errors([1, 2])
    assert record_errors("text")
    assert record_errors(None)


@pytest.mark.parametrize(
    "change",
    [
        {"messagePattern": "(a)" * 2666},
        {"documentation": "y" * 1_000_000},
        {"filePath": "z" * 5000},
    ],
)
def test_reasons_do_not_repeat_the_value(seed_records, change) -> None:
    record = copy.deepcopy(seed_records["c53f6de81577a6bc"]) | change
    [error] = record_errors(record)
    assert len(error.reason) <= MAX_REASON_CHARS
    assert "limit" in error.reason or "longer than" in error.reason


@pytest.mark.parametrize(
    "pattern",
    [
        "\\n.+",
        "[^x]+",
        "\\d+",
        "\\w+\\s+\\w+",
        ".+ .+",
        "(?:ab|c)\\d+",
        "a?b?c?d?e?f",
        "(?i)[a-z]{3}x",
        "x (?P<n>(?s:.+?)) y",  # a variable part with three letters round it
    ],
)
def test_patterns_with_too_little_literal_text_are_refused(seed_records, pattern) -> None:
    record = copy.deepcopy(seed_records["c53f6de81577a6bc"]) | {"messagePattern": pattern}
    [error] = record_errors(record)
    assert error.field == "messagePattern"
    assert error.reason.startswith("too little literal text: every match holds")


@pytest.mark.parametrize(
    "pattern",
    [
        "TODO",
        "top-k (?P<top_k>(?s:.+?))",
        "axes=(?P<axes>(?s:.+?))",
        "(?:abcd|efgh)\\d+",
        "(?:ab){2}",
        "CUDA error: (?P<what>(?s:.+?))",
    ],
)
def test_patterns_with_enough_literal_text_are_kept(seed_records, pattern) -> None:
    record = copy.deepcopy(seed_records["c53f6de81577a6bc"]) | {"messagePattern": pattern}
    assert record_errors(record) == []


def test_the_write_api_refuses_a_pattern_without_literal_text(client, seed_records, auth):
    record = copy.deepcopy(seed_records["c53f6de81577a6bc"])
    record |= {"id": "00000000000000fd", "messagePattern": "[^x]+"}
    response = client.post("/api/errors", json=record, headers=auth)
    assert response.status_code == 422
    assert "too little literal text" in response.json()["detail"]
