"""/healthz under 32 concurrent clients on a real server, on both engines: liveness answers
from memory, so neither the database pool nor the request threads can hold it up (a health
check that waited for a pool connection froze the event loop, and every replica under load
looked dead to its load balancer). A few seconds of load, from a process of its own."""

import json
import multiprocessing
import time
from pathlib import Path

import httpx

from app.config import Settings
from app.records.service import import_paths
from app.store.engine import open_store, unit_of_work
from bench import load
from bench.server import running_server
from tests.conftest import DATA_DIR

CLIENTS = 32
LOAD_S = 4.0
HEALTH_EVERY_S = 0.01
HEALTH_P99_S = 0.1
LINES = [
    "RuntimeError: Attempted to free more buffers than allocated",
    "ValueError: Not enough space in the data buffer, try calling free_buf() to free up space",
]


def _load(port: int, record_ids: list[str]) -> tuple[float, load.LoadResult]:
    """Matches and record reads, alternating, over CLIENTS connections for LOAD_S seconds;
    raises on any answer but 200. When it began (time.monotonic, the same in every process),
    and what it did."""
    matches = [
        load.post_json("/api/match", json.dumps({"text": line}).encode()) for line in LINES
    ]
    reads = [load.get(f"/api/errors/{record_id}") for record_id in record_ids]
    one_round = [item for n, read in enumerate(reads) for item in (matches[n % 2], read)]
    began = time.monotonic()
    return began, load.drive([("127.0.0.1", port)], one_round * 2000, CLIENTS, LOAD_S)


def test_healthz_p99_under_32_clients_reading_and_matching(
    settings: Settings, tmp_path: Path
) -> None:
    with unit_of_work(open_store(settings)) as session:
        assert import_paths(session, [DATA_DIR]).written
    record_ids = sorted(path.stem for path in DATA_DIR.glob("*.json"))
    env = {
        "ERRKB_DATABASE_URL": settings.database_url,
        "ERRKB_CACHE_DIR": str(tmp_path / "cache"),
        "ERRKB_OLDER_RELEASES": "[]",
    }
    with running_server(env) as base:
        port = int(base.rsplit(":", 1)[1])
        context = multiprocessing.get_context("spawn")  # the clients' CPU is not the poller's
        with context.Pool(1) as pool, httpx.Client(base_url=base, timeout=10) as health:
            loading = pool.apply_async(_load, (port, record_ids))
            polls = []
            while not loading.ready():
                started = time.monotonic()
                answer = health.get("/healthz")
                polls.append((started, time.monotonic() - started))
                assert answer.status_code == 200
                assert answer.json()["status"] == "ok"
                time.sleep(HEALTH_EVERY_S)
            began, result = loading.get()  # raises if a request failed (load.drive checks)
    # the polls while the load ran, not while its process started
    latencies = sorted(took for at, took in polls if began <= at <= began + result.wall_s)
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    print(
        f"{result.requests} requests ({result.rps:.0f}/s, p99 {result.p99_ms:.0f} ms); "
        f"/healthz: {len(latencies)} polls, median {latencies[len(latencies) // 2] * 1000:.1f} "
        f"ms, p99 {p99 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms"
    )
    assert result.requests >= CLIENTS  # the load ran
    assert len(latencies) >= 50
    assert p99 < HEALTH_P99_S, f"p99 {p99 * 1000:.0f} ms over {len(latencies)} polls"
