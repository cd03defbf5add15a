"""app/client/text.py: the lines `errkb match` prints, for curated records of data/."""

from app.client.text import match_lines
from tests.helpers.records import curated_records


def _lines(record: dict) -> list[str]:
    """`errkb match`'s lines for one match of `record`, as the API answers it."""
    match = {"record": {**record, "reviewState": "reviewed"}, "score": 56.0, "captures": {}}
    return match_lines({"exceptions": [], "matches": [{**match, "reasons": []}]}, {})


def test_a_native_record_names_its_file_without_a_line() -> None:
    records = curated_records()
    native = records["c708be9e2bb6cbbd"]  # DDP's reducer, raised in C++: no line pinned
    assert native["lineNumber"] is None
    assert "        torch/csrc/distributed/c10d/reducer.cpp  [reviewed]" in _lines(native)


def test_a_located_record_names_its_file_and_line() -> None:
    located = curated_records()["540081589474d830"]
    assert "        torch/nn/modules/module.py:2638  [reviewed]" in _lines(located)


def test_an_exception_a_library_raised_says_so() -> None:
    exception = {
        "index": 0,
        "qualifiedClass": "SystemExit",
        "message": "error: unrecognized arguments: --enable-reasoning",
        "causeIndex": None,
        "raisedBy": "argparse",
    }
    lines = match_lines({"exceptions": [exception], "matches": []}, {})
    assert lines[0].endswith("(raised by argparse)")
