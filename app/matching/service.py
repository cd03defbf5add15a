"""The matching service: pasted text -> exceptions and the records that explain them.

`match_text` is the one code path behind POST /api/match, the paste box of the web pages,
`errkb match` and the search page's error-line boost (ARCHITECTURE.md: pasted text ->
logtext -> traceback -> index -> rank). `Matcher` keeps the pattern index of the store
and follows its writes: it compares the dataset version on each call and adds what
changed, and it caches the built index on disk by dataset version, so a restart loads it
instead of compiling every pattern again (issue 3).

Several processes may share one store (workers, or replicas on PostgreSQL, issue 14): each
notices another's write by the dataset version, on its next match or from app.ops.follow in
the background, and finds what changed by the records' content hashes, not by clocks that
may differ between machines. A request never waits for another thread's sync: it answers
with the index as it is, and `freshness` tells how far behind that is.
"""

import hashlib
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select
from sqlmodel import Session

from app import locations, records
from app.errors import AppError
from app.matching.index import PatternIndex
from app.matching.logtext import clean_lines
from app.matching.rank import Candidate, Match, candidate_from, path_suffixes, rank, unquoted
from app.matching.traceback import ParsedException, parse_exceptions
from app.models import Record
from app.schemas import ExceptionOut, FrameOut, MatchOut, MatchResult, summarize

DEFAULT_MATCHES = 10
MAX_MATCHES = 100
REBUILD_AFTER_PENDING = 200  # patterns matched the slow way before the engine takes them in


RaiseSites = dict[tuple[str, int], list[tuple[str, str]]]
"""(file name, line) -> (record id, the record's filePath) of the sites raising there."""


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
    """The store's message patterns in a PatternIndex that follows every write."""

    def __init__(self, engine: Engine, cache_dir: Path, max_paste_bytes: int) -> None:
        self.max_paste_bytes = max_paste_bytes
        self._cache_path = cache_dir / "index" / f"{_database_key(engine)}.idx"
        self._index: PatternIndex | None = None
        self._version: str | None = None
        self._hashes: dict[str, str] = {}  # record id -> content hash, as indexed
        self._sites: RaiseSites = {}
        self._lock = threading.Lock()
        self._behind_since: float | None = None  # when a newer dataset version was seen

    def index(self, session: Session) -> PatternIndex:
        """The index, brought up to the store's dataset version unless another thread is
        at it already: then this call answers with the index as it is. The first load
        waits, as there is nothing to answer with before it."""
        version = records.dataset_version(session)
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
        return self._index

    def refresh(self, engine: Engine) -> bool:
        """Bring a loaded index up to the store, waiting for the lock (app.ops.follow, off the
        request path); True when it synced."""
        with Session(engine) as session:
            version = records.dataset_version(session)
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
        if dataset_version == self._version:
            return Freshness(self._version, dataset_version, 0.0)
        self._notice_behind()
        since = self._behind_since  # a sync may clear it meanwhile
        behind = time.monotonic() - since if since is not None else 0.0
        return Freshness(self._version, dataset_version, behind)

    def raise_sites(self) -> RaiseSites:
        """Where each record's site raises, for finding records by the innermost frame;
        current as of the last `index()` call."""
        return self._sites

    @property
    def patterns(self) -> int:
        """Patterns in the index; 0 before it is loaded (asking must not load it)."""
        return len(self._index) if self._index is not None else 0

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
                indexed = [(i, p) for i, p, _ in rows if not locations.matched_by_location(p)]
                self._index = PatternIndex(indexed)
                self._save(version)
                self._hashes = {record_id: digest for record_id, _, digest in rows}
        elif self._apply_changes(session):
            self._save(version)
        self._sites = _raise_sites(session)
        self._version, self._behind_since = version, None

    def _apply_changes(self, session: Session) -> bool:
        """Add what was written since the last sync, drop what was deleted; True if any.

        Changes are found by content hash: a record written on another machine, or in a
        transaction that committed long after it began, is found all the same."""
        assert self._index is not None
        current = _hashes(session)
        changed = [i for i, digest in current.items() if self._hashes.get(i) != digest]
        gone = self._hashes.keys() - current.keys()
        for start in range(0, len(changed), records.SQL_CHUNK):
            chunk = changed[start : start + records.SQL_CHUNK]
            statement = select(Record.id, Record.message_pattern).where(Record.id.in_(chunk))
            for record_id, pattern in session.execute(statement):
                if not locations.matched_by_location(pattern):
                    self._index.add(record_id, pattern)
                elif record_id in self._index:
                    self._index.remove(record_id)
        for record_id in gone:
            if record_id in self._index:
                self._index.remove(record_id)
        self._hashes = current
        if len(changed) >= REBUILD_AFTER_PENDING:
            self._index.rebuild()
        return bool(changed) or bool(gone)

    def _save(self, version: str) -> None:
        assert self._index is not None
        self._cache_path.parent.mkdir(parents=True, exist_ok=True)
        self._index.save(self._cache_path, version)


def _database_key(engine: Engine) -> str:
    """A cache file name per database, so two stores never share an index."""
    url = engine.url.render_as_string(hide_password=False)
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def _patterns(session: Session) -> list[tuple[str, str, str]]:
    statement = select(Record.id, Record.message_pattern, Record.content_hash)
    return [tuple(row) for row in session.execute(statement)]


def _hashes(session: Session) -> dict[str, str]:
    return dict(session.execute(select(Record.id, Record.content_hash)).all())


def _raise_sites(session: Session) -> RaiseSites:
    """Every known raise line of every record: as written, and in each harvested release."""
    sites: RaiseSites = {}
    rows = session.execute(select(Record.id, Record.file_path, Record.line_number)).all()
    rows += locations.known_lines(session)
    for record_id, file_path, line in rows:
        if file_path and line is not None:
            entry = (record_id, file_path)
            at = sites.setdefault((file_path.rpartition("/")[2], line), [])
            if entry not in at:
                at.append(entry)
    return sites


def _exception_out(exception: ParsedException) -> ExceptionOut:
    return ExceptionOut(
        index=exception.index,
        error_class=exception.error_class,
        qualified_class=exception.qualified_class,
        message=exception.message,
        frames=[FrameOut(file=f.file, line=f.line, function=f.function) for f in exception.frames],
        cause_index=exception.cause_index,
        span=exception.span,
        message_spans=list(exception.message_line_spans),
    )


class _Regions:
    """Which exception (and whether its message) an original-text offset falls in."""

    def __init__(self, exceptions: Sequence[ParsedException]) -> None:
        spans = [(s, e, x.index, True) for x in exceptions for s, e in x.message_line_spans]
        spans += [(x.span[0], x.span[1], x.index, False) for x in exceptions]
        spans.sort()
        self._spans = spans
        self._starts = [span[0] for span in spans]

    def at(self, offset: int) -> tuple[int | None, bool]:
        best: tuple[int | None, bool] = (None, False)
        for start, end, index, is_message in self._spans[: bisect_right(self._starts, offset)]:
            if start <= offset < end or (is_message and start <= offset <= end):
                if is_message:
                    return index, True
                best = (index, False)
        return best


def _subject(lines: Sequence[str]) -> tuple[str, list[int]]:
    """The text the engine scans (one line each), and where each line starts in it."""
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return "\n".join(lines), starts


def check_paste(text: str, max_bytes: int) -> None:
    """Refuse an empty paste (422) or one over the size limit (413)."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise AppError(413, "Paste too large", f"the paste is larger than {max_bytes} bytes")
    if not text.strip():
        raise AppError(422, "Empty paste", "paste a traceback, a log or an error line")


CandidateLookup = Callable[[set[str]], dict[str, Candidate]]


def find_matches(
    index: PatternIndex, text: str, lookup: CandidateLookup, sites: RaiseSites | None = None
) -> tuple[list[ParsedException], list[Match]]:
    """The exceptions of `text` and every record whose pattern hit it, or whose raise site
    is an exception's innermost frame (`sites`), best first.

    `lookup` turns the ids of the records that hit into their ranking view; the store
    gives them for the service, a record file for a reproducer checking its own error.
    """
    lines = clean_lines(text)
    exceptions = parse_exceptions(text, lines)
    # KeyError prints the repr of its message: its escapes hide the text a pattern names,
    # so the string inside is scanned too, as an extra line that stands for that message.
    quoted = [(e.index, inner) for e in exceptions if (inner := unquoted(e.message)) is not None]
    subject, starts = _subject([line.text for line in lines] + [inner for _, inner in quoted])
    regions = _Regions(exceptions)
    hits = []
    for hit in index.candidates(subject):
        number = bisect_right(starts, hit.start) - 1
        if number >= len(lines):
            exception_index, inner = quoted[number - len(lines)]
            hits.append((hit.key, exception_index, inner, True))
            continue
        line = lines[number]
        begin = hit.start - starts[number]
        exception_index, on_message = regions.at(
            line.offset(max(begin, hit.end - starts[number] - 1))
        )
        if not on_message:
            exception_index, on_message = regions.at(line.offset(begin))
        hits.append((hit.key, exception_index, line.text, on_message))
    raised_at = _raised_at(exceptions, sites or {})
    candidates = lookup({hit[0] for hit in hits} | {record_id for record_id, _ in raised_at})
    return exceptions, rank(index, hits, candidates, exceptions, raised_at)


def _raised_at(exceptions: Sequence[ParsedException], sites: RaiseSites) -> list[tuple[str, int]]:
    """(record id, exception index) of the records raising at each innermost frame."""
    found = []
    for exception in exceptions:
        if not exception.frames:
            continue
        frame = exception.frames[-1]
        path = "/" + frame.file.replace("\\", "/").lstrip("/")
        for record_id, file_path in sites.get((path.rpartition("/")[2], frame.line), ()):
            if path.endswith(path_suffixes(file_path)):
                found.append((record_id, exception.index))
    return found


def match_text(
    matcher: Matcher, session: Session, text: str, limit: int = DEFAULT_MATCHES
) -> MatchResult:
    """The exceptions in `text` and the records that explain them, best first."""
    check_paste(text, matcher.max_paste_bytes)
    if not 1 <= limit <= MAX_MATCHES:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_MATCHES}")
    stored: dict[str, records.StoredRecord] = {}

    def lookup(record_ids: set[str]) -> dict[str, Candidate]:
        stored.update(records.get_records(session, record_ids))
        known = locations.record_locations(session, stored)
        return {
            record_id: candidate_from(
                item.record(), item.review_state, item.gone_in, known.get(record_id, ())
            )
            for record_id, item in stored.items()
        }

    index = matcher.index(session)
    exceptions, ranked = find_matches(index, text, lookup, matcher.raise_sites())
    return MatchResult(
        exceptions=[_exception_out(exception) for exception in exceptions],
        matches=[
            MatchOut(
                id=match.id,
                score=match.score,
                exception_index=match.exception_index,
                captures=match.captures,
                reasons=match.reasons,
                record=summarize(stored[match.id]),
            )
            for match in ranked[:limit]
        ],
    )
