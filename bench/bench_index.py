"""Benchmark of app.matching.index against a naive loop of re.search; run by hand:

    .venv/bin/python bench/bench_index.py [--sizes 1000,10000,28000,100000] [--texts 30]

Patterns are the messages of the raise / assert / warnings.warn sites of every package installed
beside torch (about 21k), topped up to each size with variants of them (one word swapped). Each
size gets fresh 5 KB tracebacks ending in messages of its own patterns, each matched once:
"cold" ones right after the build (RE2 programs still to compile), "warm" ones after as many
others have been matched. Figures are per paste; "x naive" is the naive median over the warm
median (the naive loop takes seconds a paste at 100k, so it runs on the first 10 by default).
Build includes checking every pattern; load reads the file written by save(). Each index is
measured in a fresh process, so that its RSS growth is its own and not memory freed before.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

# the corpus helpers live with the tests
from test_matching_index import (
    SEEDS,
    Hole,
    Template,
    harvest_message_templates,
    torch_root,
    traceback_text,
)

from app.matching.index import PatternIndex

try:
    import hyperscan
except ImportError:
    hyperscan = None

CRAFTED_LINE = "Unhandled config " + "a=b (" * 600
"""3 KB on which Python's re backtracks cubically for the seed config pattern."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,28000,100000", help="pattern counts")
    parser.add_argument("--texts", type=int, default=30, help="fresh tracebacks per measure")
    parser.add_argument(
        "--naive-texts", type=int, default=10, help="of those, how many the naive loop runs on"
    )
    parser.add_argument("--measure", nargs=3, help="internal: SIZE BACKEND CORPUS in a child")
    args = parser.parse_args()
    if args.measure:
        size, backend, corpus = args.measure
        templates, texts = inputs(load_templates(Path(corpus)), int(size), args.texts)
        print(json.dumps(measure(templates, backend, *texts)))
        return

    started = time.perf_counter()
    real = harvest_message_templates(torch_root().parent)
    print(f"harvested {len(real)} messages in {time.perf_counter() - started:.0f} s\n")
    backends = ["hyperscan", "portable"] if hyperscan else ["portable"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.json"
        corpus.write_text(json.dumps([[t.key, [_part(p) for p in t.parts]] for t in real]))
        for size in map(int, args.sizes.split(",")):
            templates, (_, _, warm) = inputs(real, size, args.texts)
            naive = median(naive_loop(templates, warm[: args.naive_texts]))
            for backend in backends:
                command = [sys.executable, __file__, "--texts", str(args.texts), "--measure"]
                child = subprocess.run(
                    [*command, str(size), backend, str(corpus)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                *cells, warm_median = json.loads(child.stdout)
                ratio = f"{naive / warm_median:.0f}"
                rows.append([size, backend, *cells, f"{naive * 1e3:.0f}", ratio])
    print_table(rows)
    crafted()


def _part(part: str | Hole) -> str | list[str | None]:
    return part if isinstance(part, str) else [part.name]


def load_templates(path: Path) -> list[Template]:
    return [
        Template(key, tuple(p if isinstance(p, str) else Hole(p[0]) for p in parts))
        for key, parts in json.loads(path.read_text())
    ]


def inputs(
    real: list[Template], size: int, count: int
) -> tuple[list[Template], tuple[list[str], list[str], list[str]]]:
    """The same ``size`` patterns and fresh tracebacks (cold, warm-up, warm) in every process."""
    rng = random.Random(size)
    templates = pick(real, size, rng)
    texts = [traceback_text(rng, templates) for _ in range(3 * count)]
    return templates, (texts[0::3], texts[1::3], texts[2::3])


def pick(real: list[Template], size: int, rng: random.Random) -> list[Template]:
    """``size`` templates: the seeds, real ones, then variants of real ones."""
    chosen = SEEDS + rng.sample(real, min(size, len(real)) - len(SEEDS))
    words = [w for t in real for p in t.parts if isinstance(p, str) for w in p.split()]
    patterns = {t.pattern for t in chosen}
    while len(chosen) < size:
        base = rng.choice(real)
        parts = list(base.parts)
        at = rng.choice([i for i, p in enumerate(parts) if isinstance(p, str)])
        pieces = parts[at].split(" ")
        pieces[rng.randrange(len(pieces))] = rng.choice(words)
        parts[at] = " ".join(pieces)
        variant = Template(f"{base.key}~{len(chosen)}", tuple(parts))
        if variant.pattern not in patterns:
            patterns.add(variant.pattern)
            chosen.append(variant)
    return chosen


def naive_loop(templates: list[Template], texts: list[str]) -> list[float]:
    """What the index replaces: every pattern's re.search on the paste (compiled beforehand)."""
    compiled = [re.compile(t.pattern) for t in templates]
    return timed(lambda text: [regex.search(text) for regex in compiled], texts)


def measure(
    templates: list[Template], backend: str, cold: list[str], warm_up: list[str], warm: list[str]
) -> list[object]:
    """One row, warm median last in seconds (the parent divides by it)."""
    rss = rss_mib()
    started = time.perf_counter()
    index = PatternIndex(((t.key, t.pattern) for t in templates), backend=backend)
    build = time.perf_counter() - started
    grown = rss_mib() - rss
    assert not index.rejected, next(iter(index.rejected.items()))
    cold_times = timed(index.candidates, cold)
    timed(index.candidates, warm_up)
    warm_times = timed(index.candidates, warm)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index.bin"
        index.save(path, "bench")
        del index  # start-up: the loaded index is alone
        gc.collect()
        started = time.perf_counter()
        loaded = PatternIndex.load(path, "bench", backend=backend)
        load = time.perf_counter() - started
        assert loaded is not None
        assert len(loaded) == len(templates)
        size_mib = path.stat().st_size / 2**20
    return [
        f"{build:.1f}",
        f"{load:.2f}",
        f"{size_mib:.0f}",
        f"{grown:.0f}",
        *(f"{v * 1e3:.2f}" for v in (median(cold_times), p95(cold_times), median(warm_times))),
        f"{p95(warm_times) * 1e3:.2f}",
        median(warm_times),
    ]


def crafted() -> None:
    """Python's re against the index on a line made to backtrack."""
    index = PatternIndex((t.key, t.pattern) for t in SEEDS)  # the default backend
    started = time.perf_counter()
    index.candidates(CRAFTED_LINE)
    index.match("unhandled-config", CRAFTED_LINE)
    ours = time.perf_counter() - started
    started = time.perf_counter()
    re.search(SEEDS[2].pattern, CRAFTED_LINE)
    theirs = time.perf_counter() - started
    print(f"\ncrafted {len(CRAFTED_LINE)}-char line, pattern {SEEDS[2].pattern!r}:")
    print(f"  index candidates + match {ours * 1e3:.2f} ms; re.search {theirs:.2f} s")


def timed(run: Callable[[str], object], texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        run(text)
        times.append(time.perf_counter() - started)
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def rss_mib() -> float:
    gc.collect()
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


HEADER = [
    "patterns",
    "backend",
    "build s",
    "load s",
    "file MiB",
    "RSS +MiB",
    "cold med ms",
    "cold p95",
    "warm med ms",
    "warm p95",
    "naive ms",
    "x naive",
]


def print_table(rows: list[list[object]]) -> None:
    widths = [max(len(str(row[i])) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    for row in [HEADER, *rows]:
        print("  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
