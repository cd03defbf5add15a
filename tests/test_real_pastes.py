"""Real pastes copied verbatim from public issue threads (tests/fixtures/real_pastes), posted
as they are to /api/match over the accuracy tests' store (the current vLLM, SGLang and torch
and two older vLLM releases).

The project's other corpora are errors triggered here and reshaped by known transforms;
people paste something else (older releases, wrappers, log prefixes, cut messages), so this
corpus is the measure that counts. `pytest -s` prints top-1, top-3, no answer and confident
wrong per project and per shape, and the figures go to test-artifacts/real_pastes.json.

A case is right when the answer's record raises the case's class (or a class renamed or
refined from it) and one of its locations, in any harvested release, is the case's raising
file; a case without a known raising file is right when the record's pattern matches the
message. A case raised by third-party code (transformers, pydantic, CUDA, NCCL) is right
when nothing answers it, or nothing confident.

The cases that fail today are listed in KNOWN_MISSES with the reason, so that a regression
(a passing case that stops passing) fails the test while the misses stay visible; a known
miss that starts passing is printed so that the list can shrink.
"""

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import PROJECT_ROOT
from app.records.locations import short_class
from tests.helpers import accuracy

CASES_DIR = Path(__file__).parent / "fixtures" / "real_pastes"
ARTIFACT = PROJECT_ROOT / "test-artifacts" / "real_pastes.json"
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
SOURCE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+$")
RELEASE = re.compile(r"^[a-z][\w-]*==\d[\w.+-]*$")
# A perfect match of a specific message with agreeing context scores about 100 points
# (app/matching/rank.py); below half of that, the answer is shown as a possibility only.
CONFIDENT_SCORE = 50.0
TOP = 3
RENAMED_CLASS = re.compile(r"^exception class \S+ is a (sub|super)class of ")
WORD = re.compile(r"[A-Za-z_]{4,}")
SHARED_WORDS = 0.6  # of the fragment's words the record's pattern must hold

NOT_HARVESTED = "release not harvested: the raise site is only in an older release"
KNOWN_MISSES: dict[str, str] = {}
"""Case file -> why errkb misses it today (top-1). Shrink it as matching improves."""


def load_cases() -> dict[str, dict[str, Any]]:
    """Every case of the corpus, by file name."""
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(CASES_DIR.glob("*.json"))
    }


def test_every_case_is_well_formed() -> None:
    """The corpus keeps its format: the fragment and the class are the paste's own text."""
    cases = load_cases()
    assert len(cases) >= 100
    for name, case in cases.items():
        assert set(case) == KEYS, name
        assert SOURCE.match(case["source"]), name
        assert case["project"] in PROJECTS, name
        assert name.startswith(case["project"] + "-"), name
        assert case["shape"] in SHAPES, name
        assert case["messageFragment"], name
        assert case["messageFragment"] in case["paste"], name
        assert case["release"] is None or RELEASE.match(case["release"]), name
        assert isinstance(case["thirdParty"], bool), name
        assert case["raisingFile"] is None or case["raisingFile"].endswith(".py"), name
    assert set(KNOWN_MISSES) <= set(cases), set(KNOWN_MISSES) - set(cases)


@dataclass
class Verdict:
    """How /api/match answered one case."""

    top1: bool
    top3: bool
    answered: bool
    confident_wrong: bool
    answer: str  # the first answer's record, for the report


@dataclass
class Judge:
    """Judges answers, fetching each answered record's document once."""

    client: TestClient
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def document(self, record_id: str) -> dict[str, Any]:
        if record_id not in self.documents:
            response = self.client.get(f"/api/errors/{record_id}")
            assert response.status_code == 200, response.text
            self.documents[record_id] = response.json()
        return self.documents[record_id]

    def right(self, case: dict[str, Any], match: dict[str, Any]) -> bool:
        """The record raises the case's class at the case's raising file, and its message
        agrees with the pasted one (a file such as vllm/config.py raises dozens of
        ValueErrors)."""
        record = match["record"]
        same_class = short_class(record["errorClass"]) == short_class(case["exceptionClass"])
        if not same_class and not any(RENAMED_CLASS.match(r) for r in match["reasons"]):
            return False
        document = self.document(match["id"])
        if case["raisingFile"] is not None:
            paths = {record["filePath"]} | {loc["filePath"] for loc in document["locations"]}
            if not any(_same_file(path, case["raisingFile"]) for path in paths if path):
                return False
        return _message_agrees(document["record"].get("messagePattern"), case)

    def verdict(self, case: dict[str, Any]) -> Verdict:
        response = self.client.post(
            "/api/match", json={"text": case["paste"]}, params={"limit": TOP}
        )
        assert response.status_code == 200, response.text
        matches = response.json()["matches"][:TOP]
        confident = bool(matches) and matches[0]["score"] >= CONFIDENT_SCORE
        answer = _describe(matches[0]) if matches else "no answer"
        if case["thirdParty"]:
            return Verdict(not confident, not confident, bool(matches), confident, answer)
        hits = [self.right(case, match) for match in matches]
        top1 = hits[:1] == [True]
        return Verdict(top1, any(hits), bool(matches), confident and not top1, answer)


def _same_file(path: str, raising_file: str) -> bool:
    """A record's repository path is the case's package-relative file (SGLang's records
    carry the repository's `python/` prefix)."""
    return path == raising_file or path.endswith("/" + raising_file)


def _message_agrees(pattern: str | None, case: dict[str, Any]) -> bool:
    """Whether a record's message pattern matches the pasted message: on a line holding the
    fragment, or (for a cut, wrapped or escaped paste) by sharing most of the fragment's
    words."""
    if not pattern:
        return case["raisingFile"] is not None
    fragment = case["messageFragment"]
    for line in case["paste"].splitlines():
        if fragment in line and _pattern_finds(pattern, line):
            return True
    words = set(WORD.findall(fragment))
    literal = re.sub(r"\\(.)", r"\1", pattern)
    return not words or len({w for w in words if w in literal}) >= SHARED_WORDS * len(words)


def _pattern_finds(pattern: str, line: str) -> bool:
    """Whether a record's message pattern matches the message on a pasted line."""
    try:
        return re.search(pattern.removeprefix("^").removesuffix("$"), line) is not None
    except re.error:
        return False


def _describe(match: dict[str, Any]) -> str:
    record = match["record"]
    where = f"{record['filePath']}:{record['lineNumber']}"
    return f"{record['errorClass']} at {where} ({match['score']:.0f})"


@dataclass
class Tally:
    """One row of the report."""

    cases: int = 0
    top1: int = 0
    top3: int = 0
    no_answer: int = 0
    confident_wrong: int = 0

    def add(self, verdict: Verdict) -> None:
        self.cases += 1
        self.top1 += verdict.top1
        self.top3 += verdict.top3
        self.no_answer += not verdict.answered
        self.confident_wrong += verdict.confident_wrong

    def row(self, label: str) -> str:
        def rate(count: int) -> str:
            return f"{count:4d} {count / self.cases:6.1%}"

        return (
            f"{label:<24}{self.cases:6d}  {rate(self.top1)}  {rate(self.top3)}  "
            f"{rate(self.no_answer)}  {rate(self.confident_wrong)}"
        )


def report(cases: dict[str, dict[str, Any]], verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The rates per project, per shape and in all, with every case's answer."""
    groups: dict[str, Tally] = defaultdict(Tally)
    for name, verdict in verdicts.items():
        case = cases[name]
        kind = "third-party" if case["thirdParty"] else "errkb"
        for group in ("all", f"project {case['project']}", f"shape {case['shape']}", kind):
            groups[group].add(verdict)
    return {
        "confidentScore": CONFIDENT_SCORE,
        "groups": {group: vars(tally) for group, tally in sorted(groups.items())},
        "cases": {name: vars(verdict) for name, verdict in verdicts.items()},
        "knownMisses": dict(Counter(KNOWN_MISSES.values()).most_common()),
    }


def print_report(figures: dict[str, Any]) -> None:
    columns = ("top-1", "top-3", "no answer", "conf. wrong")
    header = f"{'':<24}{'cases':>6}" + "".join(f"  {column:>11}" for column in columns)
    print(f"\nreal pastes (confident: score >= {CONFIDENT_SCORE:.0f})\n{header}")
    for group, tally in figures["groups"].items():
        print(Tally(**tally).row(group))
    print("known misses by reason:")
    for reason, count in figures["knownMisses"].items():
        print(f"  {count:4d}  {reason}")


@pytest.mark.network  # the store harvests releases downloaded from the package index
def test_real_pastes_find_their_raise_site(harvested: accuracy.Harvested) -> None:
    pytest.importorskip("torch", reason="the store harvests the installed torch")
    cases = load_cases()
    judge = Judge(harvested.client)
    verdicts = {name: judge.verdict(case) for name, case in cases.items()}
    figures = report(cases, verdicts)
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print_report(figures)
    recovered = sorted(name for name in KNOWN_MISSES if verdicts[name].top1)
    if recovered:
        print("known misses that now pass (drop them from KNOWN_MISSES):", *recovered, sep="\n  ")
    regressions = {
        name: f"{cases[name]['exceptionClass']}: {cases[name]['messageFragment']} -> {v.answer}"
        for name, v in verdicts.items()
        if not v.top1 and name not in KNOWN_MISSES
    }
    assert regressions == {}
