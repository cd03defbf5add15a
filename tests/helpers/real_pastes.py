"""The corpus of real pastes (tests/fixtures/real_pastes): read by the measure of
tests/test_real_pastes.py, and by tests that pin one ranking rule on a real paste."""

import json
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent.parent / "fixtures" / "real_pastes"
TOP = 3  # the answers a case is asked for: top-1 and top-3 are judged on them


def load_cases() -> dict[str, dict[str, Any]]:
    """Every case of the corpus, by file name."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(CASES_DIR.glob("*.json"))
    }


def case(name: str) -> dict[str, Any]:
    """One case, by file name."""
    return json.loads((CASES_DIR / name).read_text(encoding="utf-8"))
