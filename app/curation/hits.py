"""Hits: how often each record, or each unexplained error, is met; per day and nothing else.

A match counts one hit for its top record, and a record page view one for its record. A paste
that nothing matches counts toward its scrubbed template instead: the exception class and the
prose words of its message's first line, every other token replaced by a placeholder
(app.curation.scrub), so no value from the paste is kept. The paste itself and the values a
match captures are never stored.

Counting must not slow matching: hits gather in memory (a dict increment under a lock) and
are written at most every FLUSH_INTERVAL_S seconds, as one upsert per (subject, day), by the
request that finds them due; readers of hits flush first, and the app flushes on shutdown.
Each flush keeps at most `templates_per_day` templates of a day, dropping the least-hit, and
memory holds no more new templates than that between flushes. It also rewrites the totals
over all days of the subjects it changed (or dropped), which the curation queue lists.
"""

import logging
import threading
import time
from collections import Counter
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Engine, String, Text, bindparam, delete, func, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.sql.dml import ReturningDelete
from sqlmodel import Session

from app import store
from app.curation.scrub import template_key
from app.records.vocabulary import Vocabulary
from app.store.engine import unit_of_work
from app.store.tables import Hit, HitTotal, table_of
from app.wire.matching import MatchResult

RECORD, TEMPLATE = "record", "template"
FLUSH_INTERVAL_S = 10.0
TEMPLATES_PER_DAY = 1000  # ERRKB_QUEUE_TEMPLATES_PER_DAY's default

log = logging.getLogger(__name__)


def match_subject(result: MatchResult, vocabulary: Vocabulary) -> tuple[str, str] | None:
    """What a match counts toward: its top record, else the last exception's template,
    keeping only the words of the store's `vocabulary` (app.curation.scrub). A line with
    no class that matched nothing (a message alone) is not known to be an error at all,
    and counts toward nothing."""
    if result.matches:
        return RECORD, result.matches[0].id
    if result.exceptions and result.exceptions[-1].qualified_class:
        last = result.exceptions[-1]
        return TEMPLATE, template_key(last.qualified_class, last.message, vocabulary)
    return None


def today() -> date:
    """Hits are kept per UTC day."""
    return datetime.now(UTC).date()


class HitCounter:
    """Counts hits in memory and writes them to the store in batches."""

    def __init__(
        self,
        engine: Engine,
        enabled: bool,
        interval_s: float = FLUSH_INTERVAL_S,
        templates_per_day: int = TEMPLATES_PER_DAY,
    ) -> None:
        self.engine = engine
        self.enabled = enabled
        self.interval_s = interval_s
        self.templates_per_day = templates_per_day
        self._pending: Counter[tuple[str, str, date]] = Counter()
        self._pending_templates = 0  # distinct templates in _pending
        self._flushed_at = time.monotonic()
        self._lock = threading.Lock()

    def add(self, kind: str, subject: str) -> bool:
        """Count one hit for today, writing the counts when a flush is due; False when
        counting is off (ERRKB_RECORD_HITS=false)."""
        counted, due = self.count(kind, subject)
        if due:
            self.flush()
        return counted

    def count(self, kind: str, subject: str) -> tuple[bool, bool]:
        """Count one hit for today without writing: whether it was counted, and whether a
        flush is due, which this caller then owes (a match on the event loop leaves it to a
        request thread, after the reply). One caller is told, not every caller until the
        flush begins: each would send a flush of its own to the request threads, and a
        connection's next request would wait for its reply's flush, a large cut in matches
        a second (docs/benchmarks.md, "Costs behind the code's choices")."""
        if not self.enabled:
            return False, False
        key = (kind, subject, today())
        with self._lock:
            if kind == TEMPLATE and key not in self._pending:
                if self._pending_templates >= self.templates_per_day:
                    return True, False  # a new template, 1 hit: the least-hit, dropped at the flush
                self._pending_templates += 1
            self._pending[key] += 1
            now = time.monotonic()
            due = now - self._flushed_at >= self.interval_s
            if due:
                self._flushed_at = now
            return True, due

    def flush(self) -> int:
        """Write the counted hits; how many subject-days were written.

        A locked or unreachable database must not fail the match that found the flush due:
        the counts go back to memory for the next flush, and a warning is logged. A batch
        the store refuses for what a row holds is written row by row, so only that row's
        count is lost.
        """
        with self._lock:
            pending, self._pending = self._pending, Counter()
            self._pending_templates = 0
            self._flushed_at = time.monotonic()
        if not pending:
            return 0
        rows = [
            {"kind": kind, "subject": storable(subject), "day": day, "count": count}
            for (kind, subject, day), count in pending.items()
        ]
        try:
            self._write(rows)
        except OperationalError as error:
            self._keep(rows, error)
            return 0
        except (SQLAlchemyError, ValueError) as error:
            log.warning("hits refused as a batch, written one by one: %s", error)
            return self._write_each(rows)
        return len(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        with unit_of_work(self.engine) as session:
            upsert = store.backend(self.engine).upsert_adding(
                table_of(Hit), ("kind", "subject", "day"), "count"
            )
            session.execute(upsert, rows)
            dropped: set[tuple[str, str]] = set()
            for day in {row["day"] for row in rows if row["kind"] == TEMPLATE}:
                subjects = session.execute(self._over_cap(day)).scalars()
                dropped.update((TEMPLATE, subject) for subject in subjects)
            changed = {(row["kind"], row["subject"]) for row in rows}
            retotal(session, changed | dropped, dropped)

    def _over_cap(self, day: date) -> ReturningDelete[tuple[str]]:
        """Delete the templates of a day past the cap, least-hit first (returning their
        subjects): anonymous pastes must not grow the queue without bound."""
        hits = table_of(Hit)
        kept_last = (
            select(hits.c.subject)
            .where(hits.c.kind == TEMPLATE, hits.c.day == day)
            .order_by(hits.c.count.desc(), hits.c.subject)
            .offset(self.templates_per_day)
        )
        return (
            delete(hits)
            .where(hits.c.kind == TEMPLATE, hits.c.day == day, hits.c.subject.in_(kept_last))
            .returning(hits.c.subject)
        )

    def _write_each(self, rows: list[dict[str, Any]]) -> int:
        """Write the rows one at a time, so a row the store refuses costs only its own
        count: a busy store keeps a row for the next flush, a refusal drops it, logged."""
        written = 0
        for row in rows:
            try:
                self._write([row])
            except OperationalError as error:
                self._keep([row], error)
            except (SQLAlchemyError, ValueError) as error:
                log.warning("a hit the store refuses was dropped: %s", error)
            else:
                written += 1
        return written

    def _keep(self, rows: list[dict[str, Any]], error: Exception) -> None:
        """Put rows back for the next flush: the database is busy or unreachable."""
        with self._lock:
            for row in rows:
                key = (row["kind"], row["subject"], row["day"])
                self._pending_templates += row["kind"] == TEMPLATE and key not in self._pending
                self._pending[key] += row["count"]
        log.warning("hits not written yet, kept for the next flush: %s", error)


def retotal(
    session: Session, subjects: set[tuple[str, str]], dropped: set[tuple[str, str]]
) -> None:
    """Rewrite the totals (app.store.tables.HitTotal) of these (kind, subject) pairs from
    their hits; a `dropped` subject that has no hit left loses its total. One statement per
    subject through an index, so a flush costs what it changed, not the size of the table.
    Recomputed rather than added to: a total that a concurrent flush of another day of the
    same subject left behind is right again at that subject's next flush."""
    if not subjects:
        return
    hits, totals = table_of(Hit), table_of(HitTotal)
    kind, subject = bindparam("total_kind", type_=String), bindparam("total_subject", type_=Text)
    summed = (
        select(hits.c.kind, hits.c.subject, func.sum(hits.c.count), func.max(hits.c.day))
        .where(hits.c.kind == kind, hits.c.subject == subject)
        .group_by(hits.c.kind, hits.c.subject)
    )
    upsert = store.backend(session.get_bind()).upsert_selected(
        totals, ("kind", "subject"), ("kind", "subject", "hits", "last_hit"), summed
    )
    session.execute(upsert, [{"total_kind": k, "total_subject": s} for k, s in subjects])
    if dropped:
        left = select(hits.c.day).where(
            hits.c.kind == totals.c.kind, hits.c.subject == totals.c.subject
        )
        vanished = delete(totals).where(
            totals.c.kind == kind, totals.c.subject == subject, ~left.exists()
        )
        session.execute(vanished, [{"total_kind": k, "total_subject": s} for k, s in dropped])


def storable(subject: str) -> str:
    """A subject both engines can store: no NUL (PostgreSQL refuses it) and no lone
    surrogate (it cannot be encoded). The template filter keeps neither already; this
    keeps a flush from failing on any subject, whoever counted it."""
    return subject.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
