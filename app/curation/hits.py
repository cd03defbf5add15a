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
memory holds no more new templates than that between flushes.
"""

import logging
import threading
import time
from collections import Counter
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import Delete, Engine, delete, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlmodel import col

from app import store
from app.curation.scrub import template_key
from app.matching.result import MatchResult
from app.store.engine import unit_of_work
from app.store.tables import Hit, table_of

RECORD, TEMPLATE = "record", "template"
FLUSH_INTERVAL_S = 10.0
TEMPLATES_PER_DAY = 1000  # ERRKB_QUEUE_TEMPLATES_PER_DAY's default

log = logging.getLogger(__name__)


def match_subject(result: MatchResult) -> tuple[str, str] | None:
    """What a match counts toward: its top record, else the last exception's template. A
    line with no class that matched nothing (a message alone) is not known to be an error
    at all, and counts toward nothing."""
    if result.matches:
        return RECORD, result.matches[0].id
    if result.exceptions and result.exceptions[-1].qualified_class:
        last = result.exceptions[-1]
        return TEMPLATE, template_key(last.qualified_class, last.message)
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
        """Count one hit for today; False when counting is off (ERRKB_RECORD_HITS=false)."""
        if not self.enabled:
            return False
        key = (kind, subject, today())
        with self._lock:
            if kind == TEMPLATE and key not in self._pending:
                if self._pending_templates >= self.templates_per_day:
                    return True  # a new template, 1 hit: the least-hit, dropped at the flush
                self._pending_templates += 1
            self._pending[key] += 1
            due = time.monotonic() - self._flushed_at >= self.interval_s
        if due:
            self.flush()
        return True

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
            for day in {row["day"] for row in rows if row["kind"] == TEMPLATE}:
                session.execute(self._over_cap(day))

    def _over_cap(self, day: date) -> Delete:
        """Delete the templates of a day past the cap, least-hit first: anonymous pastes
        must not grow the queue, and the time to list it, without bound."""
        kept_last = (
            select(col(Hit.subject))
            .where(col(Hit.kind) == TEMPLATE, col(Hit.day) == day)
            .order_by(col(Hit.count).desc(), col(Hit.subject))
            .offset(self.templates_per_day)
        )
        return delete(Hit).where(
            col(Hit.kind) == TEMPLATE, col(Hit.day) == day, col(Hit.subject).in_(kept_last)
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


def storable(subject: str) -> str:
    """A subject both engines can store: no NUL (PostgreSQL refuses it) and no lone
    surrogate (it cannot be encoded). The template filter keeps neither already; this
    keeps a flush from failing on any subject, whoever counted it."""
    return subject.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
