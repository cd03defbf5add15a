"""The corpus of real pastes (tests/fixtures/real_pastes): read by the measure of
tests/test_real_pastes.py, and by tests that pin one ranking rule on a real paste; its format
(`assert_well_formed`) is also that of the errors app/reproducers/native_capture.py triggers.

Two sets: `dev` (the folder's own cases, which rules have been written against) and
`heldout` (its heldout/ folder: collected blind, never tuned on; heldout/README.md). Only the
measure reads the held-out set; nothing else may pin a rule on one of its cases."""

import json
import re
from pathlib import Path
from typing import Any

CASES_DIR = Path(__file__).parent.parent / "fixtures" / "real_pastes"
HELDOUT_DIR = CASES_DIR / "heldout"
TOP = 3  # the answers a case is asked for: top-1 and top-3 are judged on them


ERRATA = HELDOUT_DIR / "errata.jsonl"


def load_cases(folder: Path = CASES_DIR) -> dict[str, dict[str, Any]]:
    """Every case of one set (the dev set unless `folder` is HELDOUT_DIR), by file name, with
    the set's errata applied."""
    cases = {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.json"))
    }
    errata = folder / ERRATA.name
    for correction in load_errata(errata) if errata.is_file() else []:
        for name in correction["cases"]:
            cases[name] = cases[name] | {correction["key"]: correction["is"]}
    return cases


def load_errata(path: Path = ERRATA) -> list[dict[str, Any]]:
    """A set's corrections of labels its cases' own release files show wrong, one JSON line
    each: `cases`, the `key` corrected, what it `was`, what it `is`, and the `evidence`. A held-
    out case is never edited (heldout/README.md), so the correction lies beside it, checked
    against the file's value."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def case(name: str) -> dict[str, Any]:
    """One case, by file name."""
    return json.loads((CASES_DIR / name).read_text(encoding="utf-8"))


PROJECTS = frozenset({"vllm", "sglang", "torch"})
SHAPES = frozenset(
    {"full-traceback", "headerless", "log-prefixed", "wrapped", "message-only", "cut"}
)
KEYS = frozenset(
    {
        "source",
        "project",
        "wrapper",
        "shape",
        "exceptionClass",
        "messageFragment",
        "raisingFile",
        "release",
        "thirdParty",
        "paste",
    }
)
OPTIONAL_KEYS = frozenset(
    {
        "raisedInNative",  # true when native code (C++, CUDA) raises it
        "logged",  # true for a line a logger or warnings.warn printed (held-out cases)
    }
)
NATIVE_FILES = (".c", ".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp", ".mm", ".rs")
SOURCE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+$")
RELEASE = re.compile(r"^[a-z][\w-]*==\d[\w.+-]*$")


def assert_well_formed(
    name: str, case: dict[str, Any], number_prefix: str = "", source: re.Pattern[str] = SOURCE
) -> None:
    """A case keeps the corpus's format: the fragment and the class are the paste's own
    text; a case native code raised may name its C++ or CUDA file, and a held-out case
    (`number_prefix` "h") may also be a logged line. `source` is the pattern of its origin:
    a thread's address, or a capture's name for the errors triggered on a GPU machine."""
    assert KEYS <= set(case) <= KEYS | OPTIONAL_KEYS, name
    assert source.match(case["source"]), name
    assert case["project"] in PROJECTS, name
    assert name.startswith(f"{case['project']}-{number_prefix}"), name
    assert case["shape"] in SHAPES, name
    assert case["messageFragment"], name
    assert case["messageFragment"] in case["paste"], name
    assert case["release"] is None or RELEASE.match(case["release"]), name
    assert isinstance(case["thirdParty"], bool), name
    assert isinstance(case.get("logged", False), bool), name
    native = NATIVE_FILES if case.get("raisedInNative") else ()
    assert case["raisingFile"] is None or case["raisingFile"].endswith((".py", *native)), name
