"""What a page and its JSON twin both show, gathered once (docs/architecture.md,
convention 1): the record page (/errors/{id}) renders a RecordView, GET /api/errors/{id}
answers the same RecordView as JSON (app.api.schemas.record_document_json), so the twin
carries everything the page shows: locations, history, related records, runs and drift.
"""

from dataclasses import dataclass

from sqlmodel import Session

from app.config import Settings
from app.records import locations
from app.records import service as records
from app.records.explanation import Explanation, record_explanation
from app.records.locations import History, Location
from app.records.service import StoredRecord
from app.reproducers import drift, runner
from app.reproducers.runner import ReproducerInfo
from app.search import related
from app.search.related import RelatedRecord
from app.store.tables import DriftCheck, ReproducerRun


@dataclass(frozen=True, slots=True)
class RecordView:
    """A record and everything known about it."""

    stored: StoredRecord
    dataset_version: str
    locations: list[Location]  # in each harvested release
    history: list[History]  # the releases that raise its message, per package
    related: list[RelatedRecord]
    reproducer: ReproducerInfo | None
    runs: list[ReproducerRun]  # newest first
    drift: DriftCheck | None  # the latest check
    explanation: Explanation | None  # what the code says: settings, advice, changes


def record_view(session: Session, settings: Settings, stored: StoredRecord) -> RecordView:
    """Everything the record page shows and GET /api/errors/{id} answers."""
    known = locations.record_locations(session, [stored.id]).get(stored.id, [])
    harvested = locations.harvested_releases(session)
    history = locations.release_history(session, stored.record.error_message, known, harvested)
    return RecordView(
        stored=stored,
        dataset_version=records.dataset_version(session),
        locations=known,
        history=history,
        related=related.related_records(session, stored),
        reproducer=runner.reproducer_info(settings, stored.id),
        runs=runner.latest_runs(session, stored.id),
        drift=drift.latest_drift(session, stored.id),
        explanation=record_explanation(known, history, harvested),
    )
