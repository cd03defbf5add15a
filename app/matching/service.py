"""The matching service: pasted text -> exceptions and the records that explain them.

`match_text` is the one code path behind POST /api/match, the paste box of the web pages,
`errkb match` and the search page's error-line boost (docs/architecture.md: pasted text ->
logtext -> traceback -> index -> rank). `Matcher` keeps the pattern index of the store
and follows its writes: it compares the dataset version on each call and adds what
changed, and it caches the built index on disk by dataset version, so a restart loads it
instead of compiling every pattern again.

A request runs under the matcher's deadline and its reply is capped: a paste of a
hundred thousand exception lines answers with the first `MAX_EXCEPTIONS` of them (those that
the shown matches explain first) and `truncated: true`, not with a reply ten times its size.

Several processes may share one store (workers, or replicas on PostgreSQL): each
notices another's write by the dataset version, on its next match or from app.ops.follow in
the background, and finds what changed by the records' content hashes, not by clocks that
may differ between machines. A request never waits for another thread's sync: it answers
with the index as it is, and `freshness` tells how far behind that is.
"""

import hashlib
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from app import classes
from app.classes import ClassGraph
from app.errors import AppError
from app.matching import deadline
from app.matching.index import PatternIndex
from app.matching.logtext import clean_lines
from app.matching.origin import log_repos
from app.matching.partial import second_chance
from app.matching.patterns import PatternError
from app.matching.rank import (
    RANKING_VERSION,
    Candidate,
    Match,
    candidate_from,
    path_suffixes,
    rank,
    unquoted,
)
from app.matching.result import ExceptionOut, FrameOut, MatchOut, MatchResult, ScoreComponent
from app.matching.traceback import ParsedException, parse_exceptions
from app.records import derived, locations
from app.records import service as records
from app.records.summary import RecordSummary, summarize
from app.store.tables import Record

DEFAULT_MATCHES = 10
MAX_MATCHES = 100
MAX_EXCEPTIONS = 100  # exceptions in one reply
MAX_FRAMES = 100  # frames of one exception in a reply, the innermost
MAX_MESSAGE_CHARS = 4000  # of one exception's message in a reply (errorMessage's maxLength)
MAX_CAPTURE_CHARS = 256  # of one captured value in a reply
DEADLINE_RETRY_AFTER_S = 5
MAX_PASTE_LINES = 100_000
"""Lines a paste may have: each costs ~10 us to clean and parse whatever it holds, so a
mebibyte of newlines took 8 s; real logs of a mebibyte have 10k-30k lines."""
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
    ) -> None:
        self.max_paste_bytes = max_paste_bytes
        self.deadline_s = deadline_s
        self._slots = threading.BoundedSemaphore(concurrency) if concurrency else None
        self._cache_path = cache_dir / "index" / f"{_database_key(engine)}.idx"
        self._index: PatternIndex | None = None
        self._version: str | None = None
        self._hashes: dict[str, str] = {}  # record id -> content hash, as indexed
        self._sites: RaiseSites = {}
        self._classes: ClassGraph = {}
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

    def class_graph(self) -> ClassGraph:
        """The harvested releases' exception classes (app.classes); current as of the last
        `index()` call."""
        return self._classes

    def refresh(self, engine: Engine) -> bool:
        """Bring a loaded index up to the store, waiting for the lock (app.ops.follow, off the
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
        the server (/healthz, pages, writes) still gets the GIL."""
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
                indexed = [(i, p) for i, p, _ in rows if not locations.matched_by_location(p)]
                self._index = PatternIndex(indexed)
                self._save(version)
                self._hashes = {record_id: digest for record_id, _, digest in rows}
        elif self._apply_changes(session):
            self._save(version)
        self._sites = _raise_sites(session)
        self._classes = classes.class_graph(session)
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
            statement = select(col(Record.id), col(Record.message_pattern)).where(
                col(Record.id).in_(chunk)
            )
            for record_id, pattern in session.execute(statement):
                if locations.matched_by_location(pattern):
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


def _exception_out(exception: ParsedException) -> tuple[ExceptionOut, bool]:
    """The exception as the reply shows it, and whether a cap shortened it."""
    frames = exception.frames[-MAX_FRAMES:]
    out = ExceptionOut(
        index=exception.index,
        error_class=exception.error_class,
        qualified_class=exception.qualified_class,
        message=exception.message[:MAX_MESSAGE_CHARS],
        frames=[FrameOut(file=f.file, line=f.line, function=f.function) for f in frames],
        cause_index=exception.cause_index,
        span=exception.span,
        message_spans=list(exception.message_line_spans),
    )
    shortened = len(frames) < len(exception.frames) or len(out.message) < len(exception.message)
    return out, shortened


def _shown_exceptions(
    exceptions: Sequence[ParsedException], explained: set[int]
) -> list[ParsedException]:
    """At most MAX_EXCEPTIONS, in paste order: those the shown matches explain, then the
    first of the rest."""
    if len(exceptions) <= MAX_EXCEPTIONS:
        return list(exceptions)
    shown = [e for e in exceptions if e.index in explained]
    shown += [e for e in exceptions if e.index not in explained][: MAX_EXCEPTIONS - len(shown)]
    return sorted(shown, key=lambda e: e.index)


def _capped_captures(captures: dict[str, str | None]) -> tuple[dict[str, str | None], bool]:
    capped = {k: v[:MAX_CAPTURE_CHARS] if v else v for k, v in captures.items()}
    return capped, capped != captures


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
    """Refuse a paste over the size or line limit (413)."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise AppError(413, "Paste too large", f"the paste is larger than {max_bytes} bytes")
    lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1  # as clean_lines
    if lines > MAX_PASTE_LINES:
        raise AppError(413, "Paste too large", f"the paste has more than {MAX_PASTE_LINES} lines")


CandidateLookup = Callable[[set[str]], dict[str, Candidate]]


def find_matches(
    index: PatternIndex,
    text: str,
    lookup: CandidateLookup,
    sites: RaiseSites | None = None,
    graph: ClassGraph | None = None,
) -> tuple[list[ParsedException], list[Match]]:
    """The exceptions of `text` and every record whose pattern hit it, or whose raise site
    is an exception's innermost frame (`sites`), best first.

    `lookup` turns the ids of the records that hit into their ranking view; the store
    gives them for the service, a record file for a reproducer checking its own error.
    """
    lines = clean_lines(text)
    exceptions = parse_exceptions(text, lines)
    # KeyError prints the repr of its message: its escapes hide the text a pattern names,
    # so the string inside is scanned too, as an extra line that stands for that message; so
    # is a message read out of an escaped string (an HTTP error body's `\'`).
    quoted = [(e.index, inner) for e in exceptions if (inner := unquoted(e.message)) is not None]
    quoted += [(e.index, e.message) for e in exceptions if _unescaped(text, e)]
    subject, starts = _subject([line.text for line in lines] + [inner for _, inner in quoted])
    regions = _Regions(exceptions)
    hits: list[tuple[str, int | None, str, bool]] = []
    exception_index: int | None
    for count, hit in enumerate(index.candidates(subject)):
        if count % deadline.CHECK_EVERY == 0:
            deadline.check()
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
    partials = second_chance(index, exceptions, hits, len(text.rstrip()))
    wanted = {hit[0] for hit in hits} | {record_id for record_id, _ in raised_at}
    candidates = lookup(wanted | {record_id for record_id, _, _ in partials})
    ranked = rank(index, hits, candidates, exceptions, raised_at, partials, graph, log_repos(lines))
    return exceptions, ranked


def _unescaped(text: str, exception: ParsedException) -> bool:
    """Whether a one-line message differs from the text it was read from: escapes decoded."""
    spans = exception.message_line_spans
    return len(spans) == 1 and text[spans[0][0] : spans[0][1]] != exception.message


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
    """The exceptions in `text` and the records that explain them, best first; a 503 when
    the matcher's deadline passes first (the work stops there too). Blank text holds no
    exception and matches nothing: an empty result, as the API's schema allows it."""
    check_paste(text, matcher.max_paste_bytes)
    if not 1 <= limit <= MAX_MATCHES:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_MATCHES}")
    if not text.strip():
        return MatchResult(
            exceptions=[], matches=[], truncated=False, ranking_version=RANKING_VERSION
        )
    # Following the store's writes (a harvest adds thousands of patterns) is the store's
    # work, not the paste's: it runs before the paste's deadline starts, and is never cut.
    index, version = matcher.index_at(session)
    try:
        with deadline.within(matcher.deadline_s), matcher.slot():
            return _match(matcher, index, version, session, text, limit)
    except deadline.DeadlineExceeded as error:
        raise AppError(
            503,
            "Match took too long",
            f"{error} (ERRKB_MATCH_DEADLINE_S): send a shorter paste, or retry later",
            retry_after_s=DEADLINE_RETRY_AFTER_S,
        ) from None


def match_texts(
    matcher: Matcher, session: Session, texts: Sequence[str], limit: int = DEFAULT_MATCHES
) -> list[MatchResult]:
    """`match_text` for each text, in order, under one deadline: a batch is one paste cut in
    pieces, so its texts together may not exceed the paste limit either."""
    total = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    if total > matcher.max_paste_bytes:
        raise AppError(
            413,
            "Batch too large",
            f"the texts together are {total} bytes; the limit is {matcher.max_paste_bytes}",
        )
    matcher.index(session)  # outside the deadline, as in match_text
    with deadline.within(matcher.deadline_s):
        return [match_text(matcher, session, text, limit) for text in texts]


@dataclass(frozen=True, slots=True)
class _Known:
    """What a match needs of one record, gathered once per dataset version: its ranking
    view, where its site is in each release and its summary (not the whole document: the
    memo holds thousands). Reading them per request cost most of a match on the default
    store with its older releases (a record there has up to forty locations)."""

    candidate: Candidate
    locations: list[locations.Location]
    summary: RecordSummary


def _known_records(session: Session, version: str, record_ids: set[str]) -> dict[str, _Known]:
    """The records with these ids that exist at `version`, by id: those not kept yet in one
    query each for the records and their locations, however many there are."""

    def gather(keys: list[tuple[str, str]]) -> dict[tuple[str, str], _Known | None]:
        stored = records.get_records(session, [record_id for _, record_id in keys])
        located = locations.record_locations(session, stored)
        return {key: _known(stored.get(key[1]), located.get(key[1], [])) for key in keys}

    keys = [(_KNOWN, record_id) for record_id in sorted(record_ids)]
    kept = derived.memo.get_many(session, version, keys, gather)
    return {key[1]: known for key, known in kept.items() if known is not None}


_KNOWN = "match record"


def _known(stored: records.StoredRecord | None, known: list[locations.Location]) -> _Known | None:
    if stored is None:
        return None
    candidate = candidate_from(stored.record, stored.review_state, stored.gone_in, known)
    return _Known(candidate, known, summarize(stored))


def _history(session: Session, version: str, known: _Known) -> list[str]:
    """The record's release history in one line per package, kept per dataset version."""

    def compute() -> list[str]:
        harvested = derived.memo.get(
            session, version, ("harvested releases",), lambda: locations.harvested_releases(session)
        )
        message = known.summary.error_message
        history = locations.release_history(session, message, known.locations, harvested)
        return [item.text for item in history]

    return derived.memo.get(session, version, ("match history", known.summary.id), compute)


def _match(
    matcher: Matcher, index: PatternIndex, version: str, session: Session, text: str, limit: int
) -> MatchResult:
    known: dict[str, _Known] = {}

    def lookup(record_ids: set[str]) -> dict[str, Candidate]:
        known.update(_known_records(session, version, record_ids - known.keys()))
        return {record_id: item.candidate for record_id, item in known.items()}

    exceptions, ranked = find_matches(
        index, text, lookup, matcher.raise_sites(), matcher.class_graph()
    )
    truncated = len(ranked) > limit
    matches = []
    for match in ranked[:limit]:
        captures, shortened = _capped_captures(match.captures)
        truncated |= shortened
        matches.append(
            MatchOut(
                id=match.id,
                score=match.score,
                exception_index=match.exception_index,
                captures=captures,
                reasons=match.reasons,
                components=[
                    ScoreComponent(id=part.id, points=part.points, hint=part.hint)
                    for part in match.components
                ],
                record=known[match.id].summary,
                same_message=[known[other].summary for other in match.same_message],
                history=_history(session, version, known[match.id]),
            )
        )
    explained = {match.exception_index for match in matches if match.exception_index is not None}
    shown = _shown_exceptions(exceptions, explained)
    truncated |= len(shown) < len(exceptions)
    exceptions_out = []
    for exception in shown:
        out, shortened = _exception_out(exception)
        truncated |= shortened
        exceptions_out.append(out)
    return MatchResult(
        ranking_version=RANKING_VERSION,
        exceptions=exceptions_out,
        matches=matches,
        truncated=truncated,
    )
