"""Start-up work that runs while the server already answers: harvest, then the match index,
then, once ready, the older releases.

The server listens at once, so an operator (or a load balancer) can tell what it is doing:
/healthz answers, and /readyz stays 503 with the pending steps until they are done.
Processes of one store take turns under a lock: the first harvests and builds
the index (saved to the cache), the others then find both done. The lock is the store's
(app.store): a file lock for SQLite's workers on one machine, an advisory lock for
PostgreSQL's replicas on any number of machines, so the default harvest runs once.
The older releases (ERRKB_OLDER_RELEASES) come after readiness, one at a time under the same
lock, their progress in /readyz's `background`; one that fails is reported and the next one
tried.

A release's source is parsed and its drafts checked in a child process of its own
(`_extracted`), and only stored here: the parsing is pure Python, and in the server's
process every request thread, writes included, would wait for the GIL behind it (a write
holds the write turn while it waits; `bench/bench_store.py --sections writes`). The
child's memory, a release's syntax trees, goes back when it ends.
"""

import logging
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager

from sqlalchemy import Engine
from sqlmodel import Session

from app import store
from app.config import Settings
from app.harvest import drafts
from app.lifecycle.readiness import Readiness
from app.matching.matcher import Matcher
from app.ops import heap
from app.ops.metrics import Metrics
from app.reproducers import runs
from app.store.engine import unit_of_work
from app.upstreams.release_cache import Upstream

LOAD_INDEX = "load the match index"
log = logging.getLogger(__name__)


def harvest_step(spec: str) -> str:
    """The readiness step of harvesting one release."""
    return f"harvest {spec}"


def startup_lock(engine: Engine) -> AbstractContextManager:
    """One process of this store at a time, released if the process dies."""
    return store.backend(engine).exclusive(engine, "start-up")


def _harvest(engine: Engine, releases: Upstream, spec: str) -> None:
    """Harvest one release into the store unless it is there already."""
    with Session(engine) as session:
        if drafts.is_harvested(session, spec):
            return
    release = drafts.resolve_release(spec, releases=releases)
    extracted = _extracted(release)
    with unit_of_work(engine) as session:
        counts = drafts.store_drafts(session, release, extracted)
    result = extracted.result
    log.info(
        "harvested %s: %d files, %d raise sites, %d drafts created, %d updated",
        spec,
        result.files,
        result.raise_sites,
        counts.created,
        counts.updated,
        extra={"release": spec, "drafts": counts.created + counts.updated},
    )


def _releases(settings: Settings) -> Upstream:
    """The upstream cache harvest downloads into, with the build libraries the settings ask
    for (ERRKB_CUDA_BUILD_LIBRARIES)."""
    return Upstream(settings.cache_dir, build_libraries=settings.cuda_build_libraries)


def _import_kept_runs(settings: Settings, engine: Engine) -> None:
    """The runs data/runs/ keeps of drafts a harvest just stored (verified generated
    reproducers, verified on the current releases): `errkb serve` imported the others before
    it served; these waited for the default harvest."""
    if not settings.runs_dir.is_dir():
        return
    with unit_of_work(engine) as session:
        report = runs.import_runs(
            session, [settings.runs_dir], origin_root=settings.runs_dir.parent
        )
    if report.added or report.refused:
        log.info(
            "kept runs: %d added, %d refused",
            report.added,
            len(report.refused),
            extra={"runs": report.added},
        )


def _extracted(release: drafts.Release) -> drafts.Extracted:
    """drafts.extract_release in a child process started for it (spawned: a fork would copy
    the server's threads' locks and connections in whatever state they are)."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        return child.submit(drafts.extract_release, release).result()


def start_up(
    settings: Settings, engine: Engine, matcher: Matcher, readiness: Readiness, metrics: Metrics
) -> None:
    """Harvest the default releases the store lacks (ERRKB_HARVEST_ON_START), load the index.

    A step that fails leaves the server unready, the step named; the rest is not tried.
    """
    specs = settings.default_releases if settings.harvest_on_start else []
    readiness.plan([harvest_step(spec) for spec in specs])
    step = LOAD_INDEX
    try:
        with startup_lock(engine):
            for spec in specs:
                step = harvest_step(spec)
                _harvest(engine, _releases(settings), spec)
                readiness.done(step)
            _import_kept_runs(settings, engine)
            step = LOAD_INDEX
            started = time.perf_counter()
            with Session(engine) as session:
                patterns = len(matcher.index(session))
            metrics.index_build_seconds.set(time.perf_counter() - started)
            if settings.settle_heap:  # before ready: no request waits on a full collection
                heap.settle()
            readiness.done(step)
            log.info("match index ready: %d patterns", patterns, extra={"patterns": patterns})
    except Exception:  # a thread's error: /readyz names the step, the log has the error
        readiness.fail(step)
        log.exception("start-up step failed: %s", step)
        return
    older = settings.older_releases if settings.harvest_on_start else []
    harvest_older(settings, engine, readiness, older)


def harvest_older(
    settings: Settings, engine: Engine, readiness: Readiness, specs: list[str]
) -> None:
    """Harvest the older releases the store lacks, after the server is ready; each one's
    drafts and locations reach the match index on the next request (the dataset version
    changed)."""
    steps = [harvest_step(spec) for spec in specs]
    readiness.plan_background(steps)
    for spec, step in zip(specs, steps, strict=True):
        readiness.background_step(step, running=True)
        try:
            with startup_lock(engine):
                _harvest(engine, _releases(settings), spec)
        except Exception:  # reported, and the next release is still tried
            readiness.background_step(step, failed=True)
            log.exception("background step failed: %s", step)
        else:
            readiness.background_step(step)
