"""Benchmark of hardening: concurrent writers, hostile patterns and hostile pastes.

Run by hand (each section starts its own uvicorn on 127.0.0.1 with a temporary database):

    .venv/bin/python bench/bench_hostile.py [--sections writes pastes healthz patterns]
        [--seconds 10]

* writes: 1 and 8 writer processes POST/PUT/DELETE for `--seconds` each; acknowledged
  writes per second, status codes, and whether every acknowledged write (and no other) holds.
* pastes: hostile patterns planted straight into the store (as an old database or a direct
  import might hold them), then hostile pastes, one at a time: latency, status, reply size.
* healthz: /healthz polled every 50 ms while 6 clients send hostile pastes without pause;
  its median, p99 and worst latency, with the heap settled after start-up (the default) and
  without (ERRKB_SETTLE_HEAP=0), one after the other.
* fairness: a 5 KB match, one at a time from 127.0.0.1, alone and then while another client
  (from 127.0.0.2) sends 1 MiB pastes without pause, with the paste budget on (the
  default) and off (ERRKB_PASTE_BUDGET_BYTES=0); the 5 KB match's median each time, the
  ratio to its idle median, and what the hostile client got.
* headers: /healthz and /readyz polled every 50 ms while 32 clients send ordinary requests
  (a record, a search, a 5 KB match) without pause, alone and beside 4 clients streaming
  giant request headers (`GET / HTTP/1.1`, `Host: x`, `X: ` and then 64 KiB of `a` after
  64 KiB, up to 70 MB a connection, a new connection after each answer), with errkb's HTTP
  protocol (what `errkb serve` runs) and with uvicorn's own httptools protocol: the
  probes' median, p99 and worst latency, and what the streaming clients got.
* crowd: a 5 KB match, one at a time from 127.0.0.1, alone and then while 8 clients send
  1 MiB pastes without pause, each paste from a new address (127.x.y.z), so that no
  client's own paste budget ever runs out; on SQLite, and on PostgreSQL with --postgres
  (a database of the run is created there and dropped): the 5 KB match's median each
  time, the ratio to its idle median, and what the crowd got.
* patterns: every harvested pattern of vLLM 0.33.0, SGLang 0.5.23 and the installed torch
  through check_pattern: how many the limits refuse and why, and the largest program size
  and group count among them.
"""

import argparse
import json
import multiprocessing
import os
import random
import select
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.ops.protocol import PROTOCOL_PATH
from app.records import service as records
from app.store.engine import open_store
from app.upstreams.release_cache import Upstream
from bench.bench_engines import postgres_database
from bench.server import running_server, running_servers
from tests.helpers import load
from tests.helpers.writers import probe_record, run_writers, stored_markers, total

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "records"

TOKEN = "bench-token"
CONTESTED_IDS = [f"{0xD000:04x}{n:012x}" for n in range(20)]
HOSTILE_PATTERNS = {
    "(a)*2666 (the issue's)": "(a)" * 2666,
    "32 lazy groups": " ".join(["(.+?)"] * 32) + "Z",
    "counted class (DFA blow-up)": "a[ab]{200}c",
}
PASTE_TIMEOUT_S = 180.0
HEALTH_CLIENTS = 6
HEALTH_INTERVAL_S = 0.05
SECTIONS = ["writes", "pastes", "healthz", "fairness", "headers", "crowd", "patterns"]
FAIR_IDLE_MATCHES = 40
FAIR_BUDGET_SHARE = 0.5
"""Of the default paste budget, what the measured 5 KB client sends: it waits between its
pastes so that its own budget never answers 429 (at 2 ms a match it spent 2 MiB within a
second, and the run stopped)."""
FAIR_LINE = "RuntimeError: Attempted to free more buffers than allocated"


def _pastes() -> dict[str, bytes]:
    rng = random.Random(10)
    mib = 1 << 20
    return {
        "10 KB of 'a' (the issue's)": b"a" * 10_000,
        "1 MiB line 'a a a ... Z'": b"a " * (mib // 2 - 1) + b"Z",
        "1 MiB random 'ab'": "".join(rng.choice("ab") for _ in range(mib)).encode(),
        "1 MiB of newlines": b"\n" * mib,
        "1 MiB of 'ValueError: x' lines": b"ValueError: x\n" * (mib // 14),
    }


def _settings(folder: str) -> tuple[dict[str, str], str]:
    url = f"sqlite:///{folder}/bench.db"
    env = {
        "ERRKB_DATABASE_URL": url,
        "ERRKB_ADMIN_TOKEN": TOKEN,
        "ERRKB_CACHE_DIR": f"{folder}/cache",
    }
    return env, url


def bench_writes(seconds: float) -> None:
    print("| writers | seconds | acknowledged writes | writes/s | statuses | 5xx | lost/extra |")
    print("|---|---|---|---|---|---|---|")
    for writers in (1, 8):
        with tempfile.TemporaryDirectory() as folder:
            env, _ = _settings(folder)
            with running_server(env) as base:
                logs = run_writers(base, TOKEN, writers, seconds, CONTESTED_IDS)
            # from the first writer's first write to the last one's last (not process start)
            elapsed = max(log.window[1] for log in logs) - min(log.window[0] for log in logs)
            expected = {rid: m for log in logs for rid, m in log.expected.items()}
            stored = stored_markers(f"sqlite:///{folder}/bench.db", list(expected))
            wrong = sum(stored[rid] != marker for rid, marker in expected.items())
            done = total(logs)
            print(
                f"| {writers} | {elapsed:.1f} | {done.writes} | {done.writes / elapsed:.0f} | "
                f"{dict(sorted(done.statuses.items()))} | {done.errors} | {wrong} |"
            )


def _plant(url: str) -> None:
    """Hostile patterns written with the store's own writer, past the write-time checks."""
    planted = [
        probe_record(f"{0xE000:04x}{n:012x}", name) | {"messagePattern": pattern}
        for n, (name, pattern) in enumerate(HOSTILE_PATTERNS.items())
    ]
    with Session(open_store(Settings(database_url=url))) as session:
        records.write_records(session, planted)
        session.commit()


def _post(client: httpx.Client, body: bytes) -> tuple[float, int | str, int]:
    started = time.perf_counter()
    try:
        response = client.post("/api/match", content=body, headers={"content-type": "text/plain"})
    except httpx.HTTPError as error:
        return time.perf_counter() - started, type(error).__name__, 0
    return time.perf_counter() - started, response.status_code, len(response.content)


def bench_pastes() -> None:
    with tempfile.TemporaryDirectory() as folder:
        env, url = _settings(folder)
        open_store(Settings(database_url=url))
        _plant(url)
        print("| paste | seconds | status | reply bytes |")
        print("|---|---|---|---|")
        with (
            running_server(env) as base,
            httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S) as client,
        ):
            for name, body in _pastes().items():
                seconds, status, size = _post(client, body)
                print(f"| {name} | {seconds:.3f} | {status} | {size:,} |", flush=True)


def _attack(base: str, body: bytes, stop: float, statuses) -> None:
    """One hostile client: the same paste, again and again, until `stop` (monotonic)."""
    with httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S) as client:
        while time.monotonic() < stop:
            statuses.append(_post(client, body)[1])


def bench_healthz(seconds: float) -> None:
    """Once with the heap settled after start-up (the default), once without, in one run."""
    for label, extra in (("heap settled", {}), ("heap not settled", {"ERRKB_SETTLE_HEAP": "0"})):
        _healthz_under_attack(seconds, label, extra)


def _healthz_under_attack(seconds: float, label: str, extra: dict[str, str]) -> None:
    pastes = _pastes()
    hostile = [
        pastes["1 MiB of 'ValueError: x' lines"],
        pastes["10 KB of 'a' (the issue's)"],
        pastes["1 MiB line 'a a a ... Z'"],
        pastes["1 MiB random 'ab'"],
        pastes["1 MiB of newlines"],
    ]
    context = multiprocessing.get_context("fork")  # clients in processes: no shared GIL
    with tempfile.TemporaryDirectory() as folder, context.Manager() as manager:
        env, url = _settings(folder)
        env |= extra
        open_store(Settings(database_url=url))
        _plant(url)
        statuses = manager.list()
        with running_server(env) as base:
            stop = time.monotonic() + seconds
            clients = [
                context.Process(
                    target=_attack, args=(base, hostile[n % len(hostile)], stop, statuses)
                )
                for n in range(HEALTH_CLIENTS)
            ]
            for client in clients:
                client.start()
            latencies = []
            with httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S) as client:
                while time.monotonic() < stop:
                    started = time.perf_counter()
                    assert client.get("/healthz").status_code == 200
                    latencies.append(time.perf_counter() - started)
                    time.sleep(HEALTH_INTERVAL_S)
            for client in clients:
                client.join()
            seen = list(statuses)
    latencies.sort()
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    print(
        f"{label}: /healthz under {HEALTH_CLIENTS} hostile clients: {len(latencies)} polls, "
        f"median {statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms; paste statuses "
        f"{ {s: seen.count(s) for s in set(seen)} }"
    )


def _five_kb() -> str:
    """A 5 KB traceback ending in a curated record's error."""
    frame = '  File "/opt/venv/lib/python3.12/site-packages/vllm/worker/{n}.py", line {n}, in f\n'
    frames = "".join(frame.format(n=n) + "    step()\n" for n in range(60))
    return ("Traceback (most recent call last):\n" + frames)[: 5000 - len(FAIR_LINE)] + FAIR_LINE


def _hostile_client(base: str, body: bytes, stop: float, statuses) -> None:
    """1 MiB pastes from 127.0.0.2, one after the other, whatever the answer, until `stop`."""
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S, transport=transport) as client:
        while time.monotonic() < stop:
            statuses.append(_post(client, body)[1])


def _medians(
    client: httpx.Client,
    text: str,
    until: float | None,
    count: int,
    statuses: list[int] | None = None,
) -> list[float]:
    """Each match's time, one paste after the other, at most FAIR_BUDGET_SHARE of the
    default paste budget a second; each answer must be a 200, or is put in `statuses`."""
    pause_s = len(text) / (Settings().paste_budget_bytes / 60 * FAIR_BUDGET_SHARE)
    took = []
    while len(took) < count if until is None else time.monotonic() < until:
        started = time.perf_counter()
        response = client.post("/api/match", json={"text": text})
        took.append(time.perf_counter() - started)
        if statuses is None:
            assert response.status_code == 200, response.text
        else:
            statuses.append(response.status_code)
        time.sleep(pause_s)
    return took


def bench_fairness(seconds: float) -> None:
    """The 5 KB match's median alone and beside a client looping 1 MiB pastes."""
    small = _five_kb()
    hostile = _pastes()["1 MiB of 'ValueError: x' lines"]
    context = multiprocessing.get_context("fork")
    print("| paste budget | 5 KB alone: median | beside 1 MiB loop: median | ratio | hostile |")
    print("|---|---|---|---|---|")
    for label, extra in (("on (default)", {}), ("off", {"ERRKB_PASTE_BUDGET_BYTES": "0"})):
        with tempfile.TemporaryDirectory() as folder, context.Manager() as manager:
            env, url = _settings(folder)
            env |= extra
            store = open_store(Settings(database_url=url))
            with Session(store) as session:
                records.import_paths(session, [Path(__file__).parent.parent / "data" / "records"])
                session.commit()
            statuses = manager.list()
            with running_server(env) as base, httpx.Client(base_url=base) as client:
                idle = statistics.median(_medians(client, small, None, FAIR_IDLE_MATCHES))
                stop = time.monotonic() + seconds
                attacker = context.Process(
                    target=_hostile_client, args=(base, hostile, stop, statuses)
                )
                attacker.start()
                time.sleep(0.5)  # its first paste is in
                loaded = statistics.median(_medians(client, small, stop, 0))
                attacker.join()
                seen = list(statuses)
        print(
            f"| {label} | {idle * 1000:.1f} ms | {loaded * 1000:.1f} ms | {loaded / idle:.2f}x | "
            f"{ {status: seen.count(status) for status in sorted(set(seen), key=str)} } |",
            flush=True,
        )


ORDINARY_CLIENTS = 32
GIANT_CLIENTS = 4
PROBE_INTERVAL_S = 0.05


def _ordinary_load(port: int, seconds: float) -> str:
    """ORDINARY_CLIENTS keep-alive connections reading records, searching and matching a
    line, in turn, for `seconds` (tests/helpers/load.py: raises on any answer but 200)."""
    record_ids = sorted(path.stem for path in DATA_DIR.glob("*.json"))
    match = load.post_json("/api/match", json.dumps({"text": FAIR_LINE}).encode())
    search = load.get("/api/search?q=cuda+out+of+memory")
    one_round = [
        r for record_id in record_ids for r in (load.get(f"/api/errors/{record_id}"), search, match)
    ]
    result = load.drive([("127.0.0.1", port)], one_round * 2000, ORDINARY_CLIENTS, seconds)
    return f"{result.requests} x 200 ({result.rps:.0f}/s, p99 {result.p99_ms:.0f} ms)"


def _probe(base: str, stop: float) -> list[float]:
    """/healthz and /readyz in turn every PROBE_INTERVAL_S until `stop`: each one's time."""
    took = []
    with httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S) as client:
        while time.monotonic() < stop:
            for path in ("/healthz", "/readyz"):
                started = time.perf_counter()
                assert client.get(path).status_code == 200
                took.append(time.perf_counter() - started)
                time.sleep(PROBE_INTERVAL_S)
    return took


REFUSALS_TIMED = 300


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _refusal_cost() -> str:
    """The server's CPU for each of REFUSALS_TIMED giant headers, one after the other."""
    with tempfile.TemporaryDirectory() as folder:
        env, url = _settings(folder)
        open_store(Settings(database_url=url))
        with running_servers(env, 1, PROTOCOL_PATH) as (server,):
            before, started = _cpu_s(server.pid), time.perf_counter()
            for _ in range(REFUSALS_TIMED):
                with socket.create_connection(("127.0.0.1", server.port)) as sock:
                    sock.sendall(load.GIANT_START)
                    while not select.select([sock], [], [], 0)[0]:
                        sock.sendall(load.GIANT_CHUNK)
                    assert sock.recv(200).startswith(b"HTTP/1.1 431 ")
            cpu, wall = _cpu_s(server.pid) - before, time.perf_counter() - started
    return (
        f"{REFUSALS_TIMED} giant headers one after the other: {cpu / REFUSALS_TIMED * 1000:.2f} "
        f"ms of server CPU each ({wall / REFUSALS_TIMED * 1000:.2f} ms from connect to answer)"
    )


def bench_headers(seconds: float) -> None:
    """The probes' latency under ordinary load, with and without giant headers streaming."""
    context = multiprocessing.get_context("fork")
    print(
        "| protocol | giant-header clients | probes | median | p99 | max | giant answers "
        "| ordinary |"
    )
    print("|---|---|---|---|---|---|---|---|")
    runs = [("errkb", PROTOCOL_PATH, 0), ("errkb", PROTOCOL_PATH, GIANT_CLIENTS)]
    runs.append(("uvicorn httptools", "httptools", GIANT_CLIENTS))
    for label, protocol, giants in runs:
        with tempfile.TemporaryDirectory() as folder:
            env, url = _settings(folder)
            store = open_store(Settings(database_url=url))
            with Session(store) as session:
                records.import_paths(session, [DATA_DIR])
                session.commit()
            with running_server(env, protocol) as base, context.Pool(1 + giants) as pool:
                port = int(base.rsplit(":", 1)[1])
                stop = time.monotonic() + seconds
                ordinary = pool.apply_async(_ordinary_load, (port, seconds))
                giant = [
                    pool.apply_async(load.stream_giant_headers, (("127.0.0.1", port), seconds))
                    for _ in range(giants)
                ]
                took = sorted(_probe(base, stop))
                got = [answer for client in giant for answer in client.get()]
                done = ordinary.get()
        p99 = took[max(0, int(len(took) * 0.99) - 1)]
        print(
            f"| {label} | {giants} | {len(took)} | {statistics.median(took) * 1000:.1f} ms "
            f"| {p99 * 1000:.1f} ms | {took[-1] * 1000:.1f} ms "
            f"| { {a: got.count(a) for a in sorted(set(got))} } | {done} |",
            flush=True,
        )
    print(_refusal_cost())


CROWD_CLIENTS = 8


def _crowd_client(base: str, body: bytes, stop: float, first: int, statuses) -> None:
    """1 MiB pastes one after the other until `stop`, each from a new loopback address."""
    sent = 0
    while time.monotonic() < stop:
        address = first + sent
        sent += 1
        local = f"127.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255 or 1}"
        transport = httpx.HTTPTransport(local_address=local)
        with httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S, transport=transport) as client:
            statuses.append(_post(client, body)[1])


@contextmanager
def _crowd_store(engine: str, folder: str, postgres: str | None) -> Iterator[str]:
    """The store of a crowd run: SQLite in `folder`, or a database of its own on the
    PostgreSQL server of `postgres`, dropped afterwards."""
    if engine == "sqlite":
        yield f"sqlite:///{folder}/bench.db"
        return
    assert postgres is not None
    with postgres_database(postgres) as url:
        yield url


def bench_crowd(seconds: float, postgres: str | None) -> None:
    """The 5 KB match's median alone and beside 8 clients pasting 1 MiB from new addresses,
    with the server-wide budget of large pastes (the default) and without it."""
    small = _five_kb()
    hostile = _pastes()["1 MiB of 'ValueError: x' lines"]
    context = multiprocessing.get_context("fork")
    print(
        "| engine | large pastes in flight | 5 KB alone: median | beside the crowd: median "
        "| ratio | 5 KB statuses | crowd |"
    )
    print("|---|---|---|---|---|---|---|")
    runs = [("on (default)", {}), ("off", {"ERRKB_LARGE_PASTES_IN_FLIGHT_BYTES": "0"})]
    for engine in ("sqlite", "postgresql") if postgres else ("sqlite",):
        for label, extra in runs:
            with (
                tempfile.TemporaryDirectory() as folder,
                context.Manager() as manager,
                _crowd_store(engine, folder, postgres) as url,
            ):
                env = {"ERRKB_DATABASE_URL": url, "ERRKB_CACHE_DIR": f"{folder}/cache", **extra}
                store = open_store(Settings(database_url=url))
                with Session(store) as session:
                    records.import_paths(session, [DATA_DIR])
                    session.commit()
                store.dispose()
                statuses, mine = manager.list(), []
                with (
                    running_server(env, PROTOCOL_PATH) as base,
                    httpx.Client(base_url=base, timeout=PASTE_TIMEOUT_S) as client,
                ):
                    idle = statistics.median(_medians(client, small, None, FAIR_IDLE_MATCHES))
                    stop = time.monotonic() + seconds
                    crowd = [
                        context.Process(
                            target=_crowd_client, args=(base, hostile, stop, n << 16, statuses)
                        )
                        for n in range(1, CROWD_CLIENTS + 1)
                    ]
                    for process in crowd:
                        process.start()
                    time.sleep(1.0)  # the crowd's first pastes are in
                    loaded = statistics.median(_medians(client, small, stop, 0, mine))
                    for process in crowd:
                        process.join()
                    seen = list(statuses)
            print(
                f"| {engine} | {label} | {idle * 1000:.1f} ms | {loaded * 1000:.1f} ms "
                f"| {loaded / idle:.2f}x | { {s: mine.count(s) for s in sorted(set(mine))} } "
                f"| { {s: seen.count(s) for s in sorted(set(seen), key=str)} } |",
                flush=True,
            )


def bench_patterns() -> None:
    import re2

    from app import harvest
    from app.harvest import drafts
    from app.patterns import PatternError, check_pattern

    print("| release | patterns | refused | largest program | most groups |")
    print("|---|---|---|---|---|")
    for spec in ("vllm==0.33.0", "sglang==0.5.23", "torch"):
        release = drafts.resolve_release(spec, releases=RELEASES)
        result = harvest.harvest_tree(
            release.root,
            repo=release.repo,
            ref=release.ref,
            analyzed_at="2026-01-01T00:00:00Z",
            path_prefix=release.path_prefix,
            package_dir=release.package_dir,
        )
        # located drafts keep harvest's one-part pattern and never enter the index
        patterns = [d.record["messagePattern"] for d in result.drafts if not d.located]
        refused: dict[str, int] = {}
        for pattern in patterns:
            try:
                check_pattern(pattern)
            except PatternError as error:
                refused[error.construct] = refused.get(error.construct, 0) + 1
        compiled = [re2.compile(pattern) for pattern in patterns]
        print(
            f"| {spec} | {len(patterns):,} | {sum(refused.values())} {refused or ''} | "
            f"{max(c.programsize for c in compiled)} | {max(c.groups for c in compiled)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sections",
        nargs="+",
        default=SECTIONS,
        choices=SECTIONS,
        help="What to measure (all by default).",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="Length of each run.")
    parser.add_argument(
        "--postgres",
        help="URL of a PostgreSQL server's database to create the crowd's database from "
        "(postgresql+psycopg://postgres@127.0.0.1:5432/postgres); SQLite only without it.",
    )
    args = parser.parse_args()
    if "writes" in args.sections:
        bench_writes(args.seconds)
    if "pastes" in args.sections:
        bench_pastes()
    if "healthz" in args.sections:
        bench_healthz(args.seconds)
    if "fairness" in args.sections:
        bench_fairness(args.seconds)
    if "headers" in args.sections:
        bench_headers(args.seconds)
    if "crowd" in args.sections:
        bench_crowd(args.seconds, args.postgres)
    if "patterns" in args.sections:
        bench_patterns()


if __name__ == "__main__":
    main()
