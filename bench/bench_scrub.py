"""Benchmark of the scrubbed template of an unexplained error: what the store's words cost.

Run by hand:

    .venv/bin/python bench/bench_scrub.py --database FILE [--rounds 5] [--baseline REV]

FILE is an SQLite store (the default serve's, or any harvested one; it is only read). It
prints how long reading the store's words takes (app.records.vocabulary.store_words, what
the match index does once when it loads) and how many there are; then, for the last
exception of each real paste of tests/fixtures/real_pastes (its class and message, as a
match finds them), the median time of its template the first time (scrubbed), again (kept
by a digest of the message), and as a stored template is shown. Each round scrubs every
message afresh. With --baseline, the scrubbing of that git revision (app/curation/scrub.py
as it was, which kept every word shaped like prose) is timed on the same messages in the
same run, and how many of its templates differ from this one's.
"""

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from sqlalchemy import create_engine
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.curation import scrub
from app.matching.tracebacks.parse import parse_exceptions
from app.records.vocabulary import Vocabulary, store_words
from tests.helpers.real_pastes import load_cases


def errors() -> list[tuple[str, str]]:
    """The last exception (class, message) of each real paste that has one with a class."""
    found = []
    for case in load_cases().values():
        exceptions = parse_exceptions(case["paste"])
        if exceptions and exceptions[-1].qualified_class:
            found.append((exceptions[-1].qualified_class, exceptions[-1].message))
    return found


def baseline(revision: str, folder: Path) -> ModuleType:
    """app/curation/scrub.py as it was at `revision`, loaded as a module."""
    command = ["git", "show", f"{revision}:app/curation/scrub.py"]
    path = folder / "baseline_scrub.py"
    path.write_text(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    spec = importlib.util.spec_from_file_location("baseline_scrub", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed_baseline(module: ModuleType, pasted: list[tuple[str, str]], rounds: int) -> list[float]:
    """The old scrubbing of each message afresh, `rounds` times: each one's seconds."""
    module.template_key("ValueError", "warm the secret rules up")
    took = []
    for _ in range(rounds):
        module._kept.clear()
        for error_class, message in pasted:
            started = time.perf_counter()
            module.template_key(error_class, message)
            took.append(time.perf_counter() - started)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database", type=Path, required=True, help="An SQLite store.")
    parser.add_argument("--rounds", type=int, default=5, help="Times each message is scrubbed.")
    parser.add_argument("--baseline", help="A git revision whose scrubbing to time beside.")
    args = parser.parse_args()
    engine = create_engine(f"sqlite:///{args.database}")
    readings = []
    for _ in range(3):
        with Session(engine) as session:
            started = time.perf_counter()
            words = store_words(session)
            readings.append(time.perf_counter() - started)
    vocabulary = Vocabulary(words)
    print(f"store words: {len(words):,} in {statistics.median(readings):.3f} s (median of 3)")
    pasted = errors()
    scrub.template_key("ValueError", "warm the secret rules up", vocabulary)
    first, again, shown = [], [], []
    for _ in range(args.rounds):
        scrub._kept = scrub._Kept()
        scrub._shown = scrub._Kept()
        for error_class, message in pasted:
            started = time.perf_counter()
            template = scrub.template_key(error_class, message, vocabulary)
            first.append(time.perf_counter() - started)
            started = time.perf_counter()
            scrub.template_key(error_class, message, vocabulary)
            again.append(time.perf_counter() - started)
            started = time.perf_counter()
            scrub.shown_template(template, vocabulary)
            shown.append(time.perf_counter() - started)
    print(f"{len(pasted)} real pastes' last exceptions, {args.rounds} rounds:")
    for label, seconds in (("scrubbed", first), ("again", again), ("shown", shown)):
        print(f"  {label}: median {statistics.median(seconds) * 1e6:.1f} us")
    if args.baseline:
        with tempfile.TemporaryDirectory() as folder:
            old = baseline(args.baseline, Path(folder))
            took = timed_baseline(old, pasted, args.rounds)
            differ = sum(
                old.template_key(c, m) != scrub.template_key(c, m, vocabulary) for c, m in pasted
            )
        ratio = statistics.median(first) / statistics.median(took)
        print(
            f"  {args.baseline}'s scrubbing: median {statistics.median(took) * 1e6:.1f} us "
            f"(this one {ratio:.2f}x); {differ} of {len(pasted)} templates differ"
        )


if __name__ == "__main__":
    main()
