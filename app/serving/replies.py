"""Reply bodies kept for as long as the store does not change: GET /api/errors/{id}
answers the same bytes until a write moves the dataset version (app.records.dataset_cache), so
the second asking costs one statement (the version) and no view or JSON.

Without it a GET by id would gather its record, runs, drift check and generated script (five
statements) and write their JSON on every request, many times what /healthz costs, so two
workers could not serve the thousands of requests a second asked of them
(`bench/bench_store.py --sections wrk`; docs/benchmarks.md, "Costs behind the code's
choices").

Match replies are not kept: they quote the paste (its message, the values captured from
it), and a paste is matched and forgotten (docs/records.md, what hits keep), tokens and
all; a server holding the last thousands of pastes in memory would break that promise.

A record's JSON also shows its reproducer's runs, drift checks and generated script, which
are written without moving the dataset version: they move the reproducers version, read in
the same statement, and the script file's own stamp is part of the key. Each reply carries
a strong ETag (a hash of its bytes), so a client that sends it back in If-None-Match gets
304 without the body.
"""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlmodel import Session

from app.config import Settings
from app.records import dataset_cache
from app.records.model import ID_PATTERN
from app.serving.views import reproducer_stamp


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply's JSON bytes and their ETag."""

    body: bytes
    etag: str


def reply_of(body: bytes) -> Reply:
    """A reply of these bytes, its ETag their hash."""
    return Reply(body, f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"')


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names this ETag (or any, `*`); compared weakly, as
    RFC 9110 asks of If-None-Match."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


class Replies:
    """The record replies one app keeps, `entries` at most (least recently used go first),
    each under the dataset and reproducers versions it was made at."""

    def __init__(self, engine: Engine, entries: int) -> None:
        self._engine = engine
        self._records = dataset_cache.Memo(entries)

    def kept_record(self, settings: Settings, record_id: str) -> Reply | None:
        """The reply kept for this record at the store's versions now, or None: one
        statement and no session (app.store.engine.read_now)."""
        if not re.match(ID_PATTERN, record_id):
            return None
        versions = dataset_cache.record_versions_now(self._engine)
        key = ("record", record_id, reproducer_stamp(settings, record_id))
        kept: Reply | None = self._records.peek(self._engine, versions, key)
        return kept

    def record(
        self,
        session: Session,
        settings: Settings,
        record_id: str,
        make: Callable[[], bytes | None],
    ) -> Reply | None:
        """The JSON of the record with this id, made by `make` unless kept; None when `make`
        finds no such record (nothing is kept then)."""
        if not re.match(ID_PATTERN, record_id):  # not a record's id: nothing to key a file by
            body = make()
            return None if body is None else reply_of(body)
        versions = dataset_cache.record_versions(session)
        key = ("record", record_id, reproducer_stamp(settings, record_id))
        kept = self._records.peek(session, versions, key)
        if kept is None:
            body = make()
            if body is None:
                return None
            kept = reply_of(body)
            self._records.put(session, versions, key, kept)
        return kept
