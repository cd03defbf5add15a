"""The corpus of real pastes (tests/fixtures/real_pastes): read by the measure of
tests/test_real_pastes.py, and by tests that pin one ranking rule on a real paste.

Two sets: `dev` (the folder's own cases, which rules have been written against) and
`heldout` (its heldout/ folder: collected blind, never tuned on; heldout/README.md). Only the
measure reads the held-out set; nothing else may pin a rule on one of its cases."""

import json
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent.parent / "fixtures" / "real_pastes"
HELDOUT_DIR = CASES_DIR / "heldout"
TOP = 3  # the answers a case is asked for: top-1 and top-3 are judged on them


def load_cases(folder: Path = CASES_DIR) -> dict[str, dict[str, Any]]:
    """Every case of one set (the dev set unless `folder` is HELDOUT_DIR), by file name."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.json"))
    }


def case(name: str) -> dict[str, Any]:
    """One case, by file name."""
    return json.loads((CASES_DIR / name).read_text(encoding="utf-8"))
