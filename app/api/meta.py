"""Dataset-wide and operator endpoints: /api/stats, /api/stats/charts, /healthz, /readyz,
/metrics."""

from datetime import date, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import text

from app import records
from app.api.curation import QueueItemOut, queue_item_out
from app.api.deps import SessionDep, SettingsDep
from app.api.responses import problems
from app.ops import stats
from app.ops.metrics import CONTENT_TYPE
from app.schemas import ApiModel, DatasetStats, dataset_stats_out

router = APIRouter(tags=["meta"])
DaysQuery = Annotated[
    int, Query(ge=1, le=stats.MAX_DAYS, description="Days of hits to show, today included.")
]


@router.get("/api/stats", response_model=DatasetStats)
def read_stats(session: SessionDep) -> DatasetStats:
    """Record counts in all, per repo and per review state, and the dataset version."""
    return dataset_stats_out(records.dataset_stats(session))


class HitsOfDay(ApiModel):
    """Hits of one day by what answered them."""

    day: date
    reviewed: int
    draft: int
    unexplained: int


class ReproducerStatusOut(ApiModel):
    """A record's reproducer: recent runs by status, the latest run's status and start."""

    record_id: str
    runs: dict[str, int]
    latest_status: str | None
    latest_at: datetime | None


class StatsCharts(ApiModel):
    """GET /api/stats/charts: the data of every chart of the /stats page."""

    records_per_repo: dict[str, dict[str, int]]
    hits_per_day: list[HitsOfDay]
    most_hit: list[QueueItemOut]
    reproducers: list[ReproducerStatusOut]
    drift_per_release: dict[str, dict[str, int]]
    dataset_version: str


def stats_charts_out(overview: stats.Overview) -> StatsCharts:
    """The API shape of the overview."""
    return StatsCharts(
        records_per_repo=overview.records_per_repo,
        hits_per_day=[HitsOfDay(day=day, **hits) for day, hits in overview.hits_per_day.items()],
        most_hit=[queue_item_out(item) for item in overview.most_hit],
        reproducers=[
            ReproducerStatusOut.model_validate(status, from_attributes=True)
            for status in overview.reproducers
        ],
        drift_per_release=overview.drift_per_release,
        dataset_version=overview.dataset_version,
    )


@router.get("/api/stats/charts", response_model=StatsCharts, responses=problems(422))
def read_stats_charts(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    days: DaysQuery = stats.DEFAULT_DAYS,
) -> StatsCharts:
    """Records per repo and state, hits per day, most-hit unexplained errors, reproducer
    status per record, drift per release: the data of the /stats page."""
    request.app.state.hits.flush()
    return stats_charts_out(stats.overview(session, settings, days))


@router.get("/healthz")
async def read_health(request: Request) -> dict[str, str]:
    """Liveness and database reachability."""
    # On the event loop (SELECT 1 takes microseconds), not in the thread pool, where it
    # would queue behind the requests that fill it (issue 10).
    with request.app.state.engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Starting, or a start-up step failed"}})
def read_readiness(request: Request) -> JSONResponse:
    """Readiness: 503 while the default harvest runs or the match index loads, or after
    either failed (the reason is in `failed`); `background` shows the older releases being
    harvested while the server answers."""
    readiness = request.app.state.readiness
    ready, pending, failed = readiness.state()
    status = "ready" if ready else "failed" if failed else "starting"
    body = {"status": status, "pending": pending, "failed": failed}
    background = readiness.background()
    if background is not None:
        body["background"] = background
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get("/metrics", response_class=Response)
def read_metrics(request: Request, session: SessionDep) -> Response:
    """Prometheus metrics in the text exposition format."""
    state = request.app.state
    body = state.metrics.exposition(records.dataset_version(session), state.matcher.patterns)
    return Response(body, media_type=CONTENT_TYPE)
