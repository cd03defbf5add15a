"""Shapes of the API: what the JSON endpoints return, mapped from the services' domain
objects (records, locations, reproducer runs). The match result and the record summary are
the matcher's and the records' own (app.matching.result, app.records.summary).
"""

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from app.records.explanation import Explanation
from app.records.locations import Location
from app.records.model import ErrorRecord
from app.records.release_history import History
from app.records.service import Page, Stats
from app.records.summary import RecordSummary, summarize
from app.reproducers.runner import ReproducerInfo
from app.reproducers.runs import summary as run_summary
from app.serving.views import RecordView
from app.store.tables import DriftCheck, GeneratedReproducer, ReproducerRun
from app.wire import ApiModel


class RecordPage(ApiModel):
    """One page of GET /api/errors."""

    items: list[RecordSummary]
    total: int
    next_cursor: str | None
    dataset_version: str


class DatasetStats(ApiModel):
    """GET /api/stats."""

    records: int
    per_repo: dict[str, int]
    per_review_state: dict[str, int]
    dataset_version: str


class RecordLinks(ApiModel):
    """Where to find more about a record."""

    self: str
    html: str
    reproducer: str


class ReviewInfo(ApiModel):
    """The state kept beside a record: reviewed or draft, where it came from, gone in."""

    state: str
    origin: str
    gone_in: str | None


class LocationOut(ApiModel):
    """Where the record's raise site is in one harvested release.

    `status` compares it with the record as written: `same` line, `moved` (another line or
    file), or `gone` (the release no longer raises it).
    """

    release: str
    ref: str
    file_path: str
    line_number: int | None
    function: str | None
    source_code: str | None
    source_code_start: int | None
    source_code_end: int | None
    github_url: str | None
    gone: bool
    status: str
    code_context: dict[str, Any] | None  # function, docstring, guard, callers, handlers...


class HistoryOut(ApiModel):
    """The releases of one package that raise the record's message."""

    package: str
    present: list[str]
    changed_in: str | None
    text: str  # "in vllm 0.12.0–0.32.0; changed in 0.33.0"


def location_out(location: Location, record: ErrorRecord) -> LocationOut:
    """The API shape of one location of a record."""
    fields = {name: getattr(location, name) for name in Location.__dataclass_fields__}
    context = fields.pop("context")
    # The explanation is answered once, typed, beside the locations (RecordDocument).
    fields["code_context"] = (
        {key: value for key, value in context.items() if key != "explanation"}
        if context
        else context
    )
    return LocationOut(**fields, status=location.status(record))


def record_links(record_id: str) -> RecordLinks:
    """The API and page addresses of a record."""
    return RecordLinks(
        self=f"/api/errors/{record_id}",
        html=f"/errors/{record_id}",
        reproducer=f"/api/errors/{record_id}/reproducer",
    )


def history_out(history: History) -> HistoryOut:
    """The API shape of a record's history in one package's releases."""
    return HistoryOut(
        package=history.package,
        present=list(history.present),
        changed_in=history.changed_in,
        text=history.text,
    )


def record_document_json(view: RecordView, root: Path) -> str:
    """The JSON text of GET /api/errors/{id}, splicing in the stored text byte for byte."""
    stored, record = view.stored, view.stored.record
    review = ReviewInfo(state=stored.review_state, origin=stored.origin, gone_in=stored.gone_in)
    related = [
        RelatedOut(record=summarize(item.record), reasons=item.reasons) for item in view.related
    ]
    extra = {
        "datasetVersion": view.dataset_version,
        "review": review.model_dump(by_alias=True),
        "locations": [
            location_out(loc, record).model_dump(by_alias=True) for loc in view.locations
        ],
        "history": [history_out(item).model_dump(by_alias=True) for item in view.history],
        "links": record_links(stored.id).model_dump(by_alias=True),
        "related": [item.model_dump(by_alias=True) for item in related],
        "reproducer": _script(view.reproducer, root) if view.reproducer else None,
        "generated": generated_out(view.generated).model_dump(mode="json", by_alias=True)
        if view.generated
        else None,
        "runs": [run_out(run).model_dump(mode="json", by_alias=True) for run in view.runs],
        "drift": drift_out(view.drift).model_dump(mode="json", by_alias=True)
        if view.drift
        else None,
        "explanation": view.explanation.model_dump(by_alias=True) if view.explanation else None,
    }
    return '{"record":' + stored.document + "," + json.dumps(extra, ensure_ascii=False)[1:]


def record_page(page: Page, version: str) -> RecordPage:
    """The API shape of a page of records."""
    items = [summarize(stored) for stored in page.items]
    return RecordPage(
        items=items, total=page.total, next_cursor=page.next_cursor, dataset_version=version
    )


def dataset_stats_out(stats: Stats) -> DatasetStats:
    """The API shape of the dataset stats."""
    return DatasetStats(
        records=stats.records,
        per_repo=stats.per_repo,
        per_review_state=stats.per_review_state,
        dataset_version=stats.dataset_version,
    )


class ReproducerRunOut(ApiModel):
    """One stored run of a reproducer."""

    status: str
    device: str
    package: str | None
    version: str | None
    python: str | None
    torch: str | None
    trigger_status: str | None
    fix_status: str | None
    reason: str
    duration_s: float
    started_at: datetime
    output_tail: str
    machine: str | None = None  # "NVIDIA H200, 143,771 MiB, driver 580.159.04, ..."
    cuda: str | None = None
    origin: str | None = None  # the run file it was imported from (runs/...)
    summary: str = ""  # "Reproduced on NVIDIA H200 (torch 2.11.0+cu130, ...) on 2026-12-04"


class DriftOut(ApiModel):
    """Where the record's raise site stands in its target release."""

    package: str
    version: str
    status: str
    found_line: int | None
    detail: str
    checked_at: datetime


class GeneratedOut(ApiModel):
    """A reproducer generated from the raise site: the call that raises the record's error,
    the call that does not, and whether it sets state directly instead of constructing."""

    trigger_call: str
    fix_call: str
    direct_state: bool
    package: str
    version: str
    generated_at: datetime


class ReproducerOut(ApiModel):
    """GET /api/errors/{id}/reproducer: the script, its target and devices, recent runs.

    `script` is the curated script's path in the project, or, when `generated` is true, the
    generated script's text (it is stored with the record); `calls` shows what it runs."""

    record_id: str
    script: str
    generated: bool = False
    calls: GeneratedOut | None = None
    target: dict[str, Any]
    devices: list[str]
    runs: list[ReproducerRunOut]
    drift: DriftOut | None


class RelatedOut(ApiModel):
    """A record related to this one, and why (the same background, file or tags)."""

    record: RecordSummary
    reasons: list[str]


class RecordDocument(ApiModel):
    """GET /api/errors/{id}: the record exactly as stored, the dataset version, its
    location in each harvested release, the releases that raise it, links, and what its
    page shows besides: related records, its reproducer script, recent runs
    (newest first), latest drift check, and what its code says (`explanation`: the
    settings that reach the raise site, upstream's advice, the trigger, the releases that
    changed it, each with the release, file and line it was read from)."""

    record: ErrorRecord
    dataset_version: str
    review: ReviewInfo
    locations: list[LocationOut]
    history: list[HistoryOut]
    links: RecordLinks
    related: list[RelatedOut]
    reproducer: str | None  # the script, relative to the project
    generated: GeneratedOut | None  # a reproducer generated from the raise site
    runs: list[ReproducerRunOut]
    drift: DriftOut | None
    explanation: Explanation | None


def _script(info: ReproducerInfo, root: Path) -> str:
    script = info.script
    return str(script.relative_to(root) if script.is_relative_to(root) else script)


def generated_out(row: GeneratedReproducer) -> GeneratedOut:
    """The API shape of a generated reproducer's calls."""
    return GeneratedOut.model_validate(row, from_attributes=True)


def generated_reproducer_out(
    row: GeneratedReproducer, runs: list[ReproducerRun], drift: DriftCheck | None
) -> ReproducerOut:
    """The API shape of a generated reproducer, its recent runs and latest drift check."""
    return ReproducerOut(
        record_id=row.record_id,
        script=row.script,
        generated=True,
        calls=generated_out(row),
        target={"package": row.package, "version": row.version, "module": row.module},
        devices=["cpu"],
        runs=[run_out(run) for run in runs],
        drift=drift_out(drift) if drift else None,
    )


def run_out(run: ReproducerRun) -> ReproducerRunOut:
    """The API shape of a stored reproducer run."""
    shown = ReproducerRunOut.model_validate(run, from_attributes=True)
    shown.summary = run_summary(run)
    return shown


def drift_out(check: DriftCheck) -> DriftOut:
    """The API shape of a drift check."""
    return DriftOut.model_validate(check, from_attributes=True)


def reproducer_out(
    info: ReproducerInfo, runs: list[ReproducerRun], drift: DriftCheck | None, root: Path
) -> ReproducerOut:
    """The API shape of a reproducer with its recent runs and latest drift check."""
    return ReproducerOut(
        record_id=info.record_id,
        script=_script(info, root),
        target=info.target,
        devices=list(info.devices),
        runs=[run_out(run) for run in runs],
        drift=drift_out(drift) if drift else None,
    )
