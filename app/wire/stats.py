"""GET /api/stats/charts on the wire: the data of every chart of the /stats page."""

from datetime import date, datetime
from typing import Any

from pydantic import Field, field_validator

from app.wire.base import ApiModel
from app.wire.curation import QueueItemOut


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
    latest: str | None = Field(
        description="The latest run in a sentence: where it ran, on what, and when."
    )


class StatsCharts(ApiModel):
    """GET /api/stats/charts: the data of every chart of the /stats page."""

    records_per_repo: dict[str, dict[str, int]]
    hits_per_day: list[HitsOfDay]
    most_hit: list[QueueItemOut]
    reproducers: list[ReproducerStatusOut]
    reproducer_counts: dict[str, int] = Field(
        description="Curated reproducers, generated ones, and generated ones whose latest run "
        "passed on the real release (verified)."
    )
    drift_per_release: dict[str, dict[str, int]]
    dataset_version: str

    @field_validator("hits_per_day", mode="before")
    @classmethod
    def _by_day(cls, hits: Any) -> Any:
        """The overview counts hits by day: one entry per day here."""
        if isinstance(hits, dict):
            return [{"day": day, **counts} for day, counts in hits.items()]
        return hits
