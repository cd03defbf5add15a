"""Where a request's time goes: cProfile over the handlers of POST /api/match,
GET /api/errors/{id} and a page of GET /api/errors (unfiltered and by repo).

Run by hand, on a store made by `bench/bench_store.py` (or any SQLite store):

    .venv/bin/python bench/profile_match.py [--database PATH] [--requests 200] [--top 25]

cProfile sees the thread it runs in only, and the server runs handlers in its thread pool,
so the handlers' work is called here in the main thread as each request runs it: a session
of its own, the match (or the record's view) and the reply's JSON. The HTTP layer is not in
it (bench/bench_store.py measures requests end to end). Each request runs once to warm the
caches (the match index, what is kept per dataset version), then `--requests` times timed
(the median of wall and of CPU time, without the profiler: on a loaded machine the CPU
time tells more), then profiled: the functions with the most time of their
own, and with the most time under them.
"""

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.api.errors import _document_response
from app.config import Settings
from app.main import create_app
from app.matching.service import match_text
from app.records import service as records
from app.records.filters import RecordFilters
from app.wire.records import RecordPage
from bench.bench_store import RECORD_ID, describe, pastes

VLLM = "vllm-project/vllm"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", type=Path, default=Settings().cache_dir / "bench/full.db")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--only", nargs="*", help="labels to profile (default: all)")
    args = parser.parse_args()
    settings = Settings(database_url=f"sqlite:///{args.database}", harvest_on_start=False)
    print(f"store: {describe(args.database)}")
    app = create_app(settings)
    engine, matcher = app.state.services.engine, app.state.services.matcher

    def match(text: str) -> Callable[[], object]:
        def call() -> object:
            with Session(engine) as session:
                return match_text(matcher, session, text).model_dump_json(by_alias=True)

        return call

    def get() -> object:
        with Session(engine) as session:
            stored = records.get_record(session, RECORD_ID)
            assert stored is not None
            return _document_response(session, settings, stored).body

    def listing(filters: RecordFilters) -> Callable[[], object]:
        def call() -> object:
            with Session(engine) as session:
                page = records.list_records(session, filters, records.DEFAULT_PAGE_SIZE)
                return RecordPage.model_validate(page).model_dump_json(by_alias=True)

        return call

    calls = {f"POST /api/match, {label}": match(t.decode()) for label, t in pastes().items()}
    calls["GET /api/errors/{id}"] = get
    calls["GET /api/errors?limit=50 (listing)"] = listing(RecordFilters())
    calls[f"GET /api/errors?limit=50&repo={VLLM} (listing)"] = listing(RecordFilters(repo=VLLM))
    for label, call in calls.items():
        if args.only and not any(part in label for part in args.only):
            continue
        call()
        count = max(3, args.requests // 50) if "1 MB" in label else args.requests
        took, cpu = [], []
        for _ in range(count):
            started, used = time.perf_counter(), time.process_time()
            call()
            took.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
        print(
            f"\n## {label}: median {statistics.median(took):.2f} ms, CPU "
            f"{statistics.median(cpu):.2f} ms, over {count}"
        )
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(count):
            call()
        profile.disable()
        stats = pstats.Stats(profile, stream=sys.stdout).strip_dirs()
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    engine.dispose()


if __name__ == "__main__":
    main()
