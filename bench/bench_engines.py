"""Benchmark of the engines: SQLite and PostgreSQL side by side, one replica and two, one run.

Run by hand: `.venv/bin/python bench/bench_engines.py [--records 50000] [--seconds 10]`.
For each engine, on a store of its own (a temporary SQLite file; a PostgreSQL database
created on --postgres and dropped afterwards):

1. import N synthetic records (tests.helpers.synthetic) with `errkb import`'s code path;
2. on one replica (uvicorn, one worker): search as bench_search times it (one request at a
   time) and POST /api/match of fresh 5 KB tracebacks as bench_match times it;
3. GET /api/errors/{id} and POST /api/match at concurrency 1, 16 and 64, against one
   replica and then two replicas of the same store (connections spread over both, as a
   load balancer does), driven by tests/helpers/load.py; with the CPU seconds each replica, the
   PostgreSQL server and the load generator spent, which says where the ceiling is.

Prints the README's tables.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import NullPool, create_engine, text
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from bench.bench_match import traceback_of
from bench.bench_search import _p95, _queries, _time
from bench.server import Server, running_servers
from tests.helpers.load import drive, get, post_json
from tests.helpers.synthetic import synthetic_records

LEVELS = (1, 16, 64)
SEARCH_REQUESTS = 200
MATCH_TEXTS = 200  # fresh tracebacks timed one at a time
LOAD_TEXTS = 3000  # distinct tracebacks for the load levels
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each of these processes so far."""
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    return found


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two readings (a process born in between: all of its own)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, other users' too)."""
    first = Path("/proc/stat").read_text().splitlines()[0]
    user, nice, system, _idle, _iowait, *rest = map(int, first.split()[1:])
    return (user + nice + system + sum(rest[:3])) / TICKS


def _backend_pids(url: str | None) -> list[int]:
    """The PostgreSQL server processes serving the benchmark's database."""
    if url is None:
        return []
    database = make_url(url).database
    admin = create_engine(url, poolclass=NullPool)
    with admin.connect() as connection:
        statement = text("SELECT pid FROM pg_stat_activity WHERE datname = :name")
        return list(connection.execute(statement, {"name": database}).scalars())


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A database of this run on the server of `admin_url`, dropped afterwards."""
    name = f"errkb_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


def _import(url: str, rows: list[dict], folder: Path) -> float:
    source = folder / "records.jsonl"
    if not source.exists():
        source.write_text("".join(records.canonical_json(r) + "\n" for r in rows))
    with unit_of_work(open_store(Settings(database_url=url))) as session:
        started = time.perf_counter()
        report = records.import_paths(session, [source])
        seconds = time.perf_counter() - started
    assert report.written, report.rejected[:3]
    assert report.counts.created == len(rows), report.rejected[:3]
    return seconds


def _match_latency(base: str, texts: list[str]) -> tuple[float, float]:
    with httpx.Client(base_url=base, timeout=60) as client:
        timings = []
        for text_ in texts:
            started = time.perf_counter()
            response = client.post("/api/match", json={"text": text_})
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
            assert response.json()["matches"], response.text
    timings.sort()
    return statistics.median(timings), _p95(timings)


def _search(base: str, rows: list[dict]) -> dict[str, tuple[float, float]]:
    found = {}
    with httpx.Client(base_url=base, timeout=60) as client:
        for kind, queries in _queries(rows).items():
            _time(client, queries, 20)
            latencies = _time(client, queries, SEARCH_REQUESTS)
            found[kind] = (statistics.median(latencies), _p95(latencies))
    return found


def _loads(
    servers: list[Server],
    database: str | None,
    engine: str,
    seconds: float,
    by_id: list[bytes],
    matches: list[bytes],
) -> list[str]:
    lines = []
    targets = [("127.0.0.1", server.port) for server in servers]
    server_pids = [server.pid for server in servers]
    for name, requests in (("GET /api/errors/{id}", by_id), ("POST /api/match", matches)):
        drive(targets, requests[:200], 4, seconds)  # warm both replicas
        for level in LEVELS:
            before = (
                _cpu_by_pid(server_pids),
                _cpu_by_pid(_backend_pids(database)),
                _machine_busy_s(),
            )
            result = drive(targets, requests, level, seconds)
            after = (  # the pool may have opened connections: new server processes
                _cpu_by_pid(server_pids),
                _cpu_by_pid(_backend_pids(database)),
                _machine_busy_s(),
            )
            spent = (
                _spent(before[0], after[0]),
                _spent(before[1], after[1]),
                result.client_cpu_s,
                after[2] - before[2],
            )
            cores = " / ".join(f"{value / result.wall_s:.2f}" for value in spent)
            per_core = result.rps * result.wall_s / spent[0] if spent[0] else 0.0
            lines.append(
                f"| {engine} | {name} | {len(servers)} | {level} | {result.requests} "
                f"| {result.rps:.0f} | {result.median_ms:.2f} | {result.p99_ms:.2f} | {cores} "
                f"| {per_core:.0f} |"
            )
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--seconds", type=float, default=10.0, help="Per load level.")
    parser.add_argument(
        "--postgres",
        default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        help="A database on the server to create the benchmark's database from.",
    )
    parser.add_argument("--engines", default="sqlite,postgresql")
    args = parser.parse_args()
    rows = synthetic_records(args.records)
    rng = random.Random(14)
    samples = [rng.choice(rows) for _ in range(LOAD_TEXTS + MATCH_TEXTS)]
    texts = [_traceback(rng, record) for record in samples]
    by_id = [get(f"/api/errors/{rows[(i * 7919) % len(rows)]['id']}") for i in range(100_000)]
    load_matches = [
        post_json("/api/match", json.dumps({"text": t}).encode()) for t in texts[:LOAD_TEXTS]
    ]
    summary, loads = [], []
    with tempfile.TemporaryDirectory() as folder:
        for engine in args.engines.split(","):
            with _store(engine, Path(folder), args.postgres) as url:
                imported = _import(url, rows, Path(folder))
                print(f"{engine}: import of {len(rows)} records {imported:.1f} s", flush=True)
                database = url if engine == "postgresql" else None
                env = {
                    "ERRKB_DATABASE_URL": url,
                    "ERRKB_CACHE_DIR": str(Path(folder) / f"cache-{engine}"),
                    # A pool as large as the server's 40 threads: no connection (a
                    # PostgreSQL process) opens and closes during a level, so the server
                    # processes counted at its start and end did all of its work.
                    "ERRKB_DB_POOL_SIZE": "40",
                    "ERRKB_DB_POOL_MAX_OVERFLOW": "0",
                }
                with running_servers(env, 1) as one:
                    median, p95 = _match_latency(one[0].base, texts[LOAD_TEXTS:])
                    summary.append(f"| {engine} | import {len(rows)} records | {imported:.1f} s |")
                    summary.append(
                        f"| {engine} | POST /api/match, 5 KB tracebacks one at a time "
                        f"| median {median:.2f}, p95 {p95:.2f} |"
                    )
                    for kind, (median, p95) in _search(one[0].base, rows).items():
                        summary.append(
                            f"| {engine} | search: {kind} | median {median:.2f}, p95 {p95:.2f} |"
                        )
                    print("\n".join(summary[-6:]), flush=True)
                    loads += _loads(one, database, engine, args.seconds, by_id, load_matches)
                with running_servers(env, 2) as two:
                    loads += _loads(two, database, engine, args.seconds, by_id, load_matches)
    print("\n| engine | what | figure (ms) |\n|---|---|---|")
    print("\n".join(summary))
    print(
        "\n| engine | endpoint | replicas | concurrency | requests | req/s | median ms | p99 ms "
        "| CPU cores: replicas / PostgreSQL / load / whole machine | req/s per replica core |"
        "\n|---|---|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(loads))


def _traceback(rng: random.Random, record: dict) -> str:
    """A fresh 5 KB paste raising a synthetic record's error (its pattern ends in its
    number, tests.helpers.synthetic)."""
    message = f"{record['errorMessage']} #{int(record['id'], 16)}"
    return traceback_of(rng, message, record["errorClass"], record["filePath"])


@contextmanager
def _store(engine: str, folder: Path, postgres: str) -> Iterator[str]:
    if engine == "sqlite":
        yield f"sqlite:///{folder / 'bench.db'}"
    else:
        with postgres_database(postgres) as url:
            yield url


if __name__ == "__main__":
    main()
