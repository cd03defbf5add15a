"""Start-up work that runs while the server already answers: harvest, then the match index.

`errkb serve` used to harvest the default releases and build the index before listening, so
nothing could tell an operator (or a load balancer) what it was doing. Now the server listens
at once, /healthz answers, and /readyz stays 503 with the pending steps until they are done
(issue 13). Processes of one store take turns under a lock: the first harvests and builds
the index (saved to the cache), the others then find the harvest done. The lock is the
store's (app.store): a file lock for SQLite's workers on one machine, an advisory lock for
PostgreSQL's replicas on any number of machines, so the default harvest runs once (issue 14).
"""

import logging
import time
from contextlib import AbstractContextManager

from sqlalchemy import Engine
from sqlmodel import Session

from app import drafts, store
from app.config import Settings
from app.matching.service import Matcher
from app.ops.metrics import Metrics
from app.ops.readiness import Readiness

LOAD_INDEX = "load the match index"
log = logging.getLogger(__name__)


def harvest_step(spec: str) -> str:
    """The readiness step of harvesting one release."""
    return f"harvest {spec}"


def startup_lock(engine: Engine) -> AbstractContextManager:
    """One process of this store at a time, released if the process dies."""
    return store.backend(engine).exclusive(engine, "start-up")


def _harvest(engine: Engine, spec: str) -> None:
    with Session(engine) as session:
        if drafts.is_harvested(session, spec):
            return
        release = drafts.resolve_release(spec)
        result, counts = drafts.harvest_release(session, release)
    log.info(
        "harvested %s: %d files, %d raise sites, %d drafts created, %d updated",
        spec,
        result.files,
        result.raise_sites,
        counts.created,
        counts.updated,
        extra={"release": spec, "drafts": counts.created + counts.updated},
    )


def start_up(
    settings: Settings, engine: Engine, matcher: Matcher, readiness: Readiness, metrics: Metrics
) -> None:
    """Harvest the default releases the store lacks (ERRKB_HARVEST_ON_START), load the index.

    A step that fails leaves the server unready with the reason; the rest is not tried.
    """
    specs = settings.default_releases if settings.harvest_on_start else []
    readiness.plan([harvest_step(spec) for spec in specs])
    step = LOAD_INDEX
    try:
        with startup_lock(engine):
            for spec in specs:
                step = harvest_step(spec)
                _harvest(engine, spec)
                readiness.done(step)
            step = LOAD_INDEX
            started = time.perf_counter()
            with Session(engine) as session:
                patterns = len(matcher.index(session))
            metrics.index_build_seconds.set(time.perf_counter() - started)
            readiness.done(step)
            log.info("match index ready: %d patterns", patterns, extra={"patterns": patterns})
    except Exception as error:  # a thread's error: kept for /readyz and logged, not lost
        readiness.fail(step, str(error))
        log.exception("start-up step failed: %s", step)
