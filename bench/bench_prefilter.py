"""The match index's literal prefilter on a real store, Hyperscan's literal compiler against
Aho–Corasick. Run by hand:

    .venv/bin/python bench/bench_prefilter.py --database ~/.cache/errkb/bench/full.db

Both literal sets of the store's index are built each way (the longest literal of each
pattern, for the prefilter; the longest and the leading one, for near matches), timed, and
checked to report the same literals at the same offsets for every real paste
(tests/fixtures/real_pastes) and every message line of them. Per paste, the prefilter's scan
is timed warm (the same paste five times, the median) and after a copy of 64 MiB of other
memory, as other requests and the other worker leave the caches under load: the cost a
server sees. Figures are medians over the pastes, with the ratio in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(ROOT))

from sqlmodel import Session  # noqa: E402

from app.config import Settings  # noqa: E402
from app.main import create_app  # noqa: E402
from app.matching import prefilter, scanned_text  # noqa: E402
from tests.helpers.real_pastes import load_cases  # noqa: E402

EVICTION = bytes(64 * 1024 * 1024)
"""Copied between two timed scans, to take the caches from the prefilter."""


def evict() -> None:
    bytearray(EVICTION)


def literal_sets(database: Path) -> dict[str, list[str]]:
    """The two literal lists of the store's index, as its engines hold them."""
    app = create_app(Settings(database_url=f"sqlite:///{database}", harvest_on_start=False))
    with Session(app.state.services.engine) as session:
        index = app.state.services.matcher.index(session)
    entries = index._entries
    longest = prefilter._ids_by_literal(entries, lambda entry: [entry.literal])
    near = prefilter._ids_by_literal(entries, lambda entry: [entry.literal, entry.head])
    return {"prefilter": list(longest), "near": list(near)}


def build(literals: list[str], hyperscan: bool) -> tuple[prefilter._LiteralSet, float]:
    prefilter.HYPERSCAN = hyperscan
    started = time.perf_counter()
    built = prefilter._LiteralSet(literals)
    return built, time.perf_counter() - started


def scan_us(literals: prefilter._LiteralSet, text: str, cold: bool) -> float:
    one_byte = scanned_text.one_byte(text)
    times = []
    for _ in range(5):
        if cold:
            evict()
        started = time.perf_counter_ns()
        literals.first_ends(text, one_byte)
        times.append((time.perf_counter_ns() - started) / 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", type=Path, required=True)
    args = parser.parse_args()
    if not prefilter.HYPERSCAN:
        raise SystemExit("the hyperscan module is not installed: nothing to compare")
    sets = literal_sets(args.database)
    pastes = [case["paste"] for case in load_cases().values()]
    lines = [line for paste in pastes for line in paste.splitlines() if ": " in line]
    print(f"\n{len(pastes)} real pastes; store {args.database.name}\n")
    print("| literals | count | build, Hyperscan | build, Aho–Corasick |")
    print("|---|---|---|---|")
    built = {}
    for name, literals in sets.items():
        fast, fast_s = build(literals, hyperscan=True)
        automaton, automaton_s = build(literals, hyperscan=False)
        prefilter.HYPERSCAN = True
        texts = pastes if name == "prefilter" else lines
        for text in texts:
            one_byte = scanned_text.one_byte(text)
            if fast.first_ends(text, one_byte) != automaton.first_ends(text, one_byte):
                raise SystemExit(f"{name}: the two scanners disagree on {text[:80]!r}")
        built[name] = (fast, automaton)
        print(f"| {name} | {len(literals)} | {fast_s:.2f} s | {automaton_s:.2f} s |")
    fast, automaton = built["prefilter"]
    print("\n| prefilter scan, a real paste | Hyperscan | Aho–Corasick | ratio |")
    print("|---|---|---|---|")
    for cold in (False, True):
        times = {
            name: statistics.median(scan_us(scanner, paste, cold) for paste in pastes)
            for name, scanner in (("hyperscan", fast), ("automaton", automaton))
        }
        ratio = times["hyperscan"] / times["automaton"]
        label = "after a 64 MiB copy" if cold else "warm"
        fast_us, automaton_us = times["hyperscan"], times["automaton"]
        print(f"| {label} | {fast_us:.0f} us | {automaton_us:.0f} us | {ratio:.2f} |")


if __name__ == "__main__":
    main()
