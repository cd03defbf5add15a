"""The curation queue: drafts and unexplained templates, most-hit first.

It answers a curator's first question, "which unexplained error do people hit most?".
Reviewed records are explained already and stay out; a record or template nobody met stays
out too, so the queue holds only what people really run into. It reads the totals the hit
flush keeps (app.curation.hits), in the order of their index: most-hit first, then kind and
subject, each descending; pages resume by keyset on (hits, kind, subject), so a cursor
stays valid while hits keep coming in.
"""

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Row, Select, and_, exists, func, or_, select, tuple_
from sqlmodel import Session, col

from app.app_error import AppError
from app.curation.hits import RECORD, TEMPLATE
from app.curation.scrub import shown_template
from app.records import service as records
from app.records.filters import NO_FILTERS, RecordFilters, record_condition
from app.records.service import DRAFT, StoredRecord
from app.records.vocabulary import Vocabulary
from app.store.tables import HitTotal, Record, table_of

DEFAULT_QUEUE_PAGE = 50
MAX_QUEUE_PAGE = 200
UNEXPLAINED = "unexplained"
MAX_SQL_INTEGER = 2**63  # a larger number in a forged cursor would overflow the driver


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One thing to explain: a draft (`record`) or an unexplained template (`template`)."""

    id: str
    hits: int
    last_hit: date
    review_state: str
    record: StoredRecord | None
    template: str | None


@dataclass(frozen=True, slots=True)
class QueuePage:
    """A page of the queue, the number of items under the filter, the next page's cursor."""

    items: list[QueueItem]
    total: int
    next_cursor: str | None


def template_id(template: str) -> str:
    """A short stable id for an unexplained template (it has no record id)."""
    return "tpl-" + hashlib.sha256(template.encode()).hexdigest()[:16]


def _encode(hits: int, kind: str, subject: str) -> str:
    raw = json.dumps([hits, kind, subject], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(cursor: str) -> tuple[int, str, str]:
    """The position a cursor resumes after; a cursor we did not make is a 400."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        hits, kind, subject = json.loads(raw)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        hits = None
    valid_hits = isinstance(hits, int) and 0 <= hits < MAX_SQL_INTEGER
    if not (valid_hits and kind in (RECORD, TEMPLATE) and isinstance(subject, str)):
        raise AppError(400, "Invalid cursor", "cursor must be a value returned as nextCursor")
    return hits, kind, subject


def curation_queue(
    session: Session,
    vocabulary: Vocabulary,
    filters: RecordFilters = NO_FILTERS,
    limit: int = DEFAULT_QUEUE_PAGE,
    cursor: str | None = None,
) -> QueuePage:
    """Drafts and unexplained templates with hits, most-hit first; any filter keeps the
    drafts passing it only (templates belong to no repo and have no class or tag). A
    template shows only the words of `vocabulary`, the store's (app.records.vocabulary)."""
    if not 1 <= limit <= MAX_QUEUE_PAGE:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_QUEUE_PAGE}")
    totals = table_of(HitTotal)
    narrowed = record_condition(filters)
    joined = totals.outerjoin(
        Record, and_(totals.c.kind == RECORD, col(Record.id) == totals.c.subject)
    )
    templates = totals.c.kind == TEMPLATE
    # A record's state, not the kind again: a condition on the kind alone would lead SQLite
    # to read both kinds through the primary key and sort them, not walk the queue's index.
    drafts = col(Record.review_state) == DRAFT  # the join finds records for records only
    if narrowed is not None:
        drafts = and_(drafts, narrowed)
    condition = or_(templates, drafts) if narrowed is None else drafts
    statement = select(totals).select_from(joined).where(condition)
    position = tuple_(totals.c.hits, totals.c.kind, totals.c.subject)
    if cursor is not None:
        statement = statement.where(position < tuple_(*_decode(cursor)))
    # Backwards along ix_hit_totals_queue: the page's rows are read, and no others.
    ordered = statement.order_by(*(column.desc() for column in position.clauses))
    rows = session.execute(ordered.limit(limit + 1)).all()
    page = rows[:limit]
    stored = records.get_records(session, [row.subject for row in page if row.kind == RECORD])
    last = page[-1] if len(rows) > limit else None  # a row past the page: there is more
    next_cursor = _encode(last.hits, last.kind, last.subject) if last is not None else None
    # Counted from the records hit, each looked up: not from every draft of the store.
    hit_drafts = exists().where(col(Record.id) == totals.c.subject, drafts)
    total = _count(session, select(totals).where(totals.c.kind == RECORD, hit_drafts))
    if narrowed is None:
        total += _count(session, select(totals).where(templates))
    return QueuePage([_item(row, stored, vocabulary) for row in page], total, next_cursor)


def _count(session: Session, statement: Select) -> int:
    return session.execute(select(func.count()).select_from(statement.subquery())).scalar_one()


def _item(row: Row[Any], stored: dict[str, StoredRecord], vocabulary: Vocabulary) -> QueueItem:
    hits, last_hit = int(row.hits), row.last_hit
    if row.kind == TEMPLATE:
        # shown through the scrubbing filter again: a template stored by an older, weaker
        # filter must not show the values it let through
        template = shown_template(row.subject, vocabulary)
        return QueueItem(template_id(row.subject), hits, last_hit, UNEXPLAINED, None, template)
    record = stored[row.subject]  # the same transaction read the row: it is there
    return QueueItem(record.id, hits, last_hit, record.review_state, record, None)
