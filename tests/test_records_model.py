"""The typed record agrees with data/record.schema.json, the one source of truth."""

import copy
import json

import pytest
from pydantic import ValidationError

from app.records.codegen import MODEL_PATH, generate
from app.records.model import ErrorRecord, max_chars, parse_record
from app.records.validation import record_errors
from tests.helpers.records import DATA_DIR, SEEDS_DIR

SEED = "c53f6de81577a6bc"


def _model_accepts(record: object) -> bool:
    try:
        ErrorRecord.model_validate(record)
    except ValidationError:
        return False
    return True


def test_regenerating_the_model_from_the_schema_changes_nothing() -> None:
    assert generate() == MODEL_PATH.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(DATA_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_every_data_record_is_valid_under_both(path) -> None:
    text = path.read_text()
    record = parse_record(text)
    assert record_errors(json.loads(text)) == []
    assert record.id == path.stem
    assert record.model_dump() == json.loads(text)


@pytest.mark.parametrize(
    "change",
    [
        {"severity": "fatal"},
        {"errorType": "oops"},
        {"handlingStrategy": "pray"},
        {"lineNumber": "285"},
        {"lineNumber": True},
        {"lineNumber": 0},
        {"lineNumber": 2**31},
        {"httpStatus": 99},
        {"id": "XYZ"},
        {"id": SEED + "\n"},  # `$` must not pass a final newline
        {"id": SEED.upper()},
        {"unknownField": 1},
        {"schemaVersion": 3},
        {"repo": "no-slash"},
        {"repo": "a/" + "b" * 199},
        {"slug": "Upper"},
        {"slug": "a" * 51},
        {"errorCode": "x" * 201},
        {"errorMessage": ""},
        {"errorMessage": "x" * 4001},
        {"messagePattern": "x" * 8001},
        {"errorClass": "1Bad"},
        {"errorClass": "a." + "b" * 255},
        {"filePath": ""},
        {"githubUrl": "http://github.com/x"},
        {"documentation": "x" * 20_001},
        {"solutions": ["x"] * 33},
        {"solutions": ["x" * 4001]},
        {"solutions": "not a list"},
        {"preventionTips": [1]},
        {"tags": ["a", "a"]},
        {"tags": ["Bad"]},
        {"tags": None},
        {"backgroundTag": "-x"},
        {"analyzedSha": "x" * 201},
        {"analyzedAt": "yesterday"},
        {"analyzedAt": "2023-02-29T00:00:00Z"},  # not a day: format date-time
        {"analyzedAt": "2024-01-01T24:00:00Z"},
        {"analyzedAt": "2024-01-01T00:00:00+24:00"},
    ],
    ids=str,
)
def test_invalid_records_are_refused_by_both(seed_records, change) -> None:
    record = copy.deepcopy(seed_records[SEED]) | change
    assert record_errors(record), change
    assert not _model_accepts(record), change


@pytest.mark.parametrize("key", ["errorCode", "messagePattern", "tags", "analyzedAt", "id"])
def test_a_missing_key_is_refused_by_both(seed_records, key) -> None:
    record = copy.deepcopy(seed_records[SEED])
    del record[key]
    assert record_errors(record)
    assert not _model_accepts(record)


@pytest.mark.parametrize(
    "change",
    [
        {"errorCode": None, "httpStatus": None, "solutions": None, "handlingStrategy": None},
        {"analyzedAt": "2024-02-29T23:59:60.5+01:00"},  # a leap day and a leap second
        {"analyzedAt": None, "analyzedSha": None, "backgroundTag": None},
        {"tags": []},
        {"slug": "a" * 50, "errorClass": "torch.cuda.OutOfMemoryError"},
    ],
    ids=str,
)
def test_valid_edges_are_accepted_by_both(seed_records, change) -> None:
    record = copy.deepcopy(seed_records[SEED]) | change
    assert record_errors(record) == []
    assert _model_accepts(record)


def test_limits_come_from_the_schema() -> None:
    schema = json.loads((DATA_DIR.parent / "record.schema.json").read_text())
    for key in ("errorMessage", "messagePattern", "slug", "repo"):
        assert max_chars(key) == schema["properties"][key]["maxLength"]


JSON_SEEDS = sorted(p for p in SEEDS_DIR.glob("*.txt") if p.read_text().startswith("{"))


@pytest.mark.parametrize("path", JSON_SEEDS, ids=lambda p: p.stem)
def test_every_seed_record_is_valid_under_both(path) -> None:
    record = json.loads(path.read_text())["record"]
    assert record_errors(record) == []
    assert ErrorRecord.model_validate(record).model_dump() == record
