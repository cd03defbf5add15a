"""Writer processes against a live server, and the check that every acknowledged write held.

Shared by the concurrency test (tests/test_store_engine.py) and bench/bench_hostile.py.
Each writer owns its own ids, so the final state of an id follows from that
writer's acknowledged writes alone; every writer also POSTs the same contested ids, which
exactly one may create.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context

import httpx
from sqlalchemy import NullPool, create_engine, text

from app.config import PROJECT_ROOT

BASE_RECORD = PROJECT_ROOT / "data" / "records" / "b6bab2e17ae18394.json"
REQUEST_TIMEOUT_S = 30.0


def probe_record(record_id: str, marker: str) -> dict:
    """A valid record with this id; `marker` (in documentation) tells which write made it."""
    record = json.loads(BASE_RECORD.read_text())
    message = f"concurrency probe {record_id} failed"
    return record | {
        "id": record_id,
        "slug": f"probe-{record_id}",
        "errorMessage": message,
        "messagePattern": message,
        "documentation": marker,
    }


def record_id(writer: int, number: int) -> str:
    """16 hex digits: writer in the first four, a running number in the rest."""
    return f"{0xC000 + writer:04x}{number:012x}"


@dataclass
class WriterLog:
    """What one writer did and what it expects the store to hold afterwards."""

    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    writes: int = 0  # acknowledged (2xx) writes
    expected: dict[str, str | None] = field(default_factory=dict)  # id -> marker, None: absent
    contested: dict[str, int] = field(default_factory=dict)  # contested id -> POST status
    window: tuple[float, float] = (0.0, 0.0)  # time.time() when writing began and ended
    seconds: list[float] = field(default_factory=list)  # each request's time, answer or not


def run_writer(
    base: str, token: str, writer: int, seconds: float, contested: list[str]
) -> WriterLog:
    """POST, PUT and DELETE this writer's own records for `seconds`, after POSTing each
    contested id once; statuses, transport errors and the expected final state come back."""
    log = WriterLog()
    rng = random.Random(writer)
    headers = {"Authorization": f"Bearer {token}"}
    live: list[str] = []
    made = 0
    with httpx.Client(base_url=base, headers=headers, timeout=REQUEST_TIMEOUT_S) as client:

        def send(method: str, rid: str, marker: str | None) -> int | None:
            body = None if marker is None else probe_record(rid, marker)
            path = "/api/errors" if method == "POST" else f"/api/errors/{rid}"
            sent = time.perf_counter()
            try:
                response = client.request(method, path, json=body)
            except httpx.TransportError:
                log.transport_errors += 1
                return None
            finally:
                log.seconds.append(time.perf_counter() - sent)
            log.statuses[response.status_code] += 1
            if response.is_success:
                log.writes += 1
            return response.status_code

        started = time.time()
        for rid in contested:
            status = send("POST", rid, f"contested by writer {writer}")
            if status is not None:
                log.contested[rid] = status
        stop = time.monotonic() + seconds
        step = 0
        while time.monotonic() < stop:
            step += 1
            marker = f"writer {writer} step {step}"
            action = rng.random()
            if not live or action < 0.5:
                rid = record_id(writer, made)
                made += 1
                if send("POST", rid, marker) == 201:
                    live.append(rid)
                    log.expected[rid] = marker
                else:
                    log.expected.setdefault(rid, None)
            elif action < 0.8:
                rid = rng.choice(live)
                if send("PUT", rid, marker) == 200:
                    log.expected[rid] = marker
            else:
                rid = live.pop(rng.randrange(len(live)))
                if send("DELETE", rid, None) == 204:
                    log.expected[rid] = None
                else:
                    live.append(rid)
    log.window = (started, time.time())
    return log


def _writer_main(args: tuple) -> WriterLog:
    return run_writer(*args)


def run_writers(
    base: str, token: str, writers: int, seconds: float, contested: list[str]
) -> list[WriterLog]:
    """`writers` processes writing at once (processes, so no GIL serialises the clients)."""
    jobs = [(base, token, number, seconds, contested) for number in range(writers)]
    with get_context("spawn").Pool(writers) as pool:
        return pool.map(_writer_main, jobs)


def run_writer_threads(
    base: str, token: str, writers: int, seconds: float, first: int = 0
) -> list[WriterLog]:
    """`writers` threads of this process writing at once, numbered from `first` (a later
    round's writers must not reuse an earlier one's ids): as many
    concurrent requests as processes make, without starting a process each (on a machine
    at a load of 15, starting 8 took longer than the harvest they were to overlap)."""
    with ThreadPoolExecutor(writers) as pool:
        jobs = [
            pool.submit(run_writer, base, token, first + n, seconds, []) for n in range(writers)
        ]
        return [job.result() for job in jobs]


@dataclass(frozen=True)
class WritersTotal:
    """What several writers did together: acknowledged writes, every status, and the 5xx
    and transport errors a client would have seen."""

    writes: int
    statuses: Counter[int]
    errors: int
    median_s: float  # of every request's time
    p99_s: float
    slowest_s: float


def total(logs: list[WriterLog]) -> WritersTotal:
    """The writers' logs added up."""
    statuses = sum((log.statuses for log in logs), Counter())
    errors = sum(count for status, count in statuses.items() if status >= 500)
    errors += sum(log.transport_errors for log in logs)
    seconds = sorted(s for log in logs for s in log.seconds) or [0.0]
    p99 = seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))]
    median = statistics.median(seconds)
    return WritersTotal(sum(log.writes for log in logs), statuses, errors, median, p99, seconds[-1])


def stored_markers(database_url: str, ids: list[str]) -> dict[str, str | None]:
    """The documentation marker of each id in the store (SQLite or PostgreSQL), None for an
    absent id (read with a plain SQL query, so the check does not go through the code under
    test)."""
    found: dict[str, str | None] = dict.fromkeys(ids)
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            for rid, document in connection.execute(text("SELECT id, document FROM records")):
                if rid in found:
                    found[rid] = json.loads(document)["documentation"]
    finally:
        engine.dispose()
    return found


def lost_writes(database_url: str, logs: list[WriterLog]) -> int:
    """How many ids the store holds otherwise than the writers' acknowledged writes left them
    (an acknowledged write missing, or a refused one there)."""
    expected = {rid: marker for log in logs for rid, marker in log.expected.items()}
    stored = stored_markers(database_url, list(expected))
    return sum(stored[rid] != marker for rid, marker in expected.items())
