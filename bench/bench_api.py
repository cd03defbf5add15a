"""Benchmark of the API: import 50k records, then GET /api/errors/{id} and ?limit=50 over HTTP.

Run by hand: `.venv/bin/python bench/bench_api.py [--records 50000]`. Starts uvicorn on
127.0.0.1 with a temporary database, drives it with httpx at a few concurrency levels, each
level bounded in requests and time, and prints the table for the README.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from bench.server import running_server
from tests.helpers.synthetic import synthetic_records

REQUESTS_PER_LEVEL = 2000
SECONDS_PER_LEVEL = 20.0
CONCURRENCY_LEVELS = (1, 4, 16)


def _drive(base: str, paths: list[str], concurrency: int) -> dict:
    latencies: list[float] = []
    deadline = time.monotonic() + SECONDS_PER_LEVEL

    def worker(share: list[str]) -> list[float]:
        own = []
        with httpx.Client(base_url=base) as client:
            for path in share:
                if time.monotonic() > deadline:
                    break
                start = time.perf_counter()
                response = client.get(path)
                own.append(time.perf_counter() - start)
                assert response.status_code == 200, response.text
        return own

    shares = [paths[i::concurrency] for i in range(concurrency)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for own in pool.map(worker, shares):
            latencies += own
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "median_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "records.jsonl"
        rows = synthetic_records(args.records)
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
        url = f"sqlite:///{folder}/bench.db"
        with unit_of_work(open_store(Settings(database_url=url))) as session:
            started = time.perf_counter()
            report = records.import_paths(session, [source])
            import_s = time.perf_counter() - started
        assert report.written, report.rejected[:3]
        assert report.counts.created == args.records, report.rejected[:3]
        print(f"import of {args.records} records: {import_s:.2f} s")

        with running_server({"ERRKB_DATABASE_URL": url}) as base:
            ids = [rows[(i * 7919) % len(rows)]["id"] for i in range(REQUESTS_PER_LEVEL)]
            by_id = [f"/api/errors/{i}" for i in ids]
            listing = ["/api/errors?limit=50&repo=pytorch/pytorch"] * (REQUESTS_PER_LEVEL // 4)
            _drive(base, by_id[:200], 1)
            print("| endpoint | concurrency | requests | req/s | median ms | p99 ms |")
            print("|---|---|---|---|---|---|")
            for name, paths in (
                ("GET /api/errors/{id}", by_id),
                ("GET /api/errors?limit=50", listing),
            ):
                for level in CONCURRENCY_LEVELS:
                    result = _drive(base, paths, level)
                    print(
                        f"| {name} | {level} | {result['requests']} | {result['rps']:.0f} | "
                        f"{result['median_ms']:.2f} | {result['p99_ms']:.2f} |"
                    )


if __name__ == "__main__":
    main()
