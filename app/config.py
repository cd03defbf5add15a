"""Settings for every part of errkb, read from ERRKB_* environment variables.

One place for every knob: nothing reads the environment
elsewhere, and nothing builds settings at import time, so tests pass their own.
"""

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import upstreams

# The folder holding data/, migrations/ and reproducers/: the checkout, or where an installed
# wheel's deployment put them (the Dockerfile sets ERRKB_PROJECT_ROOT).
PROJECT_ROOT = Path(os.environ.get("ERRKB_PROJECT_ROOT") or Path(__file__).resolve().parent.parent)


DEFAULT_LOCK_TIMEOUT_S = 5.0
"""How long a write waits for the database's write lock before it answers 503."""

MOST_DEFAULT_THREADS = 8
"""The largest default of ERRKB_THREADS, whatever the CPU count: more processes (`serve
--workers`) use more CPUs; more threads in one process only share its GIL."""


def _default_threads() -> int:
    """Twice the CPUs, at most MOST_DEFAULT_THREADS: the match slots (one per CPU) and as many
    again for reads while matches compute. Python runs one thread at a time, and every busy
    thread is one more that the event loop, and so /healthz and /readyz, waits behind for the
    GIL: more threads than that cost both throughput and the probes' p99 on a 2-core
    machine (bench/bench_hostile.py --sections headers, with ERRKB_THREADS set)."""
    return min(MOST_DEFAULT_THREADS, 2 * (os.cpu_count() or 1))


SPARE_CONNECTIONS = 5
"""Connections used outside the request threads: the start-up and follow threads, the
/readyz check, a hit flush and a small paste matched on the event loop (app.serving.matches). The
pool holds at least ERRKB_THREADS + these, so that a request thread never waits for a
connection that only another request could give back."""


def _default_cache_dir() -> Path:
    """Upstream wheels live outside git, under the user's cache directory."""
    return Path.home() / ".cache" / "errkb"


class Settings(BaseSettings):
    """Everything an operator may change; each field maps to ERRKB_<NAME>."""

    model_config = SettingsConfigDict(env_prefix="ERRKB_", extra="ignore")

    database_url: str = Field(
        default=f"sqlite:///{PROJECT_ROOT / 'var' / 'errkb.db'}",
        description="SQLAlchemy URL of the store; the embedded default is a SQLite file.",
    )
    threads: int = Field(
        default_factory=_default_threads,
        ge=1,
        description="Requests one process runs at once in its thread pool (default: twice "
        "the CPU count, at most 8; every handler "
        "that reads the database or matches runs there; the rest wait for a thread). The "
        "database pool must hold ERRKB_THREADS + 5 connections (size + overflow), checked "
        "at start: a thread must never wait on a connection that only another request, "
        "itself waiting for the event loop, could give back.",
    )
    db_pool_size: int = Field(
        default=5,
        ge=1,
        description="Connections each process keeps open (SQLite's cost next to nothing). "
        "A PostgreSQL server must allow replicas x workers x (size + overflow) connections.",
    )
    db_pool_max_overflow: int = Field(
        default=MOST_DEFAULT_THREADS + 1,
        ge=0,
        description="Connections opened beyond the pool at peaks; size + overflow must be at "
        "least ERRKB_THREADS + 5.",
    )
    db_pool_timeout_s: float = Field(
        default=30.0, gt=0, description="Seconds a request waits for a pool connection."
    )
    db_pool_recycle_s: float = Field(
        default=1800.0,
        description="PostgreSQL: reopen connections older than this (-1: never), before a "
        "proxy or firewall drops them.",
    )
    db_pool_pre_ping: bool = Field(
        default=True,
        description="PostgreSQL: test a connection before use, so a restarted server costs no "
        "failed request.",
    )
    data_dir: Path = Field(
        default=PROJECT_ROOT / "data" / "records",
        description="Curated records imported on start by `errkb serve`.",
    )
    runs_dir: Path = Field(
        default=PROJECT_ROOT / "data" / "runs",
        description="Reproducer runs made elsewhere (a GPU machine, CI) and kept with the "
        "data: imported on start by `errkb serve`, each once.",
    )
    admin_token: str | None = Field(
        default=None, description="Bearer token for writes; with none set, writes answer 403."
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, description="Largest request body accepted (413 above)."
    )
    max_paste_bytes: int = Field(
        default=1024 * 1024,
        description="Largest pasted traceback or log accepted by matching; a batch's texts "
        "together may not be larger either.",
    )
    match_deadline_s: float = Field(
        default=5.0,
        gt=0,
        description="Seconds one match request (a paste or a batch) may compute before it "
        "stops and answers 503.",
    )
    match_concurrency: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        ge=1,
        description="Matches one server process computes at once (default: the CPU count); "
        "others wait for their turn within their deadline. One at a time made every paste "
        "wait behind the largest one; many more than the CPUs would only share the GIL "
        "(scale with `serve --workers`).",
    )
    paste_budget_bytes: int = Field(
        default=2 * 1024 * 1024,
        ge=0,
        description="Bytes of paste one client (by its address; behind a proxy, name the "
        "proxy in ERRKB_FORWARDED_ALLOW_IPS so that is the client's) may send to matching per "
        "minute, in bursts of up to as much; past it matching answers 429 with Retry-After, so one "
        "client looping large pastes cannot take every other client's matching time "
        "(0: no budget).",
    )
    large_pastes_in_flight_bytes: int = Field(
        default=1024 * 1024,
        ge=0,
        description="Bytes of large pastes (over 16 KiB) the server matches at once, whoever "
        "sends them; a large paste waits for room (holding no request thread), and one that "
        "finds none within ERRKB_MATCH_DEADLINE_S answers 503 with Retry-After. Clients with "
        "many addresses never run out of their own paste budgets: this keeps them from taking "
        "every thread and match slot, so small pastes never wait behind them (0: no limit).",
    )
    forwarded_allow_ips: str | None = Field(
        default=None,
        description="Addresses (or networks, 10.0.0.0/8) of the proxies whose X-Forwarded-For "
        "and X-Forwarded-Proto `errkb serve` believes, comma-separated; * believes anyone. A "
        "client is then known by the address the proxy forwards: its paste budget is its own, "
        "not the proxy's. None: uvicorn's own default (its FORWARDED_ALLOW_IPS, else "
        "127.0.0.1 and ::1).",
    )
    body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a request body may take to arrive before the request answers "
        "408: a client that trickles its body (slow loris) does not hold the server.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a request's headers may take to arrive (from the connection "
        "opening, or the previous response) before the connection is closed, with a 408 if "
        "some arrived: a client that trickles its headers (slow loris) does not hold a "
        "connection. Applies where `errkb serve` runs the server.",
    )
    readiness_timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="Seconds /readyz waits for the database before it answers 503: a probe "
        "must answer in time even when the database does not.",
    )
    reply_cache_entries: int = Field(
        default=2_000,
        ge=0,
        description="Record replies each process keeps for as long as the store does not "
        "change: a record's JSON (GET /api/errors/{id}), kept under the dataset and "
        "reproducers versions it was made at and dropped when they move (0: none kept). "
        "Match replies are never kept: they quote the paste.",
    )
    lock_timeout_s: float = Field(
        default=DEFAULT_LOCK_TIMEOUT_S,
        ge=0,
        description="Seconds a write waits for the database's write lock before it answers "
        "503 with Retry-After.",
    )
    cache_dir: Path = Field(
        default_factory=_default_cache_dir,
        description="Where downloaded upstream wheels and built indexes are cached.",
    )
    cuda_build_libraries: bool = Field(
        default=True,
        description="Harvest the message literals of torch's CUDA build (libtorch_cuda.so, "
        "libc10_cuda.so: the caching allocator, NCCL, cuDNN, the CUDA kernels' checks) for "
        "every torch release harvested, whatever build is installed: its Linux CUDA wheel "
        "(0.5-0.9 GB) is downloaded once per release and only the libraries' read-only data "
        "kept in the cache (about 30 MB); so are the CUDA runtime's and NCCL's error codes, "
        "from the NVIDIA wheels the release requires (2 MB and 0.2 GB downloads, a few MB "
        "kept). false: only the installed build's libraries, no CUDA or NCCL error codes.",
    )
    reproducers_dir: Path = Field(
        default=PROJECT_ROOT / "reproducers", description="Folder of reproducer scripts."
    )
    reproducer_timeout_s: float = Field(
        default=300.0, description="Seconds a reproducer subprocess may run before it is killed."
    )
    default_releases: list[str] = Field(
        default_factory=upstreams.current_releases,
        description="Upstream releases `errkb serve` harvests when the store lacks them.",
    )
    older_releases: list[str] = Field(
        default_factory=upstreams.older_releases,
        description="Older releases harvested in the background once the server is ready "
        "when it harvests on start: each adds where its raise sites are in that "
        "release, and a draft for each message it raised that the newer release no longer "
        "has. Default: the older releases of vLLM back to 0.2 and SGLang back to 0.1.",
    )
    harvest_on_start: bool = Field(
        default=False,
        description="Harvest the default releases the store lacks in the background when the "
        "server starts (`errkb serve` sets it from --harvest/--no-harvest); /readyz waits.",
    )
    record_hits: bool = Field(
        default=True,
        description="Count a hit (record id or scrubbed template, and the day) per match and "
        "record-page view, for the curation queue and /stats.",
    )
    queue_templates_per_day: int = Field(
        default=1000,
        ge=1,
        description="Most unexplained-error templates kept per day: past it the least-hit "
        "are dropped, so anonymous pastes cannot grow the curation queue (and slow it) "
        "without bound.",
    )
    index_poll_s: float = Field(
        default=1.0,
        ge=0,
        description="Seconds between looks at the dataset version, to bring the match index up "
        "to writes made by other processes or replicas in the background (0: only on requests).",
    )
    index_stale_after_s: float = Field(
        default=60.0,
        gt=0,
        description="/readyz answers 503 once the match index has been behind the store this "
        "long (a replica that cannot keep up should not get traffic).",
    )
    settle_heap: bool = Field(
        default=True,
        description="Once the match index is loaded, freeze what start-up built out of the "
        "garbage collector's way and collect young objects less often, so that a full "
        "collection does not stall every request. Tests that build many apps in "
        "one process turn it off.",
    )
    server: str | None = Field(
        default=None,
        description="URL of an errkb server (https://errkb.example.com): `errkb match`, "
        "`search`, `show`, `run` and `explain`, the Python hook and the pytest plugin ask its "
        "API instead of the local store.",
    )
    server_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds the CLI waits for each answer of the server before it gives up "
        "with a one-line error.",
    )
    hook_timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="Seconds the Python hook and the pytest plugin wait for an explanation "
        "(from the server, or the local store without one) before they add nothing: an "
        "explanation must never hold up a crashing program or a test run.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="text: uvicorn's usual logs; json: one JSON object a line."
    )

    @model_validator(mode="after")
    def _pool_holds_the_threads(self) -> "Settings":
        """Refuse a pool smaller than the threads that use it: with fewer connections than
        threads, requests wait on each other for connections and the server stalls."""
        pool = self.db_pool_size + self.db_pool_max_overflow
        if pool < self.threads + SPARE_CONNECTIONS:
            raise ValueError(
                f"ERRKB_DB_POOL_SIZE + ERRKB_DB_POOL_MAX_OVERFLOW ({pool}) must be at least "
                f"ERRKB_THREADS + {SPARE_CONNECTIONS} ({self.threads + SPARE_CONNECTIONS})"
            )
        return self


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
