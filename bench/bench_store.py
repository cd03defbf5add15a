"""The hot paths on the store the default `errkb serve` builds and on the small store, side by
side in one run, with the ratio.

Run by hand:

    .venv/bin/python bench/bench_store.py [--full PATH] [--seconds 5] [--skip-build]

* The full store is built once and kept (default ERRKB_CACHE_DIR/bench/full.db, outside
  git): the curated records, then ERRKB_DEFAULT_RELEASES, then ERRKB_OLDER_RELEASES, each
  harvested as the server's start-up does (one release at a time; one already in is left).
  Building it downloads each release once (into the upstream cache) and takes a while:
  about 15 s of harvest per release on a quiet machine. `--skip-build` measures the store
  as it is, however many releases it holds (the tables say how many).
* The small store holds the curated records only, made afresh in a temporary folder.
* Every server is `errkb serve` as people run it (no import, no harvest, no paste budget),
  its access log written to a file.
* Latency, one worker, one connection: POST
  /api/match with a 5 KB traceback in a log, a 5 KB vLLM log (colour codes, engine prefixes)
  and a 1 MB log ending in that traceback, GET /api/errors/{id}, GET /errors/{id}, a listing
  and a search; median and p99 on each store, and the ratio. Both servers run at once and
  take turns, in slices, so that a busy moment of the machine does not fall on one store.
* Writes beside a harvest: 8 writer threads POST/PUT/DELETE records for
  `--write-seconds` on a store of the curated records, first alone, then (in rounds, until
  it is over) while the server harvests `--writes-release` (vLLM 0.33.0) in the background,
  then while `errkb harvest` harvests it from a process of its own;
  on SQLite, and on PostgreSQL too when ERRKB_TEST_POSTGRES_URL names a database. Statuses,
  each write's time, and acknowledged writes missing from the store afterwards.
* Throughput, `--workers` processes (`errkb serve --workers`), 64 connections: POST /api/match
  (5 KB) and GET /api/errors/{id}; requests per second, median, p99, errors; with wrk as
  the load tool where it is installed (bench/wrk.py), and with `--baseline ROOT` the code
  of another checkout served in turn with this one (the writes section too).
* `--sections build`: only builds the full store (and prints its time and size).
* `--sections wrk`: GET by id, a 5 KB match (a fresh paste each request) and the real
  pastes of tests/fixtures/real_pastes in turn beside /healthz on the same server, with
  wrk: one worker at one connection, then `--workers` at 64; each row's requests per second
  as a ratio of /healthz's.
* `--sections turns --baseline ROOT`: fresh 5 KB pastes, the real pastes, then GET by id,
  at 64 connections, `--workers` processes of this code and of ROOT's both serving each store at
  once, `--pairs` runs of `--seconds` each taking turns (which goes first alternates):
  this machine's speed comes and goes by half from minute to minute, and a pair meets the
  same minute, so the ratio of each pair is what the code changed.
* `--sections costly`: on the full store, one worker, a fresh 5 KB paste at one connection
  (wrk) while COSTLY_CLIENTS clients send pastes under 16 KB that each name some 250
  records no paste named before: what a costly paste costs the others. With `--baseline`,
  that code too, after this one.

Every level is bounded in time (`--seconds`) and in requests; servers listen on 127.0.0.1
only and are stopped at the end.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx
from sqlalchemy import func, select
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import PROJECT_ROOT, Settings
from app.harvest import drafts
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from app.store.tables import Record, RecordLocation
from app.upstreams.release_cache import Upstream
from bench import wrk
from bench.bench_match import LOG_LINE, traceback_of
from bench.server import START_TIMEOUT_S, STOP_TIMEOUT_S, free_port
from tests.helpers.load import LoadResult, drive, get, post_json
from tests.helpers.logs import ENGINE_PREFIX, VLLM_LOG
from tests.helpers.postgres import ENGINES, POSTGRESQL, fresh_schema
from tests.helpers.real_pastes import load_cases
from tests.helpers.writers import WriterLog, lost_writes, run_writer_threads, total

RECORD_ID = "c53f6de81577a6bc"  # curated, in both stores: "Attempted to free more buffers"
LOG_BYTES = 1_000_000  # with its JSON escapes, under the 1 MiB body limit
LATENCY_REQUESTS = 2000
LATENCY_ROUNDS = 5  # slices per store, taking turns
WARM_UP_S = 1.0  # per request and store, before any is measured
REAL_PASTES_WARM_UP_S = 6.0
"""Before the real pastes are measured: each paste several times on every worker. A worker
keeps what a match reads of each record (app.records.dataset_cache), so its first pass over
pastes naming hundreds of records computes what the later ones read: that pass is
measured apart (in process, docs/benchmarks.md), not mixed into a throughput."""
LOAD_REQUESTS = 200_000
LOAD_CONNECTIONS = 64
COSTLY_CLIENTS = 4
COSTLY_PASTES = 400  # more than four clients send in `--seconds`: each paste is new to the server
COSTLY_PASTE_CHARS = 15_500  # under the 16 KB of a small paste (app.serving.matches)
WRITERS = 8
WRITES_RELEASE = "vllm==0.33.0"
WRITES_TOKEN = "bench-token"
MAX_WRITE_ROUNDS = 40  # 200 s of writes at most beside one harvest
BACKGROUND, CLI = "background harvest", "errkb harvest"
HARVESTS = (None, BACKGROUND, CLI)
"""The writes section's runs: the writers alone, beside the server's background harvest,
and beside `errkb harvest` run from another process."""


def build_full_store(path: Path) -> None:
    """The default serve's store at `path`: curated records, default and older releases."""
    settings = Settings(database_url=f"sqlite:///{path}")
    engine = open_store(settings)
    with unit_of_work(engine) as session:
        records.import_paths(session, [settings.data_dir])
    upstream = Upstream(settings.cache_dir)
    began, built = time.perf_counter(), 0
    for spec in [*settings.default_releases, *settings.older_releases]:
        with Session(engine) as session:
            if drafts.is_harvested(session, spec):
                continue
        started = time.perf_counter()
        release = drafts.resolve_release(spec, releases=upstream)
        with unit_of_work(engine) as session:
            _, counts = drafts.harvest_release(session, release)
        built += 1
        print(
            f"harvested {spec}: {counts.created} drafts created "
            f"({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    engine.dispose()
    if built:
        print(
            f"built {built} releases in {time.perf_counter() - began:.0f} s: {describe(path)}, "
            f"{path.stat().st_size / 2**20:,.0f} MiB",
            file=sys.stderr,
        )


def build_small_store(url: str) -> None:
    """The curated records only, in the store at `url`."""
    settings = Settings(database_url=url)
    engine = open_store(settings)
    with unit_of_work(engine) as session:
        records.import_paths(session, [settings.data_dir])
    engine.dispose()


def describe(path: Path) -> str:
    """Records, locations and releases of a store."""
    engine = open_store(Settings(database_url=f"sqlite:///{path}"))
    with Session(engine) as session:
        count = session.execute(select(func.count()).select_from(Record)).scalar_one()
        located = session.execute(select(func.count()).select_from(RecordLocation)).scalar_one()
        releases = len(set(session.execute(select(RecordLocation.release)).scalars()))
    engine.dispose()
    return f"{count:,} records, {located:,} locations, {releases} releases"


def pastes() -> dict[str, bytes]:
    """The 5 KB traceback in a log, a 5 KB vLLM log (colour codes, engine prefixes) ending in
    the same error, and a 1 MB log ending in the traceback."""
    record = json.loads((PROJECT_ROOT / "data" / "records" / f"{RECORD_ID}.json").read_text())
    rng = random.Random(18)
    paste = traceback_of(rng, record["errorMessage"], record["errorClass"], record["filePath"])
    lines = []
    size = len(paste)
    while size < LOG_BYTES:
        line = LOG_LINE.format(s=len(lines) % 60, n=len(lines)) + "\n"
        lines.append(line)
        size += len(line)
    engine_lines = []
    while sum(map(len, engine_lines)) + len(VLLM_LOG) < len(paste):
        n = len(engine_lines)
        engine_lines.append(
            f"{ENGINE_PREFIX}INFO 11-30 10:00:{n % 60:02d} [core.py:{n}] step {n}\n"
        )
    return {
        "5 KB": paste.encode(),
        "5 KB vLLM log": ("".join(engine_lines) + VLLM_LOG).encode(),
        "1 MB": ("".join(lines) + paste).encode(),
    }


@contextmanager
def serving(
    url: str, workers: int = 1, root: Path = PROJECT_ROOT, **settings: str
) -> Iterator[int]:
    """`errkb serve` over the store, as people run it (its HTTP protocol, uvicorn's access
    log on, written to a file here), with `workers` processes, running the code of the
    checkout at `root`: no import and no harvest unless `settings` ask for the harvest
    (harvest_on_start); its port once the match index is loaded. The server's output is
    printed when it does not start."""
    port = free_port()
    harvest = settings.pop("harvest_on_start", "false") == "true"
    env = os.environ | {
        "PYTHONPATH": str(root),
        "ERRKB_DATABASE_URL": url,
        "ERRKB_LOG_FORMAT": "text",
        "ERRKB_PASTE_BUDGET_BYTES": "0",  # one client sends every request: no budget per client
        **{f"ERRKB_{name.upper()}": value for name, value in settings.items()},
    }
    command = [sys.executable, "-c", "from app.cli.commands import main; main()", "serve"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    command += ["--no-import-data", "--harvest" if harvest else "--no-harvest"]
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, env=env, cwd=root, stdout=output, stderr=output)
        try:
            _wait_until_ready(process, port, workers, output)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(process: subprocess.Popen, port: int, workers: int, output: IO) -> None:
    """Until /readyz answers 200 several times in a row (each worker loads its own index);
    RuntimeError with the server's last output when it exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT_S
    ready = 0
    while ready < workers * 4:
        try:
            status = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30).status_code
            ready = ready + 1 if status == 200 else 0
        except httpx.TransportError:
            ready = 0
        if time.monotonic() > deadline or process.poll() is not None:
            output.seek(0)
            tail = output.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"the server did not start:\n{tail}")
        time.sleep(0.05)


def requests_of(texts: dict[str, bytes]) -> dict[str, bytes]:
    """One request per hot path."""

    def match(text: bytes) -> bytes:
        return post_json("/api/match", json.dumps({"text": text.decode()}).encode())

    return {
        "POST /api/match, 5 KB": match(texts["5 KB"]),
        "POST /api/match, 5 KB vLLM log": match(texts["5 KB vLLM log"]),
        "POST /api/match, 1 MB log": match(texts["1 MB"]),
        "GET /api/errors/{id}": get(f"/api/errors/{RECORD_ID}"),
        "GET /errors/{id} (page)": get(f"/errors/{RECORD_ID}"),
        "GET /api/errors?limit=50": get("/api/errors?limit=50"),
        "GET /api/search?q=free+buffers": get("/api/search?q=free+buffers"),
    }


def latency(ports: dict[str, int], request: bytes, seconds: float) -> dict[str, LoadResult]:
    """One connection, one request at a time, after a few to warm up, on each store's
    server in turn: LATENCY_ROUNDS slices each, small, full, small, full..., so that what
    else the shared machine does meanwhile weighs on both alike. The median is the median of
    the slices' medians, the p99 the highest of theirs."""
    count = 20 if len(request) > LOG_BYTES // 2 else LATENCY_REQUESTS
    slices: dict[str, list[LoadResult]] = {name: [] for name in ports}
    for port in ports.values():
        drive([("127.0.0.1", port)], [request] * 5, 1, seconds)
    for _ in range(LATENCY_ROUNDS):
        for name, port in ports.items():
            target = [("127.0.0.1", port)]
            each = max(1, count // LATENCY_ROUNDS)
            slices[name].append(drive(target, [request] * each, 1, seconds / LATENCY_ROUNDS))
    return {name: _merged(results) for name, results in slices.items()}


def _merged(results: list[LoadResult]) -> LoadResult:
    wall = sum(result.wall_s for result in results)
    done = sum(result.requests for result in results)
    return LoadResult(
        requests=done,
        rps=done / wall,
        median_ms=statistics.median(result.median_ms for result in results),
        p99_ms=max(result.p99_ms for result in results),
        client_cpu_s=sum(result.client_cpu_s for result in results),
        wall_s=wall,
    )


def writes_beside_harvest(seconds: float, release: str, codes: dict[str, Path]) -> None:
    """8 writers POST/PUT/DELETE on a fresh store of the curated records, first with nothing
    else writing, then while the server harvests `release` in the background (as an older
    release, after readiness), then while `errkb harvest` harvests it, on SQLite and, when
    ERRKB_TEST_POSTGRES_URL names a database, on PostgreSQL, served by the code of each
    checkout in `codes`: statuses, each write's time, and whether every acknowledged write
    holds."""
    print(
        f"\n| {WRITERS} writers | acknowledged writes | writes/s | statuses | 5xx | "
        "write median / p99 / max ms | lost |"
    )
    print("|---|---|---|---|---|---|---|")
    runs = [(e, c, h) for e in ENGINES for c in sorted(codes) for h in HARVESTS]
    for engine, code, harvest in runs:
        with _fresh_store(engine) as url:
            build_small_store(url)
            settings = {"admin_token": WRITES_TOKEN}
            if harvest == BACKGROUND:
                settings |= {
                    "harvest_on_start": "true",
                    "default_releases": "[]",
                    "older_releases": json.dumps([release]),
                }
            with serving(url, root=codes[code], **settings) as port:
                base = f"http://127.0.0.1:{port}"
                if harvest == CLI:
                    logs, background = _write_beside_cli(base, seconds, url, release, codes[code])
                else:
                    logs, background = _write_until_harvested(base, seconds, harvest is not None)
            lost = lost_writes(url, logs)
        done = total(logs)
        elapsed = max(log.window[1] for log in logs) - min(log.window[0] for log in logs)
        label = f"{engine}, {code}, " + (f"{harvest} of {release}" if harvest else "alone")
        print(
            f"| {label} | {done.writes} | {done.writes / elapsed:.0f} | "
            f"{dict(sorted(done.statuses.items()))} | {done.errors} | "
            f"{done.median_s * 1000:.0f} / {done.p99_s * 1000:.0f} / "
            f"{done.slowest_s * 1000:.0f} | {lost} |",
            flush=True,
        )
        if background is not None:
            print(f"|  harvest at the end: {background} |||||||")


def _write_until_harvested(
    base: str, seconds: float, harvesting: bool
) -> tuple[list[WriterLog], dict | None]:
    """Rounds of the writers until the background harvest is over (one round without one);
    their logs, and the harvest's state at the end."""
    logs: list[WriterLog] = []
    for rounds in range(MAX_WRITE_ROUNDS):
        logs += run_writer_threads(base, WRITES_TOKEN, WRITERS, seconds, first=rounds * WRITERS)
        if not harvesting:
            return logs, None
        background = httpx.get(f"{base}/readyz", timeout=30).json().get("background")
        if not background or not background["pending"]:
            return logs, background
    return logs, background


def _write_beside_cli(
    base: str, seconds: float, url: str, release: str, root: Path
) -> tuple[list[WriterLog], dict]:
    """Rounds of the writers while `errkb harvest` (the code at `root`) harvests `release`
    into the served store from a process of its own, until it exits; their logs, and how
    the harvest ended."""
    env = os.environ | {"PYTHONPATH": str(root), "ERRKB_DATABASE_URL": url}
    command = [sys.executable, "-c", "from app.cli.commands import main; main()"]
    command += ["harvest", release]
    started = time.perf_counter()
    harvest = subprocess.Popen(
        command, env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    logs: list[WriterLog] = []
    try:
        for rounds in range(MAX_WRITE_ROUNDS):
            logs += run_writer_threads(base, WRITES_TOKEN, WRITERS, seconds, first=rounds * WRITERS)
            if harvest.poll() is not None:
                break
    finally:
        if harvest.poll() is None:
            harvest.kill()
        output = harvest.communicate()[0]
    took = time.perf_counter() - started
    return logs, {"exit": harvest.returncode, "s": round(took), "said": output.strip()[:80]}


@contextmanager
def _fresh_store(engine: str) -> Iterator[str]:
    """The URL of an empty store of this engine: an SQLite file in a temporary folder, or a
    schema of its own in the PostgreSQL database of ERRKB_TEST_POSTGRES_URL."""
    if engine == POSTGRESQL:
        with fresh_schema() as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{folder}/writes.db"


def _load_cell(result: LoadResult | str) -> str:
    if isinstance(result, str):
        return f"stopped: {result[:40]}"
    return f"{result.rps:,.0f} ({result.median_ms:.1f} / {result.p99_ms:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    default_full = Settings().cache_dir / "bench" / "full.db"
    parser.add_argument("--full", type=Path, default=default_full)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--sections", nargs="+", default=["latency", "load", "writes"])
    parser.add_argument("--write-seconds", type=float, default=20.0)
    parser.add_argument("--writes-release", default=WRITES_RELEASE)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare throughput with")
    parser.add_argument("--pairs", type=int, default=6, help="runs of each code (turns)")
    args = parser.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, `{' '.join(sys.argv)}`, {_uptime()}")
    measured = {"latency", "load", "wrk", "turns", "costly"} & set(args.sections)
    if not args.skip_build and ("build" in args.sections or measured):
        build_full_store(args.full)
    if measured:
        hot_paths(args)
    if "writes" in args.sections:
        codes = {"this": PROJECT_ROOT} | ({"baseline": args.baseline} if args.baseline else {})
        writes_beside_harvest(args.write_seconds, args.writes_release, codes)


def _uptime() -> str:
    """The machine's load average, as `uptime` prints it."""
    return "load average " + ", ".join(f"{n:.2f}" for n in os.getloadavg())


def hot_paths(args: argparse.Namespace) -> None:
    """Latency and throughput of the hot paths on the small and the full store."""
    texts = pastes()
    requests = requests_of(texts)
    with tempfile.TemporaryDirectory() as folder:
        small = Path(folder) / "small.db"
        build_small_store(f"sqlite:///{small}")
        stores = {"small": small, "full": args.full}
        if args.skip_build and not args.full.exists():  # measured on the small store alone
            del stores["full"]
        for name, path in stores.items():
            print(f"- {name} store: {describe(path)}")
        if "latency" in args.sections:
            results = {}
            with (
                serving(f"sqlite:///{small}") as small_port,
                serving(f"sqlite:///{args.full}") as full_port,
            ):
                ports = {"small": small_port, "full": full_port}
                for request in requests.values():  # a fresh store answered slowly at first
                    for port in ports.values():
                        drive([("127.0.0.1", port)], [request] * 200, 1, WARM_UP_S)
                for label, request in requests.items():
                    for name, result in latency(ports, request, args.seconds).items():
                        results[name, label] = result
            print("\n| one worker, c=1 | small median / p99 ms | full median / p99 ms | ratio |")
            print("|---|---|---|---|")
            for label in requests:
                a, b = results["small", label], results["full", label]
                print(
                    f"| {label} | {a.median_ms:.2f} / {a.p99_ms:.2f} | "
                    f"{b.median_ms:.2f} / {b.p99_ms:.2f} | {b.median_ms / a.median_ms:.2f}x |"
                )
        if "load" in args.sections:
            throughput(args, stores, requests)
        if "wrk" in args.sections:
            against_healthz(args, stores, texts)
        if "turns" in args.sections:
            turns = {"fresh 5 KB paste": fresh_paste(texts), "real pastes": real_pastes()}
            turns["GET /api/errors/{id}"] = requests["GET /api/errors/{id}"]
            in_turns(args, stores, turns)
        if "costly" in args.sections and "full" in stores:
            beside_costly_pastes(args, stores["full"], fresh_paste(texts))


def throughput(args: argparse.Namespace, stores: dict[str, Path], requests: dict) -> None:
    """POST /api/match (5 KB) and GET /api/errors/{id} at LOAD_CONNECTIONS connections on
    `--workers` processes, on each store; with `--baseline ROOT`, the code of that checkout
    too, each store served by both in turn (baseline first), so both meet the same load of
    the machine. wrk is the load tool where it is installed (bench/wrk.py)."""
    codes = {"this": PROJECT_ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    tool = "wrk, 1 thread" if wrk.available() else "tests/helpers/load.py"
    chosen = ["POST /api/match, 5 KB", "GET /api/errors/{id}"]
    print(
        f"\n{args.workers} workers, c={LOAD_CONNECTIONS}, {args.seconds:g} s a level, "
        f"load tool: {tool}"
    )
    print(
        "\n| store | code | "
        + " | ".join(f"{label} req/s (median / p99 ms)" for label in chosen)
        + " |"
    )
    print("|---|---|" + "---|" * len(chosen))
    for name, path in stores.items():
        for code, root in sorted(codes.items()):
            cells = []
            with serving(f"sqlite:///{path}", args.workers, root=root) as port:
                for label in chosen:
                    drive([("127.0.0.1", port)], [requests[label]] * 200, 8, WARM_UP_S)
                    try:
                        cells.append(_load_cell(_load(port, requests[label], args.seconds)))
                    except RuntimeError as error:  # a non-2xx answer or a failed socket
                        cells.append(f"stopped: {str(error)[:60]}")
            print(f"| {name} | {code} | " + " | ".join(cells) + " |", flush=True)


def against_healthz(args: argparse.Namespace, stores: dict[str, Path], texts: dict) -> None:
    """GET by id and a 5 KB match beside /healthz on the same server in the same run, with wrk:
    one worker at one connection (latency), then `--workers` at 64 connections (throughput).
    /healthz answers from memory, so its figure is what the server and the machine give a
    request that costs nothing, and a hot path's ratio to it is its own cost, whatever the
    machine's load. Each match sends a fresh paste (a number of its own on its first line),
    as people do: what a match costs is the match itself."""
    codes = {"this": PROJECT_ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    chosen = {
        "GET /healthz": get("/healthz"),
        "GET /api/errors/{id}": get(f"/api/errors/{RECORD_ID}"),
        "POST /api/match, 5 KB, fresh paste": fresh_paste(texts),
        "POST /api/match, real pastes in turn": real_pastes(),
    }
    for workers, connections in ((1, 1), (args.workers, LOAD_CONNECTIONS)):
        print(f"\n{workers} worker(s), c={connections}, wrk, {args.seconds:g} s a row, {_uptime()}")
        print("\n| store | code | request | req/s | median / p99 ms | x /healthz req/s |")
        print("|---|---|---|---|---|---|")
        for name, path in stores.items():
            for code, root in sorted(codes.items()):
                with serving(f"sqlite:///{path}", workers, root=root) as port:
                    healthz = None
                    for label, request in chosen.items():
                        wrk.drive(port, request, connections, _warm_up_s(request))
                        try:
                            result = wrk.drive(port, request, connections, args.seconds)
                        except RuntimeError as error:  # a non-2xx answer or a failed socket
                            print(f"| {name} | {code} | {label} | stopped: {str(error)[:60]} |")
                            continue
                        healthz = healthz or result.rps
                        print(
                            f"| {name} | {code} | {label} | {result.rps:,.0f} | "
                            f"{result.median_ms:.2f} / {result.p99_ms:.2f} | "
                            f"{result.rps / healthz:.2f} |",
                            flush=True,
                        )


def fresh_paste(texts: dict[str, bytes]) -> bytes:
    """POST /api/match of the 5 KB paste with a number of its own on its first line: a new
    paste each request, as people send them (bench/wrk.py)."""
    paste = texts["5 KB"].decode()
    return post_json("/api/match", json.dumps({"text": f"request {wrk.FRESH}\n{paste}"}).encode())


def real_pastes() -> list[bytes]:
    """POST /api/match of each paste copied from a public issue thread
    (tests/fixtures/real_pastes: 329, 1.5 KB at most, half under 320 bytes), as it was
    pasted; wrk sends them in turn (bench/wrk.py). Nothing keeps a match's reply, so a paste
    sent again is matched again: only what each record's memo holds is shared, as between
    people who paste the same error."""
    return [
        post_json("/api/match", json.dumps({"text": case["paste"]}).encode())
        for case in load_cases().values()
    ]


def _warm_up_s(request: bytes | list[bytes]) -> float:
    """How long `request` is sent before it is measured: the real pastes longer."""
    return WARM_UP_S if isinstance(request, bytes) else REAL_PASTES_WARM_UP_S


def in_turns(
    args: argparse.Namespace, stores: dict[str, Path], requests: dict[str, bytes | list[bytes]]
) -> None:
    """Each request at LOAD_CONNECTIONS connections on this code and `--baseline`'s, both
    serving at once, `--pairs` wrk runs each in turns; each pair's ratio and their median."""
    if args.baseline is None or not wrk.available():
        raise SystemExit("--sections turns needs --baseline ROOT and wrk")
    codes = {"this": PROJECT_ROOT, "baseline": args.baseline}
    print(
        f"\n{args.workers} workers, c={LOAD_CONNECTIONS}, wrk, "
        f"{args.pairs} pairs of {args.seconds:g} s runs in turns, {_uptime()}"
    )
    print(
        "\n| store | request | pair | this req/s (median / p99 ms) | baseline | this / baseline |"
    )
    print("|---|---|---|---|---|---|")
    for name, path in stores.items():
        with ExitStack() as servers:
            ports = {
                code: servers.enter_context(serving(f"sqlite:///{path}", args.workers, root=root))
                for code, root in codes.items()
            }
            for label, request in requests.items():
                for port in ports.values():
                    wrk.drive(port, request, LOAD_CONNECTIONS, _warm_up_s(request))
                ratios = []
                for pair in range(args.pairs):
                    order = list(codes) if pair % 2 == 0 else list(codes)[::-1]
                    runs = {
                        code: wrk.drive(ports[code], request, LOAD_CONNECTIONS, args.seconds)
                        for code in order
                    }
                    ratios.append(runs["this"].rps / runs["baseline"].rps)
                    cells = [_load_cell(runs["this"]), _load_cell(runs["baseline"])]
                    print(
                        f"| {name} | {label} | {pair + 1} | {' | '.join(cells)} "
                        f"| {ratios[-1]:.2f} |",
                        flush=True,
                    )
                print(
                    f"| {name} | {label} | median | | | {statistics.median(ratios):.2f} "
                    f"({min(ratios):.2f}-{max(ratios):.2f}) |"
                )


def costly_pastes(path: Path, count: int) -> list[str]:
    """`count` pastes just under 16 KB, each the class and message of some 250 records of the
    store (a different, random set each): every one of them a candidate to look up and rank."""
    engine = open_store(Settings(database_url=f"sqlite:///{path}"))
    with Session(engine) as session:
        messages = session.execute(select(Record.error_class, Record.error_message)).all()
    engine.dispose()
    random.Random(18).shuffle(messages)
    found: list[str] = []
    lines: list[str] = []
    for error_class, message in messages:
        lines.append(f"{error_class}: {message}"[:200])
        if sum(map(len, lines)) + len(lines) > COSTLY_PASTE_CHARS:
            found.append("\n".join(lines[:-1]))
            lines = lines[-1:]
            if len(found) == count:
                break
    return found


def beside_costly_pastes(args: argparse.Namespace, full: Path, request: bytes) -> None:
    """A fresh 5 KB paste's latency at one connection, alone and beside COSTLY_CLIENTS
    clients sending costly pastes (`costly_pastes`) for `--seconds`, one worker."""
    codes = {"this": PROJECT_ROOT} | ({"baseline": args.baseline} if args.baseline else {})
    costly = costly_pastes(full, COSTLY_PASTES)
    print(f"\nOne worker, full store, {COSTLY_CLIENTS} clients sending costly pastes, {_uptime()}")
    print(
        "\n| code | 5 KB alone: median / p99 ms | beside them | costly: statuses, median / max ms |"
    )
    print("|---|---|---|---|")
    for code, root in codes.items():
        with serving(f"sqlite:///{full}", 1, root=root) as port:
            wrk.drive(port, request, 1, WARM_UP_S)
            alone = wrk.drive(port, request, 1, args.seconds)
            stop = time.monotonic() + args.seconds + 2
            took: list[float] = []
            statuses: dict[int, int] = {}
            clients = [
                threading.Thread(
                    target=_send_costly,
                    args=(port, costly[n::COSTLY_CLIENTS], stop, took, statuses),
                )
                for n in range(COSTLY_CLIENTS)
            ]
            for client in clients:
                client.start()
            time.sleep(1)  # their first pastes are in
            beside = wrk.drive(port, request, 1, args.seconds)
            for client in clients:
                client.join()
        print(
            f"| {code} | {alone.median_ms:.2f} / {alone.p99_ms:.2f} | "
            f"{beside.median_ms:.2f} / {beside.p99_ms:.2f} | {dict(sorted(statuses.items()))}, "
            f"{statistics.median(took) * 1000:,.0f} / {max(took) * 1000:,.0f} |",
            flush=True,
        )


def _send_costly(
    port: int, texts: list[str], stop: float, took: list[float], statuses: dict[int, int]
) -> None:
    """One client sending `texts` in turn until `stop`: each paste's time and status."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
        for text in texts:
            if time.monotonic() > stop:
                return
            started = time.perf_counter()
            status = client.post("/api/match", json={"text": text}).status_code
            took.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1


def _load(port: int, request: bytes, seconds: float) -> LoadResult:
    if wrk.available():
        return wrk.drive(port, request, LOAD_CONNECTIONS, seconds)
    return drive([("127.0.0.1", port)], [request] * LOAD_REQUESTS, LOAD_CONNECTIONS, seconds)


if __name__ == "__main__":
    main()
