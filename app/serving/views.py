"""What a page and its JSON twin both show, gathered once (docs/architecture.md,
convention 1): the record page (/errors/{id}) renders a RecordView, GET /api/errors/{id}
answers the same RecordView as JSON (record_document_json), so the twin
carries everything the page shows: locations, history, related records, runs and drift.
A view of the page is counted as a hit of its record (`count_view`); the JSON is not.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session

from app.config import Settings
from app.curation.hits import RECORD, HitCounter
from app.ops.metrics import Metrics
from app.records import dataset_cache, locations, release_history
from app.records import service as records
from app.records.explanation import record_explanation
from app.records.locations import Location
from app.records.native_settings import native_explanation
from app.records.release_history import History
from app.records.service import StoredRecord
from app.reproducers import drift, runner
from app.reproducers.generation import bulk
from app.reproducers.runner import ReproducerInfo
from app.search import related
from app.search.related import RelatedRecord
from app.store.tables import DriftCheck, GeneratedReproducer, ReproducerRun
from app.wire.explanation import Explanation
from app.wire.records import RecordDocument


@dataclass(frozen=True, slots=True)
class RecordView:
    """A record and everything known about it."""

    stored: StoredRecord
    dataset_version: str
    locations: list[Location]  # in each harvested release
    history: list[History]  # the releases that raise its message, per package
    related: list[RelatedRecord]
    reproducer: ReproducerInfo | None
    generated: GeneratedReproducer | None  # a script generated from the raise site
    runs: list[ReproducerRun]  # newest first
    drift: DriftCheck | None  # the latest check
    explanation: Explanation | None  # what the code says: settings, advice, changes


def record_view(session: Session, settings: Settings, stored: StoredRecord) -> RecordView:
    """Everything the record page shows and GET /api/errors/{id} answers.

    What depends only on the store (locations, history, related records) is kept per
    dataset version (app.records.dataset_cache); runs and drift checks are written without moving
    the version, so they are read each time, as is the reproducer script's stamp."""
    version = records.dataset_version(session)
    known, history, related_records, explanation = dataset_cache.memo.get(
        session, version, ("record view", stored.id), lambda: _store_facts(session, stored)
    )
    return RecordView(
        stored=stored,
        dataset_version=version,
        locations=known,
        history=history,
        related=related_records,
        reproducer=_reproducer(settings, stored.id),
        generated=bulk.stored_script(session, stored.id),
        runs=runner.latest_runs(session, stored.id),
        drift=drift.latest_drift(session, stored.id),
        explanation=explanation,
    )


def record_document_json(view: RecordView) -> str:
    """The JSON text of GET /api/errors/{id} (RecordDocument), splicing in the stored text
    byte for byte: what the API answers and the local client prints."""
    document = RecordDocument.model_validate(view, context={"record": view.stored.record})
    rest = document.model_dump(mode="json", by_alias=True, exclude={"record"})
    return '{"record":' + view.stored.document + "," + json.dumps(rest, ensure_ascii=False)[1:]


def _store_facts(
    session: Session, stored: StoredRecord
) -> tuple[list[Location], list[History], list[RelatedRecord], Explanation | None]:
    known = locations.record_locations(session, [stored.id]).get(stored.id, [])
    harvested = release_history.harvested_releases(session)
    history = release_history.release_history(
        session, stored.record.error_message, known, harvested
    )
    explanation = record_explanation(known, history, harvested) or native_explanation(stored.record)
    return known, history, related.related_records(session, stored), explanation


_reproducers: dict[Path, tuple[tuple[int, int], ReproducerInfo | None]] = {}


def reproducer_stamp(settings: Settings, record_id: str) -> tuple[int, int] | None:
    """When the record's reproducer script last changed, and its size; None without one
    (most records: one failed stat). What the record's JSON shows of it changes with this."""
    try:
        status = (settings.reproducers_dir / f"{record_id}.py").stat()
    except (OSError, ValueError):
        return None
    return status.st_mtime_ns, status.st_size


def _reproducer(settings: Settings, record_id: str) -> ReproducerInfo | None:
    """The record's reproducer, its script parsed again only when the file changes."""
    stamp = reproducer_stamp(settings, record_id)
    if stamp is None:
        return None
    script = settings.reproducers_dir / f"{record_id}.py"
    kept = _reproducers.get(script)
    if kept is None or kept[0] != stamp:
        kept = (stamp, runner.reproducer_info(settings, record_id))
        _reproducers[script] = kept
    return kept[1]


def count_view(hits: HitCounter, metrics: Metrics, record_id: str) -> None:
    """Count a record-page view as a hit of the record."""
    if hits.add(RECORD, record_id):
        metrics.hits.labels(RECORD, "view").inc()
