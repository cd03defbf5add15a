"""The overview behind /stats and /api/stats/charts: what the dataset holds, how it is used,
whether its reproducers pass and its raise sites hold.

One service function, `overview`, returns plain data; the API returns it as JSON and the page
draws it as charts.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import and_, case, func, or_, select
from sqlmodel import Session, col

from app.config import Settings
from app.curation.hits import RECORD, TEMPLATE, today
from app.curation.queue import UNEXPLAINED, QueueItem, curation_queue
from app.records import service as records
from app.records.vocabulary import Vocabulary
from app.reproducers import runner
from app.reproducers.generation import verification
from app.store.tables import DriftCheck, Hit, Record

DEFAULT_DAYS = 30
MAX_DAYS = 366
MOST_HIT = 10
HIT_STATES = (records.REVIEWED, records.DRAFT, UNEXPLAINED)
RUN_STATUSES = ("passed", "failed", "error", "skipped")
DRIFT_STATUSES = ("same", "moved", "changed", "gone")


@dataclass(frozen=True, slots=True)
class ReproducerStatus:
    """A record's reproducer: its recent runs by status, and how and when it last ran."""

    record_id: str
    runs: dict[str, int]
    latest_status: str | None
    latest_at: datetime | None
    latest: str | None  # the latest run in a sentence: "Reproduced on NVIDIA H200 (...) on ..."


@dataclass(frozen=True, slots=True)
class Overview:
    """Everything /stats draws."""

    records_per_repo: dict[str, dict[str, int]]
    hits_per_day: dict[date, dict[str, int]]
    most_hit: list[QueueItem]
    reproducers: list[ReproducerStatus]
    reproducer_counts: dict[str, int]  # curated, generated, verified (generated that passed)
    drift_per_release: dict[str, dict[str, int]]
    dataset_version: str


def _records_per_repo(session: Session) -> dict[str, dict[str, int]]:
    per_repo: dict[str, dict[str, int]] = {}
    statement = select(col(Record.repo), col(Record.review_state), func.count()).group_by(
        col(Record.repo), col(Record.review_state)
    )
    for repo, state, count in session.execute(statement):
        per_repo.setdefault(repo, {records.DRAFT: 0, records.REVIEWED: 0})[state] = count
    return dict(sorted(per_repo.items()))


def _hits_per_day(session: Session, days: int) -> dict[date, dict[str, int]]:
    """Hits of the last `days` days by what answered them: a reviewed record, a draft, or
    nothing (a template); days without hits are there with zeros, so gaps show."""
    first = today() - timedelta(days=days - 1)
    per_day = {first + timedelta(days=n): dict.fromkeys(HIT_STATES, 0) for n in range(days)}
    state = case((col(Hit.kind) == TEMPLATE, UNEXPLAINED), else_=col(Record.review_state))
    statement = (
        select(col(Hit.day), state, func.sum(col(Hit.count)))
        .select_from(Hit)
        .outerjoin(Record, and_(col(Hit.kind) == RECORD, col(Record.id) == col(Hit.subject)))
        .where(col(Hit.day) >= first, or_(col(Hit.kind) == TEMPLATE, col(Record.id).is_not(None)))
        .group_by(col(Hit.day), state)
    )
    for day, answered_by, count in session.execute(statement):
        if day in per_day:
            per_day[day][answered_by] = int(count)
    return per_day


def _reproducers(session: Session, settings: Settings) -> list[ReproducerStatus]:
    statuses = []
    for info in runner.all_reproducers(settings):
        runs = runner.latest_runs(session, info.record_id)
        counts = Counter(run.status for run in runs)
        latest = runs[0] if runs else None
        statuses.append(
            ReproducerStatus(
                info.record_id,
                {status: counts[status] for status in RUN_STATUSES},
                latest.status if latest else None,
                latest.started_at if latest else None,
                latest.summary if latest else None,
            )
        )
    return statuses


def _drift_per_release(session: Session) -> dict[str, dict[str, int]]:
    """The latest check of each record in each release, counted by status per release."""
    latest = (
        select(func.max(DriftCheck.id))
        .group_by(DriftCheck.record_id, DriftCheck.package, DriftCheck.version)
        .scalar_subquery()
    )
    statement = (
        select(
            col(DriftCheck.package), col(DriftCheck.version), col(DriftCheck.status), func.count()
        )
        .where(col(DriftCheck.id).in_(latest))
        .group_by(col(DriftCheck.package), col(DriftCheck.version), col(DriftCheck.status))
    )
    per_release: dict[str, dict[str, int]] = {}
    for package, version, status, count in session.execute(statement):
        release = per_release.setdefault(f"{package}=={version}", dict.fromkeys(DRIFT_STATUSES, 0))
        release[status] = count
    return dict(sorted(per_release.items()))


def overview(
    session: Session, settings: Settings, vocabulary: Vocabulary, days: int = DEFAULT_DAYS
) -> Overview:
    """The dataset, its use over the last `days` days, its reproducers and its drift; an
    unexplained error's template shows the words of `vocabulary` (curation_queue)."""
    return Overview(
        records_per_repo=_records_per_repo(session),
        hits_per_day=_hits_per_day(session, days),
        most_hit=curation_queue(session, vocabulary, limit=MOST_HIT).items,
        reproducers=_reproducers(session, settings),
        reproducer_counts={
            "curated": len(runner.all_reproducers(settings)),
            **verification.verified_counts(session),
        },
        drift_per_release=_drift_per_release(session),
        dataset_version=records.dataset_version(session),
    )
