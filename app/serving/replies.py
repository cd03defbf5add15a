"""Reply bodies kept for as long as the store does not change: GET /api/errors/{id} and
POST /api/match answer the same bytes to the same request until a write moves the dataset
version (app.records.derived), so the second asking costs one statement (the version) and
no view, match or JSON.

Without it a GET by id gathered its record, runs, drift check and generated script (five
statements) and wrote their JSON, and a 5 KB match cleaned, parsed, scanned and ranked its
paste, on every request: a few milliseconds each, against well under one for /healthz, so
two workers could not serve the thousands of requests a second asked of them.

A record's JSON also shows its reproducer's runs, drift checks and generated script, which
are written without moving the dataset version: they move the reproducers version, read in
the same statement, and the script file's own stamp is part of the key. A match is kept only
when the match index is that of the version it was asked at (not one a sync is still
bringing up to it). Each reply carries a strong ETag (a hash of its bytes), so a client that
sends it back in If-None-Match gets 304 without the body.
"""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlmodel import Session

from app.config import Settings
from app.curation.hits import match_subject
from app.matching.matcher import Matcher
from app.matching.result import MatchResult
from app.records import derived
from app.records import service as records
from app.records.model import ID_PATTERN
from app.serving.views import reproducer_stamp


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply's JSON bytes, their ETag and, for a match, what it counts a hit toward."""

    body: bytes
    etag: str
    subject: tuple[str, str] | None = None


def reply_of(body: bytes, subject: tuple[str, str] | None = None) -> Reply:
    """A reply of these bytes, its ETag their hash."""
    return Reply(body, f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"', subject)


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names this ETag (or any, `*`); compared weakly, as
    RFC 9110 asks of If-None-Match."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


class Replies:
    """The replies one app keeps, `entries` at most of each kind (least recently used go
    first), each under the version of the store it was made at: a record's under the
    dataset and reproducers versions, a match's under the dataset version."""

    def __init__(self, engine: Engine, entries: int) -> None:
        self._engine = engine
        self._records = derived.Memo(entries)
        self._matches = derived.Memo(entries)

    def kept_record(self, settings: Settings, record_id: str) -> Reply | None:
        """The reply kept for this record at the store's versions now, or None: one
        statement and no session (app.store.engine.read_now)."""
        if not re.match(ID_PATTERN, record_id):
            return None
        versions = derived.record_versions_now(self._engine)
        key = ("record", record_id, reproducer_stamp(settings, record_id))
        kept: Reply | None = self._records.peek(self._engine, versions, key)
        return kept

    def kept_match(self, text: str, limit: int) -> Reply | None:
        """The reply kept for this paste at the store's version now, or None, as
        `kept_record`."""
        version = derived.dataset_version_now(self._engine)
        kept: Reply | None = self._matches.peek(self._engine, version, _match_key(text, limit))
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
        versions = derived.record_versions(session)
        key = ("record", record_id, reproducer_stamp(settings, record_id))
        kept = self._records.peek(session, versions, key)
        if kept is None:
            body = make()
            if body is None:
                return None
            kept = reply_of(body)
            self._records.put(session, versions, key, kept)
        return kept

    def match(
        self,
        matcher: Matcher,
        session: Session,
        text: str,
        limit: int,
        make: Callable[[], MatchResult],
    ) -> Reply:
        """The match of this paste, made by `make` unless kept: by the paste's hash and the
        limit. An error (413, 422, 503 past the deadline) is raised by `make`, never kept."""
        version = records.dataset_version(session)
        key = _match_key(text, limit)
        kept = self._matches.peek(session, version, key)
        if kept is None:
            result = make()
            kept = reply_of(result.model_dump_json(by_alias=True).encode(), match_subject(result))
            if matcher.indexed(version):
                self._matches.put(session, version, key, kept)
        return kept


def _match_key(text: str, limit: int) -> tuple[str, int, bytes]:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32)
    return "match", limit, digest.digest()
