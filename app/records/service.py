"""The record store: get, list, write, delete, import and export records.

Every reader and writer of records goes through these functions: the API, the web pages,
the CLI, harvesting and the matcher. A record is stored as its canonical JSON text (keys in
the schema's order, lists and nulls as given) beside the columns that filter it, so what was
imported is exactly what the API returns, and export -> import -> export is byte-identical.
"""

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self, cast

from sqlalchemy import CursorResult, delete, func, insert, select, update
from sqlmodel import Session, col

from app import cursor as cursor_codec
from app import store
from app.app_error import AppError
from app.records import dataset_cache, locations, site_keys
from app.records.dataset_cache import (
    EMPTY_DATASET_VERSION,
    REPRODUCERS_KEY,
    VERSION_KEY,
    dataset_version,
)
from app.records.files import LoadedRecord, load_records, record_files
from app.records.filters import NO_FILTERS, RecordFilters, filtered
from app.records.model import ID_PATTERN, ErrorRecord, parse_record
from app.records.validation import field_order, record_errors
from app.store.tables import DatasetState, Record, RecordTag, table_of

MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 50
REVIEWED, DRAFT = locations.REVIEWED, locations.DRAFT


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record as stored: its canonical JSON text, the typed record parsed from it once,
    and the state kept beside it. GET answers `document` byte for byte."""

    id: str
    document: str
    review_state: str
    origin: str
    gone_in: str | None
    record: ErrorRecord

    @classmethod
    def of(
        cls, record_id: str, document: str, review_state: str, origin: str, gone_in: str | None
    ) -> Self:
        """The stored record of this text, parsed into its typed record."""
        return cls(record_id, document, review_state, origin, gone_in, parse_record(document))


@dataclass(frozen=True, slots=True)
class Page:
    """One page of records in id order, the total under the filters, the next page's cursor,
    and the dataset version they were read at."""

    items: list[StoredRecord]
    total: int
    next_cursor: str | None
    version: str


@dataclass(slots=True)
class WriteCounts:
    """What a batch write did, record by record."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass(frozen=True, slots=True)
class Rejection:
    """A record an import refused: where it was and why."""

    file: str
    position: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.position}: {self.reason}"


@dataclass(slots=True)
class ImportReport:
    """The outcome of `import_paths`; `written` is False when nothing was written;
    `skipped` names files that hold no records (a JSON Schema), with why."""

    counts: WriteCounts = field(default_factory=WriteCounts)
    rejected: list[Rejection] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    written: bool = False


def canonical_json(record: dict[str, Any]) -> str:
    """The stored and exported text of a record: schema key order, compact, UTF-8 kept."""
    ordered = {key: record[key] for key in field_order() if key in record}
    ordered.update((key, value) for key, value in record.items() if key not in ordered)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _format_version(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def bump_dataset_version(session: Session) -> str:
    """Move the version forward: now, or one millisecond past the last one if that is later.

    The version row is made if missing and read FOR UPDATE (PostgreSQL; SQLite has one
    writer anyway): a replica writing at the same moment waits, then moves past this
    version, so two writes never share one version that other replicas would take for
    nothing new."""
    return _bump(session, VERSION_KEY)


def bump_reproducers_version(session: Session) -> str:
    """Move the reproducers version forward (as the dataset version moves): a run, a drift
    check or a generated script was stored, which a record's JSON shows."""
    return _bump(session, REPRODUCERS_KEY)


def _bump(session: Session, key: str) -> str:
    session.flush()
    connection = session.connection()
    first = store.backend(session).insert_ignoring(table_of(DatasetState))
    connection.execute(first.values(key=key, value=EMPTY_DATASET_VERSION))
    row = col(DatasetState.key) == key
    current = connection.execute(
        select(col(DatasetState.value)).where(row).with_for_update()
    ).scalar_one()
    previous = datetime.strptime(current, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    version = _format_version(max(_utcnow(), previous + timedelta(milliseconds=1)))
    connection.execute(update(DatasetState).where(row).values(value=version))
    return version


def _stored(row: Any) -> StoredRecord:
    return StoredRecord.of(row.id, row.document, row.review_state, row.origin, row.gone_in)


_STORED_COLUMNS = (
    col(Record.id),
    col(Record.document),
    col(Record.review_state),
    col(Record.origin),
    col(Record.gone_in),
)


def get_record(session: Session, record_id: str) -> StoredRecord | None:
    """The record with this id, or None."""
    if store.names_nothing(record_id):
        return None
    row = session.execute(select(*_STORED_COLUMNS).where(col(Record.id) == record_id)).first()
    return _stored(row) if row else None


def get_records(session: Session, record_ids: Iterable[str]) -> dict[str, StoredRecord]:
    """The records with these ids that exist, by id."""
    found: dict[str, StoredRecord] = {}
    ids = list(record_ids)
    for start in range(0, len(ids), store.SQL_CHUNK):
        chunk = ids[start : start + store.SQL_CHUNK]
        for row in session.execute(select(*_STORED_COLUMNS).where(col(Record.id).in_(chunk))):
            found[row.id] = _stored(row)
    return found


def get_record_by_slug(session: Session, repo: str, slug: str) -> StoredRecord | None:
    """The record of a repo with this slug; reviewed records first, then the lowest id."""
    if store.names_nothing(repo, slug):
        return None
    row = session.execute(
        select(*_STORED_COLUMNS)
        .where(col(Record.repo) == repo, col(Record.slug) == slug)
        .order_by((col(Record.review_state) == REVIEWED).desc(), col(Record.id))
        .limit(1)
    ).first()
    return _stored(row) if row else None


def _is_record_id(value: str) -> bool:
    return re.fullmatch(ID_PATTERN, value) is not None


def encode_cursor(record_id: str) -> str:
    """An opaque cursor that resumes a listing after this id."""
    return cursor_codec.encode_cursor(record_id)


def decode_cursor(cursor: str) -> str:
    """The id a cursor resumes after; a cursor we did not make is a 400."""
    return cursor_codec.decode_cursor(cursor, _is_record_id)


def list_records(
    session: Session,
    filters: RecordFilters = NO_FILTERS,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
) -> Page:
    """A page of records in id order (stable under writes), with the total and next cursor.

    The total is counted once per dataset version and filters, not per page: counting reads
    every record the filters let through: counted for every page, it would make a page of
    the default store with its older releases cost much more than one of the small store
    (`bench/bench_store.py --sections latency`), and every page of a listing asks the same
    total. A harvest moves the version once, at its end: until then a page may
    show records of its committed batches beside the total from before it.
    """
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_PAGE_SIZE}")
    version = dataset_version(session)
    total = dataset_cache.memo.get(
        session,
        version,
        (_TOTAL, tuple(sorted(filters.active().items()))),
        lambda: session.execute(
            filtered(select(func.count()).select_from(Record), filters)
        ).scalar_one(),
    )
    # Ids first, documents after: ordering only ids keeps a filtered page cheap.
    statement = filtered(select(col(Record.id)), filters).order_by(col(Record.id))
    if cursor is not None:
        statement = statement.where(Record.id > decode_cursor(cursor))
    ids = list(session.execute(statement.limit(limit + 1)).scalars())
    found = get_records(session, ids[:limit])
    items = [found[record_id] for record_id in ids[:limit] if record_id in found]
    next_cursor = encode_cursor(ids[limit - 1]) if len(ids) > limit else None
    return Page(items, total, next_cursor, version)


_TOTAL = "records total"


def record_row(record: ErrorRecord, text: str, now: datetime) -> dict[str, Any]:
    """The records-table row of a record whose canonical text is `text`."""
    return {
        "id": record.id,
        "repo": record.repo,
        "slug": record.slug,
        "error_class": record.error_class,
        "error_type": record.error_type,
        "severity": record.severity,
        "handling_strategy": record.handling_strategy,
        "file_path": record.file_path,
        "line_number": record.line_number,
        "error_message": record.error_message,
        "message_pattern": record.message_pattern,
        "document": text,
        "content_hash": hashlib.sha256(text.encode()).hexdigest(),
        "site_key": site_keys.site_key(record),
        "modified_at": now,
    }


def existing_hashes(session: Session, record_ids: Sequence[str]) -> dict[str, str]:
    """The content hash of each of these ids already stored."""
    hashes: dict[str, str] = {}
    for start in range(0, len(record_ids), store.SQL_CHUNK):
        chunk = record_ids[start : start + store.SQL_CHUNK]
        statement = select(col(Record.id), col(Record.content_hash)).where(
            col(Record.id).in_(chunk)
        )
        hashes.update(session.execute(statement).all())
    return hashes


def write_records(
    session: Session,
    records: Sequence[dict[str, Any]],
    *,
    origin: str = "import",
    review_state: str = REVIEWED,
) -> WriteCounts:
    """Create or replace valid records by id in one batch, in the caller's unit of work.

    Callers validate first (`app.records.validation.record_errors`). A record whose canonical text
    is unchanged is left alone, so re-importing the same data moves nothing, not even the
    dataset version. Created and changed records take `review_state`: a curator's import or
    API write of a harvested draft makes it reviewed. A reviewed record written after a
    harvest absorbs the draft stored for its raise site.
    """
    texts = [canonical_json(record) for record in records]
    counts = _write(session, [parse_record(text) for text in texts], texts, origin, review_state)
    if counts.created or counts.updated:
        bump_dataset_version(session)
    return counts


def write_drafts(
    session: Session, drafts: Sequence[ErrorRecord], *, origin: str, gone_in: str | None
) -> WriteCounts:
    """Store one batch of a harvest's drafts, typed when the harvest checked them, so never
    parsed again from their text; created and changed ones are drafts.

    Every one of them, changed or not, is marked as harvested by `origin` (`harvest:SPEC`)
    and gone in `gone_in`: None for the newest release, else the newer release already
    harvested, which no longer raises a draft only this older release has. The harvest moves
    the dataset version itself, once, at its end (app.harvest.drafts.store_drafts).
    """
    texts = [canonical_json(draft.model_dump()) for draft in drafts]
    counts = _write(session, drafts, texts, origin, DRAFT)
    _set_columns(session, [draft.id for draft in drafts], origin=origin, gone_in=gone_in)
    return counts


def mark_gone(session: Session, record_ids: Sequence[str], release: str) -> None:
    """Mark these drafts as gone in `release` (a spec): their raise site is no longer there."""
    _set_columns(session, record_ids, gone_in=release)


def _set_columns(session: Session, record_ids: Sequence[str], **values: str | None) -> None:
    """Set these columns of the records with these ids, a statement per chunk of ids."""
    for start in range(0, len(record_ids), store.SQL_CHUNK):
        chunk = record_ids[start : start + store.SQL_CHUNK]
        session.execute(update(Record).where(col(Record.id).in_(chunk)).values(**values))


def _write(
    session: Session,
    typed: Sequence[ErrorRecord],
    texts: Sequence[str],
    origin: str,
    review_state: str,
) -> WriteCounts:
    """Insert the new records and replace the changed ones; each text is its record's
    canonical JSON."""
    now = _utcnow()
    rows = [record_row(record, text, now) for record, text in zip(typed, texts, strict=True)]
    known = existing_hashes(session, [row["id"] for row in rows])
    new_rows = [row for row in rows if row["id"] not in known]
    changed = [r for r in rows if r["id"] in known and known[r["id"]] != r["content_hash"]]
    counts = WriteCounts(len(new_rows), len(changed), len(rows) - len(new_rows) - len(changed))
    for row in new_rows:
        row.update(created_at=now, origin=origin)
    for row in new_rows + changed:
        row["review_state"] = review_state
    if new_rows:
        with store.backend(session).batch_indexing(session, [row["id"] for row in new_rows]):
            session.execute(insert(Record), new_rows)
    for row in changed:
        session.execute(update(Record).where(Record.id == row["id"]).values(**row))
    touched = {row["id"] for row in new_rows + changed}
    if touched:
        _replace_tags(session, [record for record in typed if record.id in touched])
        if review_state == REVIEWED:
            locations.absorb_duplicates(session, sorted(touched))
    return counts


def _replace_tags(session: Session, records: Sequence[ErrorRecord]) -> None:
    ids = [record.id for record in records]
    for start in range(0, len(ids), store.SQL_CHUNK):
        chunk = ids[start : start + store.SQL_CHUNK]
        session.execute(delete(RecordTag).where(col(RecordTag.record_id).in_(chunk)))
    tags = [{"record_id": r.id, "tag": tag} for r in records for tag in dict.fromkeys(r.tags)]
    if tags:
        session.execute(insert(RecordTag), tags)


def set_review_state(session: Session, record_id: str, state: str) -> None:
    """Mark a record draft or reviewed (kept beside the record, never inside it)."""
    session.execute(update(Record).where(col(Record.id) == record_id).values(review_state=state))
    if state == REVIEWED:
        locations.absorb_duplicates(session, [record_id])
    bump_dataset_version(session)


def delete_record(session: Session, record_id: str) -> bool:
    """Delete a record and its tags; False when there was none."""
    # a DELETE's result is a CursorResult, which Session.execute's signature does not say
    result = cast(
        CursorResult[Any], session.execute(delete(Record).where(col(Record.id) == record_id))
    )
    deleted = result.rowcount
    if deleted:
        bump_dataset_version(session)
    return bool(deleted)


def check_record(record: Any) -> None:
    """Raise a 422 AppError naming each invalid field of a record sent to the API."""
    errors = record_errors(record)
    if errors:
        raise AppError(
            422,
            "Invalid record",
            "; ".join(str(error) for error in errors),
            [{"field": error.field, "reason": error.reason} for error in errors],
        )


def _accept(loaded: LoadedRecord, seen: dict[str, str]) -> str | None:
    """Why this loaded record cannot be imported, or None when it can."""
    if loaded.error is not None:
        return loaded.error
    errors = record_errors(loaded.record)
    if errors:
        return "; ".join(str(error) for error in errors)
    record_id = loaded.record["id"]
    if record_id in seen:
        return f"duplicate id {record_id}, first seen at {seen[record_id]}"
    seen[record_id] = loaded.where
    return None


def import_paths(session: Session, paths: Iterable[Path], *, partial: bool = False) -> ImportReport:
    """Validate and upsert the records of these files and folders in the caller's unit of
    work (app.store.engine.unit_of_work), which commits.

    All-or-nothing by default: one rejected record and nothing is written. With `partial`,
    the valid records are written and the rejected ones reported.
    """
    report = ImportReport()
    accepted: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for path in record_files(paths):
        if not path.exists():
            report.rejected.append(Rejection(str(path), "-", "no such file or folder"))
            continue
        for loaded in load_records(path):
            if loaded.skipped is not None:
                report.skipped.append(f"{loaded.file}: {loaded.skipped}")
                continue
            reason = _accept(loaded, seen)
            if reason is None:
                accepted.append(loaded.record)
            else:
                report.rejected.append(Rejection(loaded.file, loaded.position, reason))
    if report.rejected and not partial:
        return report
    report.counts = write_records(session, accepted)
    report.written = True
    return report


def export_lines(session: Session, filters: RecordFilters | None = None) -> Iterator[str]:
    """Every record passing the filters as one line of JSON (canonical text), in id order."""
    statement = select(col(Record.document)).order_by(col(Record.id))
    if filters is not None:
        statement = filtered(statement, filters)
    for (document,) in session.execute(statement.execution_options(yield_per=1000)):
        yield document + "\n"


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts of the whole dataset."""

    records: int
    per_repo: dict[str, int]
    per_review_state: dict[str, int]
    dataset_version: str


def _count_by(session: Session, column: Any) -> Iterable[tuple[str, int]]:
    return session.execute(select(column, func.count()).group_by(column)).all()


def dataset_stats(session: Session) -> Stats:
    """Record counts in all, per repo and per review state, with the dataset version."""
    per_repo = dict(_count_by(session, Record.repo))
    per_state = dict(_count_by(session, Record.review_state))
    return Stats(sum(per_repo.values()), per_repo, per_state, dataset_version(session))
