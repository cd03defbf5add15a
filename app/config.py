"""Settings for every part of errkb, read from ERRKB_* environment variables.

One place for every knob: nothing reads the environment
elsewhere, and nothing builds settings at import time, so tests pass their own.
"""

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import upstreams

# The folder holding data/, migrations/ and reproducers/: the checkout, or where an installed
# wheel's deployment put them (the Dockerfile sets ERRKB_PROJECT_ROOT).
PROJECT_ROOT = Path(os.environ.get("ERRKB_PROJECT_ROOT") or Path(__file__).resolve().parent.parent)


DEFAULT_LOCK_TIMEOUT_S = 5.0
"""How long a write waits for the database's write lock before it answers 503."""


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
    db_pool_size: int = Field(
        default=5,
        ge=1,
        description="PostgreSQL: connections each process keeps open (SQLite keeps "
        "SQLAlchemy's own pool). The server must allow replicas x workers x (size + overflow) "
        "connections.",
    )
    db_pool_max_overflow: int = Field(
        default=10, ge=0, description="PostgreSQL: connections opened beyond the pool at peaks."
    )
    db_pool_timeout_s: float = Field(
        default=30.0, gt=0, description="PostgreSQL: seconds a request waits for a connection."
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
        default=1,
        ge=1,
        description="Matches one server process computes at once; others wait for their turn "
        "within their deadline. Matching holds Python's GIL, so more at once would not be "
        "faster, only slow every other request (scale with `serve --workers`).",
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
        "has. Default: the older minor releases of the last year of vLLM and SGLang.",
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


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
