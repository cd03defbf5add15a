"""Dataset-wide endpoints: /api/stats and /healthz."""

from fastapi import APIRouter
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
def read_health(session: SessionDep) -> dict[str, str]:
    """Liveness and database reachability."""
    session.execute(text("SELECT 1"))
    return {"status": "ok"}
