"""Benchmark of matching on the harvested pattern set: index and service, against naive re.

Run by hand, on a database made by `bench/bench_harvest.py --keep FILE` (vLLM 0.33.0,
SGLang 0.5.23 and torch drafts plus data/):

    .venv/bin/python bench/bench_match.py --database FILE

For 1k, 10k, all harvested patterns and 100k (the harvested ones plus variants with one
word changed), it builds the index (time, memory), then matches fresh 5 KB tracebacks, each
once (a lazily built automaton looks fast on repeated input only): cold = the first paste
after the build, warm = the rest; and in the same run a naive loop of re.search over every
pattern. Then, on the full set through real HTTP (uvicorn on 127.0.0.1): start-up with a
cached index, the first request, POST /api/match on fresh tracebacks, a 5 KB traceback that
matches nothing, a 1 MB log with several tracebacks, and crafted backtracking lines.
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.matching.index import PatternIndex
from app.matching.partial import second_chance
from app.matching.tracebacks.parse import parse_exceptions
from app.records import site_keys
from app.store.engine import open_store
from app.store.tables import Record
from bench.server import running_server

PLACEHOLDER = re.compile(r"\{[^{}]*\}")
TRACEBACK_BYTES = 5_000
LOG_BYTES = 1_000_000
FRESH_TEXTS = 30
NAIVE_TEXTS = 5
NAIVE_BUDGET_S = 60.0
CRAFTED = {
    "config (.+?)=(.+?) \\((.+?)\\)": "Unhandled config " + "a=b (" * 600,
    "repeated words": "expected " + "x, got " * 430,
    "long line, no newline": "RuntimeError: " + "tensor([0., 1.]) " * 180,
}
LOG_LINE = "INFO 08-14 12:00:{s:02d} [metrics.py:{n}] Avg prompt throughput: {n} tokens/s"


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def load(database: Path) -> list[tuple[str, str, str, str, str]]:
    """The records matched by message, as the Matcher indexes them (those found only by
    their raise site, never enter the message index)."""
    engine = open_store(Settings(database_url=f"sqlite:///{database}"))
    with Session(engine) as session:
        columns = (
            Record.id,
            Record.message_pattern,
            Record.error_message,
            Record.error_class,
            Record.file_path,
        )
        rows = session.execute(select(*columns))
        # As the service's Matcher: a fully dynamic message is found by where it
        # raises, and its one-group pattern never enters the index.
        return [tuple(row) for row in rows if not site_keys.matched_by_location(row[1])]


def variant(rng: random.Random, pattern: str, n: int) -> str:
    """A real pattern with one literal word changed: realistic, and distinct."""
    words = list(re.finditer(r"[A-Za-z]{4,}", pattern))
    if not words:
        return f"variant {n} " + pattern
    word = rng.choice(words)
    return pattern[: word.start()] + f"{word.group()}{n}" + pattern[word.end() :]


def traceback_of(rng: random.Random, message: str, error_class: str, path: str | None) -> str:
    """A realistic ~5 KB paste: log lines, frames, and the message with values filled in."""
    filled = PLACEHOLDER.sub(lambda _: str(rng.randint(1, 99999)), message)
    where = f"/usr/lib/python3.11/site-packages/{path or 'app/main.py'}"
    frames = [
        f'  File "{where}", line {rng.randint(10, 900)}, in f{i}\n    result = call_{i}(arg)\n'
        for i in range(12)
    ]
    head = "".join(LOG_LINE.format(s=i % 60, n=rng.randint(1, 9999)) + "\n" for i in range(40))
    text = head + "Traceback (most recent call last):\n" + "".join(frames)
    text += f"{error_class}: {filled}\n"
    while len(text) < TRACEBACK_BYTES:
        text = LOG_LINE.format(s=len(text) % 60, n=len(text)) + "\n" + text
    return text


def cut(text: str) -> str:
    """The paste ending two thirds into its last message."""
    body = text.rstrip("\n")
    head, _, message = body.rpartition(": ")
    return head + ": " + message[: max(24, len(message) * 2 // 3)]


def second_chance_step(index: PatternIndex, text: str) -> float:
    """Seconds of the match step on a cut paste, with the second chance that its cut
    message gets (no hit counted as a full match: the most it can cost)."""
    exceptions = parse_exceptions(text)
    started = time.perf_counter()
    index.candidates(text)
    second_chance(index, exceptions, [], len(text.rstrip()))
    return time.perf_counter() - started


def naive_loop(patterns: list[str], texts: list[str]) -> float:
    """Median ms of re.search with every pattern over each text, in a child process.

    Harvested patterns hold several lazy `(?s:.+?)` groups, on which Python's re backtracks
    for minutes over a 5 KB paste; the child is stopped after NAIVE_BUDGET_S, and then
    the budget over the texts it finished (at least one) is the floor reported.
    """
    code = (
        "import json, re, sys, time\n"
        "patterns, texts = json.load(sys.stdin)\n"
        "compiled = [re.compile(p) for p in patterns]\n"
        "for text in texts:\n"
        "    started = time.perf_counter()\n"
        "    for regex in compiled:\n"
        "        regex.search(text)\n"
        "    print(time.perf_counter() - started, flush=True)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps([patterns, texts]),
            capture_output=True,
            text=True,
            timeout=NAIVE_BUDGET_S,
        )
        seconds = [float(line) for line in done.stdout.split()]
    except subprocess.TimeoutExpired as stopped:
        finished = (stopped.stdout or b"").split()
        seconds = [float(line) for line in finished] or [NAIVE_BUDGET_S]
    return statistics.median(seconds) * 1000


def median_p95(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000


def bench_index(rows, sizes: list[int]) -> None:
    rng = random.Random(1)
    real = [(rid, pattern) for rid, pattern, *_ in rows]
    print(
        "| patterns | backend | build s | memory MiB | cold ms | warm median ms | warm p95 ms "
        "| naive median ms | x naive | cut: + second chance median / p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in sizes:
        if size <= len(real):
            chosen = rng.sample(rows, size)
            entries = [(r[0], r[1]) for r in chosen]
        else:
            chosen = list(rows)
            entries = list(real)
            for n in range(size - len(real)):
                _, pattern = real[n % len(real)]
                entries.append((f"v{n}", variant(rng, pattern, n)))
        texts = [traceback_of(rng, r[2], r[3], r[4]) for r in rng.sample(chosen, FRESH_TEXTS + 1)]
        cut_texts = [cut(text) for text in texts]
        naive_median = naive_loop([p for _, p in entries], texts[1 : 1 + NAIVE_TEXTS])
        for backend in ("hyperscan", "portable"):
            before = rss_mib()
            started = time.perf_counter()
            index = PatternIndex(entries, backend=backend)
            build = time.perf_counter() - started
            memory = rss_mib() - before
            timings = []
            for text in texts:
                started = time.perf_counter()
                index.candidates(text)
                timings.append(time.perf_counter() - started)
            warm_median, warm_p95 = median_p95(timings[1:])
            ratio = naive_median / warm_median
            cut_median, cut_p95 = median_p95([second_chance_step(index, t) for t in cut_texts])
            print(
                f"| {size} | {backend} | {build:.1f} | {memory:.0f} | {timings[0] * 1000:.2f} "
                f"| {warm_median:.3f} | {warm_p95:.3f} | {naive_median:.0f} | {ratio:.0f} "
                f"| {cut_median:.3f} / {cut_p95:.3f} |",
                flush=True,
            )
            del index


def bench_service(database: Path, rows) -> None:
    rng = random.Random(2)
    cache = database.parent / "bench-cache"
    env = {"ERRKB_DATABASE_URL": f"sqlite:///{database}", "ERRKB_CACHE_DIR": str(cache)}
    warm = subprocess.run(  # build and cache the index once, as `errkb serve` does
        [
            sys.executable,
            "-c",
            "from sqlmodel import Session; from app.config import get_settings; "
            "from app.store.engine import open_store; from app.matching.matcher import Matcher; "
            "s = get_settings(); e = open_store(s); "
            "Matcher(e, s.cache_dir, s.max_paste_bytes).index(Session(e))",
        ],
        env=os.environ | env,
        capture_output=True,
        text=True,
        check=True,
    )
    print(warm.stderr.strip().splitlines()[-1])
    load_code = (
        "import time; t=time.perf_counter(); from sqlmodel import Session; "
        "from app.config import get_settings; from app.matching.matcher import Matcher; "
        "from app.store.engine import open_store; s=get_settings(); e=open_store(s); "
        "m=Matcher(e, s.cache_dir, s.max_paste_bytes); "
        "m.index(Session(e)); print(time.perf_counter()-t)"
    )
    loads = [
        float(
            subprocess.run(
                [sys.executable, "-c", load_code],
                env=os.environ | env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(3)
    ]
    print(
        f"start-up with the cached index (import, open store, load): median "
        f"{statistics.median(loads):.2f} s"
    )
    started = time.perf_counter()
    with running_server(env) as base:
        print(f"server ready after {time.perf_counter() - started:.2f} s")
        samples = rng.sample(rows, FRESH_TEXTS + 1)
        texts = [traceback_of(rng, r[2], r[3], r[4]) for r in samples]
        with httpx.Client(base_url=base) as client:

            def post(text: str) -> float:
                started = time.perf_counter()
                response = client.post("/api/match", json={"text": text})
                assert response.status_code == 200, response.text
                return time.perf_counter() - started

            first = post(texts[0])
            print(f"first POST /api/match after start-up: {first * 1000:.1f} ms")
            timings = [post(text) for text in texts[1:]]
            median, p95 = median_p95(timings)
            print(
                f"POST /api/match, {FRESH_TEXTS} fresh 5 KB tracebacks: median {median:.2f} ms, "
                f"p95 {p95:.2f} ms"
            )
            nothing = traceback_of(rng, "zq{x} xv wq {y} jk", "ZqxError", "nowhere/zz.py")
            print(f"5 KB traceback matching nothing: {post(nothing) * 1000:.2f} ms")
            log = []
            while sum(len(t) for t in log) < LOG_BYTES:
                log.append(traceback_of(rng, *rng.choice(rows)[2:5]))
            big = "".join(log)[:LOG_BYTES]
            print(f"1 MB log with {len(log)} tracebacks: {post(big) * 1000:.1f} ms")
            for name, line in CRAFTED.items():
                print(f"crafted line ({name}, {len(line)} B): {post(line) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--sizes", default="1000,10000,all,100000")
    parser.add_argument("--service-only", action="store_true", help="skip the index table")
    parser.add_argument("--index-only", action="store_true", help="skip the service table")
    args = parser.parse_args()
    rows = load(args.database)
    sizes = [len(rows) if s == "all" else int(s) for s in args.sizes.split(",")]
    print(f"{len(rows)} patterns in {args.database}", flush=True)
    if not args.service_only:
        bench_index(rows, sizes)
    if not args.index_only:
        bench_service(args.database, rows)


if __name__ == "__main__":
    main()
