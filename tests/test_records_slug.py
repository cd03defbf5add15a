"""The slug rule: the seeds' own slugs come out of their messages, and every writer uses it."""

import json

import pytest

from app.records.slug import SOURCE_CHARS, slug
from tests.helpers.records import SEED_FILES


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda path: path.stem)
def test_the_seed_records_slugs_follow_the_rule_from_their_messages(path) -> None:
    record = json.loads(path.read_text())
    assert record["slug"] == slug(record["errorMessage"])


def test_only_the_first_characters_count_and_other_runs_become_one_dash() -> None:
    assert SOURCE_CHARS == 50
    assert slug("CUDA error: out of memory (at 0x7f)") == "cuda-error-out-of-memory-at-0x7f"
    assert slug("x" * 60 + " tail") == "x" * 50
    assert slug("--Ünïcode__ only!!") == "n-code-only"
    assert slug("{}: ...") == ""
