"""Dataset-wide endpoints: /api/stats and /healthz."""

from fastapi import APIRouter, Request
from sqlalchemy import text

from app import records
from app.api.deps import SessionDep
from app.schemas import DatasetStats, dataset_stats_out

router = APIRouter(tags=["meta"])


@router.get("/api/stats", response_model=DatasetStats)
def read_stats(session: SessionDep) -> DatasetStats:
    """Record counts in all, per repo and per review state, and the dataset version."""
    return dataset_stats_out(records.dataset_stats(session))


@router.get("/healthz")
async def read_health(request: Request) -> dict[str, str]:
    """Liveness and database reachability."""
    # On the event loop (SELECT 1 takes microseconds), not in the thread pool, where it
    # would queue behind the requests that fill it (issue 10).
    with request.app.state.engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return {"status": "ok"}
