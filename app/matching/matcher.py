"""The matcher: the store's message patterns in one index that follows the store's writes.

`Matcher` keeps the pattern index of the store and follows its writes: it compares the
dataset version on each call and adds what changed, and it caches the built index on disk by
dataset version, so a restart loads it instead of compiling every pattern again. It also
holds what a match needs beside the patterns (the raise sites, the class graph), and the
places and deadline a match computes under.

Several processes may share one store (workers, or replicas on PostgreSQL): each
notices another's write by the dataset version, on its next match or from app.lifecycle.follow in
the background, and finds what changed by the records' content hashes, not by clocks that
may differ between machines. A request never waits for another thread's sync: it answers
with the index as it is, and `freshness` tells how far behind that is.
"""

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from app import exception_classes, store
from app.exception_classes import ClassGraph
from app.matching import deadline
from app.matching.index import PatternIndex
from app.matching.statements import ReleaseRoot, StatementRecords
from app.patterns import PatternError
from app.records import locations, site_keys
from app.records import service as records
from app.records.vocabulary import Vocabulary, store_words, words_of
from app.store.tables import Record

REBUILD_AFTER_PENDING = 200  # patterns matched the slow way before the engine takes them in


RaiseSites = dict[tuple[str, int], list[tuple[str, str]]]
"""(file name, line) -> (record id, the record's filePath) of the sites raising there."""


class IndexBehind(Exception):
    """The match index is not the store's dataset version, and the match asking may not
    wait to bring it up (app.serving.matches sends it to a request thread, which does)."""


@dataclass(frozen=True, slots=True)
class Freshness:
    """How the match index stands against the store: the dataset version it holds, the
    store's, and for how long it has been behind (0 when current)."""

    index_version: str | None
    dataset_version: str
    behind_s: float

    @property
    def stale(self) -> bool:
        return self.index_version != self.dataset_version


class Matcher:
    """The store's message patterns in a PatternIndex that follows every write; a match
    stops after `deadline_s` seconds, and at most `concurrency` compute at once (None: no
    limit to either)."""

    def __init__(
        self,
        engine: Engine,
        cache_dir: Path,
        max_paste_bytes: int,
        deadline_s: float | None = None,
        concurrency: int | None = None,
        release_root: ReleaseRoot | None = None,
    ) -> None:
        self.max_paste_bytes = max_paste_bytes
        self.deadline_s = deadline_s
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency else None
        self._cache_path = cache_dir / "index" / f"{_database_key(engine)}.idx"
        self.statements = StatementRecords(release_root)  # made by matches, read by GET
        self._index: PatternIndex | None = None
        self._version: str | None = None
        self._hashes: dict[str, str] = {}  # record id -> content hash, as indexed
        self._sites: RaiseSites = {}
        self._classes: ClassGraph = {}
        self._words: set[str] = set()
        self._vocabulary = Vocabulary()
        self._lock = threading.Lock()
        self._behind_since: float | None = None  # when a newer dataset version was seen
        self._seen: str | None = None  # the store's dataset version as last read

    def index(self, session: Session) -> PatternIndex:
        """The index, brought up to the store's dataset version unless another thread is
        at it already: then this call answers with the index as it is. The first load
        waits, as there is nothing to answer with before it."""
        return self.index_at(session)[0]

    def index_at(self, session: Session) -> tuple[PatternIndex, str]:
        """The index as `index` gives it, and the store's dataset version it was asked at:
        what the match reads of the store is kept under that version."""
        version = self._saw(records.dataset_version(session))
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._sync(session, version)
        elif version != self._version:
            self._notice_behind()
            if self._lock.acquire(blocking=False):
                try:
                    if version != self._version:
                        self._sync(session, version)
                finally:
                    self._lock.release()
        assert self._index is not None
        return self._index, version

    def index_now(self, session: Session) -> tuple[PatternIndex, str]:
        """`index_at` for a caller that may not wait: an index that is not the store's
        version raises IndexBehind instead of being brought up to it."""
        version = self._saw(records.dataset_version(session))
        if self._index is None or version != self._version:
            self._notice_behind()
            raise IndexBehind(version)
        return self._index, version

    def indexed(self, dataset_version: str) -> bool:
        """Whether the index is that of this dataset version (not one a sync is bringing
        up to it): only then does a match answer for that version alone."""
        return self._index is not None and self._version == dataset_version

    def class_graph(self) -> ClassGraph:
        """The harvested releases' exception classes (app.exception_classes); current as of the last
        `index()` call."""
        return self._classes

    def vocabulary(self) -> Vocabulary:
        """The words of the store's message templates and classes (app.records.vocabulary),
        what an unexplained paste's template may keep; current as of the last `index()`
        call, so neither a match on the event loop nor a listing reads the store for them."""
        return self._vocabulary

    def refresh(self, engine: Engine) -> bool:
        """Bring a loaded index up to the store, waiting for the lock (app.lifecycle.follow, off the
        request path); True when it synced."""
        with Session(engine) as session:
            version = self._saw(records.dataset_version(session))
            if self._index is None or version == self._version:
                return False
            self._notice_behind()
            with self._lock:
                if version == self._version:
                    return False
                self._sync(session, version)
        return True

    def freshness(self, dataset_version: str) -> Freshness:
        """How the index stands against this dataset version (read by the caller)."""
        self._saw(dataset_version)
        if dataset_version == self._version:
            return Freshness(self._version, dataset_version, 0.0)
        self._notice_behind()
        since = self._behind_since  # a sync may clear it meanwhile
        behind = time.monotonic() - since if since is not None else 0.0
        return Freshness(self._version, dataset_version, behind)

    def last_freshness(self) -> Freshness | None:
        """How the index stands against the dataset version last read from the store (by a
        match, the follower's poll or /readyz), from memory alone: for /healthz, which must
        answer when the database or its pool does not. None before any read."""
        seen = self._seen
        return None if seen is None else self.freshness(seen)

    def _saw(self, dataset_version: str) -> str:
        self._seen = dataset_version
        return dataset_version

    def raise_sites(self) -> RaiseSites:
        """Where each record's site raises, for finding records by the innermost frame;
        current as of the last `index()` call."""
        return self._sites

    @property
    def patterns(self) -> int:
        """Patterns in the index; 0 before it is loaded (asking must not load it)."""
        return len(self._index) if self._index is not None else 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        """One of the `concurrency` places to compute a match, waited for until the match
        deadline at most: a few CPU-bound matches at a time, so that the rest of
        the server (/healthz, pages, writes) still gets the GIL. A match that may not wait
        (a small paste, matched on the event loop in its turn) takes none."""
        if self._slots is None:
            yield
            return
        while True:
            wait = deadline.remaining()
            if self._slots.acquire(timeout=-1 if wait is None else wait):
                break
            deadline.check()  # raises once the wait has used up the deadline
        try:
            yield
        finally:
            self._slots.release()

    def _notice_behind(self) -> None:
        if self._behind_since is None:
            self._behind_since = time.monotonic()

    def _sync(self, session: Session, version: str) -> None:
        if self._index is None:
            cached = PatternIndex.load(self._cache_path, version)
            if cached is not None:
                hashes = _hashes(session)
                # Another process may have written between the two reads (PostgreSQL reads
                # each statement afresh): then the hashes are newer than the saved index.
                if records.dataset_version(session) == version:
                    self._index, self._hashes = cached, hashes
            if self._index is None:
                rows = _patterns(session)
                indexed = [(i, p) for i, p, _ in rows if not site_keys.matched_by_location(p)]
                self._index = PatternIndex(indexed)
                self._save(version)
                self._hashes = {record_id: digest for record_id, _, digest in rows}
            self._learn(store_words(session))
        elif self._apply_changes(session):
            self._save(version)
        self._sites = _raise_sites(session)
        self._classes = exception_classes.class_graph(session)
        self._version, self._behind_since = version, None

    def _apply_changes(self, session: Session) -> bool:
        """Add what was written since the last sync, drop what was deleted; True if any.

        Changes are found by content hash: a record written on another machine, or in a
        transaction that committed long after it began, is found all the same."""
        assert self._index is not None
        current = _hashes(session)
        changed = [i for i, digest in current.items() if self._hashes.get(i) != digest]
        gone = self._hashes.keys() - current.keys()
        words: set[str] = set()
        for start in range(0, len(changed), store.SQL_CHUNK):
            chunk = changed[start : start + store.SQL_CHUNK]
            statement = select(
                col(Record.id),
                col(Record.message_pattern),
                col(Record.error_message),
                col(Record.error_class),
            ).where(col(Record.id).in_(chunk))
            for record_id, pattern, message, error_class in session.execute(statement):
                words |= words_of(f"{message}\n{error_class}")
                if site_keys.matched_by_location(pattern):
                    self._index.remove(record_id)  # found by its raise site only
                    continue
                try:
                    self._index.add(record_id, pattern)
                except PatternError as error:  # stored before its limit existed
                    self._index.remove(record_id)
                    self._index.rejected[record_id] = error
        for record_id in gone:
            if record_id in self._index:
                self._index.remove(record_id)
        self._hashes = current
        self._learn(words)
        if len(changed) >= REBUILD_AFTER_PENDING:
            self._index.rebuild()
        return bool(changed) or bool(gone)

    def _learn(self, words: set[str]) -> None:
        """Add words to the vocabulary: a new Vocabulary only when some are new, so what
        was kept under the old one stays valid while the words do not change."""
        if not words <= self._words:
            self._words |= words
            self._vocabulary = Vocabulary(self._words)

    def _save(self, version: str) -> None:
        assert self._index is not None
        self._cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._index.save(self._cache_path, version)


def _database_key(engine: Engine) -> str:
    """A cache file name per database, so two stores never share an index."""
    url = engine.url.render_as_string(hide_password=False)
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def _patterns(session: Session) -> list[tuple[str, str, str]]:
    statement = select(col(Record.id), col(Record.message_pattern), col(Record.content_hash))
    return [tuple(row) for row in session.execute(statement)]


def _hashes(session: Session) -> dict[str, str]:
    return dict(session.execute(select(col(Record.id), col(Record.content_hash))).all())


def _raise_sites(session: Session) -> RaiseSites:
    """Every known raise line of every record: as written, and in each harvested release."""
    sites: RaiseSites = {}
    written = select(col(Record.id), col(Record.file_path), col(Record.line_number))
    rows = [*session.execute(written).all(), *locations.known_lines(session)]
    for record_id, file_path, line in rows:
        if file_path and line is not None:
            entry = (record_id, file_path)
            at = sites.setdefault((file_path.rpartition("/")[2], line), [])
            if entry not in at:
                at.append(entry)
    return sites
