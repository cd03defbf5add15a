"""Dataset-wide and operator endpoints: /api/stats, /api/stats/charts, /healthz, /readyz,
/metrics."""

import logging
import threading
from typing import Any

import anyio
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app.api.responses import problems
from app.config import Settings
from app.curation import stats
from app.matching.matcher import Freshness
from app.ops.metrics import CONTENT_TYPE
from app.records import service as records
from app.serving.deps import DaysQuery, ServicesDep, SessionDep, services_of
from app.wire.records import DatasetStats
from app.wire.stats import StatsCharts

router = APIRouter(tags=["meta"])
log = logging.getLogger(__name__)
READINESS_CHECKS = 2
_checks = threading.BoundedSemaphore(READINESS_CHECKS)  # database checks running at once


@router.get("/api/stats", response_model=DatasetStats)
def read_stats(session: SessionDep) -> DatasetStats:
    """Record counts in all, per repo and per review state, and the dataset version."""
    return DatasetStats.model_validate(records.dataset_stats(session))


@router.get("/api/stats/charts", response_model=StatsCharts, responses=problems(422))
def read_stats_charts(
    services: ServicesDep,
    session: SessionDep,
    days: DaysQuery = stats.DEFAULT_DAYS,
) -> StatsCharts:
    """Records per repo and state, hits per day, most-hit unexplained errors, reproducer
    status per record, drift per release: the data of the /stats page."""
    services.hits.flush()
    vocabulary = services.matcher.vocabulary()
    return StatsCharts.model_validate(stats.overview(session, services.settings, vocabulary, days))


def _index_json(freshness: Freshness | None) -> dict[str, Any]:
    """Whether this process's match index holds the store's newest writes."""
    if freshness is None:
        return {"version": None, "datasetVersion": None, "stale": False, "behindS": 0}
    return {
        "version": freshness.index_version,
        "datasetVersion": freshness.dataset_version,
        "stale": freshness.stale,
        "behindS": round(freshness.behind_s, 3),
    }


@router.get("/healthz")
async def read_health(request: Request) -> dict[str, Any]:
    """Liveness, from memory alone: the process answers. `index` says whether the match
    index is behind the store as of the store's dataset version last read (each match, the
    follower's poll every ERRKB_INDEX_POLL_S, /readyz). It reads no database: a health check
    that waited for a pool connection froze the event loop, and every replica under load
    looked dead to its load balancer. It takes no dependency either (a round of FastAPI's
    dependency solving for the one attribute it reads: app.serving.deps.services_of)."""
    matcher = services_of(request).matcher
    return {"status": "ok", "index": _index_json(matcher.last_freshness())}


@router.get("/readyz", responses={503: {"description": "Starting, stale, or a step failed"}})
async def read_readiness(services: ServicesDep) -> JSONResponse:
    """Readiness: 503 while the default harvest runs or the match index loads, after either
    failed (`failed` names the step; the log has the error), while the index has been
    behind the store longer than ERRKB_INDEX_STALE_AFTER_S (`stale`), or when the database
    does not answer within ERRKB_READINESS_TIMEOUT_S (`unreachable`); `background` shows the
    older releases being harvested while the server answers."""
    settings, readiness = services.settings, services.readiness
    ready, pending, failed = readiness.state()
    dataset_version = await _dataset_version(services.engine, settings)
    if dataset_version is None:
        status, index = "unreachable", _index_json(services.matcher.last_freshness())
    else:
        freshness = services.matcher.freshness(dataset_version)
        index = _index_json(freshness)
        lagging = ready and freshness.behind_s > settings.index_stale_after_s
        status = (
            "failed" if failed else "starting" if not ready else "stale" if lagging else "ready"
        )
    body = {"status": status, "pending": pending, "failed": failed, "index": index}
    background = readiness.background()
    if background is not None:
        body["background"] = background
    return JSONResponse(body, status_code=200 if status == "ready" else 503)


async def _dataset_version(engine: Engine, settings: Settings) -> str | None:
    """The store's dataset version, read in a thread of its own (not one of the request
    threads, which may all be busy) within ERRKB_READINESS_TIMEOUT_S; None when the database
    did not answer in time or failed (logged). Checks still running when the next probe
    comes are not added to: that probe answers None at once."""
    if not _checks.acquire(blocking=False):
        return None

    def read() -> str:
        try:
            with Session(engine) as session:
                return records.dataset_version(session)
        finally:
            _checks.release()

    try:
        with anyio.fail_after(settings.readiness_timeout_s):
            return await anyio.to_thread.run_sync(
                read, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
            )
    except TimeoutError:
        log.warning("readiness: the database did not answer in %s s", settings.readiness_timeout_s)
    except SQLAlchemyError:
        log.exception("readiness: the database failed")
    return None


@router.get("/metrics", response_class=Response)
def read_metrics(services: ServicesDep, session: SessionDep) -> Response:
    """Prometheus metrics in the text exposition format."""
    version = records.dataset_version(session)
    body = services.metrics.exposition(version, services.matcher.patterns)
    return Response(body, media_type=CONTENT_TYPE)
