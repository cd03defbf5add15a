"""Benchmark: listing the curation queue with the hits table at its cap of templates per day.

Run by hand:

    .venv/bin/python bench/bench_queue.py [--database-url URL] [--days 30] [--requests 50]

It builds a store of data/ (SQLite in a temporary folder, or the PostgreSQL database given,
whose schema must be empty or errkb's), then fills the hits table the way anonymous traffic
would at worst: every day of --days holds ERRKB_QUEUE_TEMPLATES_PER_DAY distinct templates
(today's written through HitCounter, twice the cap, so each flush drops the excess), plus a
hit for each record. It prints the rows kept, the time of one flush at the cap, and the
median and p95 of GET /api/curation/queue (first page, wall time through the in-process ASGI
stack; on PostgreSQL after ANALYZE, as autovacuum would have run) and of a page deep in
the queue, and the CPU time of one curation_queue() call (the figure that holds on a
machine other processes keep busy).
"""

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, insert, select
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import PROJECT_ROOT, Settings
from app.curation.hits import RECORD, TEMPLATE, HitCounter, retotal, today
from app.curation.queue import curation_queue
from app.main import create_app
from app.records import service as records
from app.store.engine import unit_of_work
from app.store.tables import Hit, Record

WORDS = [a + b + c for a in "bcdfgklmnprstvz" for b in "aeiou" for c in "bdgklmnprst"]


def template(rng: random.Random) -> str:
    return "ValueError: " + " ".join(rng.choice(WORDS) for _ in range(8))


def fill(client: TestClient, days: int, cap: int) -> float:
    """Past days straight into the table (with their totals, as the migration that made
    them writes them); today through HitCounter; the last flush's time."""
    engine = client.app.state.services.engine
    rng = random.Random(25)
    first = today() - timedelta(days=days - 1)
    with unit_of_work(engine) as session:
        ids = list(session.execute(select(Record.id)).scalars())
        rows = [{"kind": RECORD, "subject": i, "day": first, "count": 3} for i in ids]
        for n in range(days - 1):
            day = first + timedelta(days=n)
            subjects = {template(rng) for _ in range(cap)}
            rows += [
                {"kind": TEMPLATE, "subject": s, "day": day, "count": rng.randint(1, 5)}
                for s in subjects
            ]
        session.execute(insert(Hit), rows)
        retotal(session, {(row["kind"], row["subject"]) for row in rows}, set())
    counter = HitCounter(engine, enabled=True, interval_s=3600, templates_per_day=cap)
    flush_s = 0.0
    for _ in range(2):
        for _ in range(cap):
            counter.add(TEMPLATE, template(rng))
        started = time.perf_counter()
        counter.flush()
        flush_s = time.perf_counter() - started
    return flush_s


def timed(client: TestClient, url: str, requests: int) -> tuple[float, float]:
    client.get(url)
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        assert client.get(url).status_code == 200
        seconds.append(time.perf_counter() - started)
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95)] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", help="a PostgreSQL database instead of SQLite")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=50)
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="errkb-bench-queue-"))
    url = arguments.database_url or f"sqlite:///{folder / 'queue-bench.db'}"
    settings = Settings(database_url=url, cache_dir=folder, settle_heap=False)
    client = TestClient(create_app(settings))
    with unit_of_work(client.app.state.services.engine) as session:
        records.import_paths(session, [PROJECT_ROOT / "data" / "records"])
    cap = settings.queue_templates_per_day
    flush_s = fill(client, arguments.days, cap)
    engine = client.app.state.services.engine
    if engine.dialect.name == "postgresql":  # the statistics autovacuum keeps up to date
        with engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE")
    with Session(engine) as session:
        kept = session.execute(select(func.count()).select_from(Hit)).scalar_one()
        today_kept = session.execute(
            select(func.count()).where(Hit.kind == TEMPLATE, Hit.day == today())
        ).scalar_one()
    print(f"{engine.dialect.name}: {kept} hit rows over {arguments.days} days")
    print(
        f"  today's templates kept: {today_kept} (cap {cap});"
        f" flush at the cap {flush_s * 1000:.1f} ms"
    )
    first = timed(client, "/api/curation/queue", arguments.requests)
    print(f"  GET /api/curation/queue: median {first[0]:.1f} ms, p95 {first[1]:.1f} ms")
    cursor = None
    for _ in range(3):  # past the first 600 items: the keyset cursor, not an offset
        after = f"&cursor={cursor}" if cursor else ""
        cursor = client.get(f"/api/curation/queue?limit=200{after}").json()["nextCursor"]
    if cursor:
        deep = timed(client, f"/api/curation/queue?cursor={cursor}", arguments.requests)
        print(
            f"  GET /api/curation/queue?cursor=(item 601): median {deep[0]:.1f} ms,"
            f" p95 {deep[1]:.1f} ms"
        )
    with Session(client.app.state.services.engine) as session:
        started = time.process_time()
        for _ in range(arguments.requests):
            curation_queue(session, client.app.state.services.matcher.vocabulary())
        cpu_ms = (time.process_time() - started) / arguments.requests * 1000
    print(f"  curation_queue() CPU time: {cpu_ms:.1f} ms a call")


if __name__ == "__main__":
    main()
