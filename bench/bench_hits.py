"""Benchmark of hits: what counting hits costs a match.

Run by hand:

    .venv/bin/python bench/bench_hits.py [--database FILE] [--pastes 400]

Without --database it builds a store of data/ plus the vLLM 0.33.0 drafts (harvested from
the cached release). Two apps share that store, one counting hits (ERRKB_RECORD_HITS on,
the default) and one not; each fresh traceback (a draft's message with values filled in, or
an error no record explains) is posted to both, in alternating order, through the whole ASGI
stack in-process (middleware, match, hits, JSON). It prints the medians, p95 and their ratio,
then the cost of one HitCounter.add and of one flush of 200 subjects.
"""

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import PROJECT_ROOT, Settings
from app.curation.hits import RECORD, HitCounter
from app.harvest import drafts
from app.main import create_app
from app.records import service as records
from app.store.engine import unit_of_work
from app.store.tables import Record
from app.upstreams.release_cache import Upstream
from bench.bench_match import PLACEHOLDER

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)

FLUSH_SUBJECTS = 200


def build_store(folder: Path) -> Path:
    database = folder / "hits-bench.db"
    app = create_app(Settings(database_url=f"sqlite:///{database}", cache_dir=folder))
    with unit_of_work(app.state.services.engine) as session:
        records.import_paths(session, [PROJECT_ROOT / "data" / "records"])
        drafts.harvest_release(session, drafts.resolve_release("vllm==0.33.0", releases=RELEASES))
    return database


def pastes(database: Path, count: int) -> list[str]:
    app = create_app(Settings(database_url=f"sqlite:///{database}"))
    with Session(app.state.services.engine) as session:
        rows = session.execute(select(Record.error_class, Record.error_message)).all()
    rng = random.Random(13)
    texts = []
    for n in range(count):
        if n % 4 == 3:  # one in four: an error no record explains (counted as a template)
            cls, message = "ValueError", f"bench value {rng.randint(0, 10**9)} is not allowed here"
        else:
            cls, message = rng.choice(rows)
            message = PLACEHOLDER.sub(lambda _: str(rng.randint(0, 10**6)), message)
        texts.append(
            "Traceback (most recent call last):\n"
            f'  File "/srv/app/main.py", line {n + 1}, in run\n'
            "    serve()\n"
            f"{cls.rsplit('.', 1)[-1]}: {message}\n"
        )
    return texts


def stats(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95)] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", type=Path, help="a store to use instead of building one")
    parser.add_argument("--pastes", type=int, default=400)
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="errkb-bench-hits-"))
    database = arguments.database or build_store(folder)
    url = f"sqlite:///{database}"
    counting = TestClient(create_app(Settings(database_url=url, cache_dir=folder)))
    silent = TestClient(create_app(Settings(database_url=url, cache_dir=folder, record_hits=False)))
    texts = pastes(database, arguments.pastes)
    for client in (counting, silent):  # load the index outside the measurement
        client.post("/api/match", json={"text": texts[0]})
    timings: dict[str, list[float]] = {"on": [], "off": []}
    for n, text in enumerate(texts):
        order = [("on", counting), ("off", silent)]
        for name, client in order if n % 2 else order[::-1]:
            started = time.perf_counter()
            assert client.post("/api/match", json={"text": text}).status_code == 200
            timings[name].append(time.perf_counter() - started)
    on, off = stats(timings["on"]), stats(timings["off"])
    print(f"POST /api/match in-process, {len(texts)} fresh tracebacks each")
    print(f"  hits on : median {on[0]:.3f} ms, p95 {on[1]:.3f} ms")
    print(f"  hits off: median {off[0]:.3f} ms, p95 {off[1]:.3f} ms")
    print(f"  ratio on/off: median {on[0] / off[0]:.3f}, p95 {on[1] / off[1]:.3f}")

    counter = HitCounter(counting.app.state.services.engine, enabled=True, interval_s=3600)
    started = time.perf_counter()
    for n in range(FLUSH_SUBJECTS * 50):
        counter.add(RECORD, f"{n % FLUSH_SUBJECTS:016x}")
    add_us = (time.perf_counter() - started) / (FLUSH_SUBJECTS * 50) * 1e6
    started = time.perf_counter()
    written = counter.flush()
    flush_ms = (time.perf_counter() - started) * 1000
    print(f"HitCounter.add: {add_us:.2f} us; one flush of {written} subjects: {flush_ms:.1f} ms")


if __name__ == "__main__":
    main()
