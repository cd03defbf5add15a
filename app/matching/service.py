"""The matching service: pasted text -> exceptions and the records that explain them.

`match_text` is the one code path behind POST /api/match, the paste box of the web pages,
`errkb match` and the search page's error-line boost (docs/architecture.md: pasted text ->
logtext -> traceback -> index -> rank), with the index of a `Matcher` (app.matching.matcher).
A request runs under the matcher's deadline, and its reply is capped (app.matching.reply).
"""

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

from sqlmodel import Session

from app.app_error import AppError
from app.exception_classes import ClassGraph
from app.matching import deadline, native
from app.matching.call_sites import CallSite, call_site_record, named_call_site
from app.matching.candidate import Candidate, candidate_from, path_suffixes, raised_elsewhere
from app.matching.index import PatternIndex
from app.matching.kernel_assertions import KernelAssertion, kernel_assertions, kernel_record
from app.matching.line_hit import LineHit
from app.matching.logtext import CleanLine, clean_lines, continues_at_margin, line_level
from app.matching.matcher import Matcher, RaiseSites
from app.matching.origin import log_repos, log_versions
from app.matching.partial import second_chance, unquoted
from app.matching.rank import Evidence, rank
from app.matching.reply import capped_captures, exception_out, shown_exceptions
from app.matching.score import Match
from app.matching.score_weights import RANKING_VERSION
from app.matching.statements import Statement, interpreter_error
from app.matching.tracebacks.model import ParsedException
from app.matching.tracebacks.parse import parse_exceptions
from app.records import dataset_cache, locations, release_history
from app.records import service as records
from app.wire.base import Extended
from app.wire.matching import MatchOut, MatchResult
from app.wire.records import RecordSummary

DEFAULT_MATCHES = 10
MAX_MATCHES = 100
DEADLINE_RETRY_AFTER_S = 5
MAX_PASTE_LINES = 100_000
"""Lines a paste may have: each costs its cleaning and parsing whatever it holds, so a
mebibyte of newlines would take seconds, and real logs of a mebibyte have a few times fewer
lines than this (`bench/bench_hostile.py --sections pastes`)."""


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


MAX_WRAPPED_LINES = 64  # log lines joined to the line after them, at most, a paste


def _wrapped_log_lines(lines: Sequence[CleanLine]) -> list[str]:
    """Each log line (one with a prefix) joined to the line after it where that line has no
    prefix of its own and begins at the margin, as a terminal would have shown it unwrapped:
    cut mid-word, or at a space the cleaning took off."""
    joined: list[str] = []
    for line, after in pairwise(lines):
        if len(joined) >= 2 * MAX_WRAPPED_LINES:
            break
        if continues_at_margin(line, after) and line.text.strip():
            head, tail = line.text.rstrip(), after.text.strip()
            joined += [head + tail, f"{head} {tail}"]
    return joined


def check_paste(text: str, max_bytes: int) -> None:
    """Refuse a paste over the size or line limit (413)."""
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise AppError(413, "Paste too large", f"the paste is larger than {max_bytes} bytes")
    lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1  # as clean_lines
    if lines > MAX_PASTE_LINES:
        raise AppError(413, "Paste too large", f"the paste has more than {MAX_PASTE_LINES} lines")


CandidateLookup = Callable[[set[str]], dict[str, Candidate]]
StatementLookup = Callable[[ParsedException, Mapping[str, str]], Candidate | None]
"""The record of the statement at an exception's innermost frame, given the releases the
paste names (app.matching.statements), as its ranking view."""
MovedLookup = Callable[[ParsedException, Mapping[str, str]], Statement | None]
"""Where the `raise` or `assert` of an exception's innermost frame is in a harvested release
whose line moved since the paste's, given the releases the paste names
(app.matching.statements, with `raising`)."""
KernelLookup = Callable[[KernelAssertion, str], Candidate]
"""The record of a kernel's failed check, raised to Python in the given class
(app.matching.kernel_assertions), as its ranking view."""


def find_matches(
    index: PatternIndex,
    text: str,
    lookup: CandidateLookup,
    sites: RaiseSites | None = None,
    graph: ClassGraph | None = None,
    statement: StatementLookup | None = None,
    kernel: KernelLookup | None = None,
    moved: MovedLookup | None = None,
) -> tuple[list[ParsedException], list[Match]]:
    """The exceptions of `text` and every record whose pattern hit it, or whose raise site
    is an exception's innermost frame (`sites`), or, for an error the interpreter raised
    where no raise site is, the record of the statement there (`statement`), or, for a
    kernel's failed check no record's pattern explains, the record of the check (`kernel`),
    best first. Where no record raises at an innermost frame's `raise` or `assert` line (the
    paste's release is not harvested), the record of that statement where a harvested release
    has it (`moved`) is raised there: a bare `AssertionError` names its site by that alone.

    `lookup` turns the ids of the records that hit into their ranking view; the store
    gives them for the service, a record file for a reproducer checking its own error.
    """
    lines = clean_lines(text)
    exceptions = parse_exceptions(text, lines)
    # KeyError prints the repr of its message: its escapes hide the text a pattern names,
    # so the string inside is scanned too, as an extra line that stands for that message; so
    # is a message read out of an escaped string (an HTTP error body's `\'`), a ROCm
    # build's message in CUDA's words, and a native message without the place gloo puts
    # before it.
    quoted = [(e.index, inner) for e in exceptions if (inner := unquoted(e.message)) is not None]
    quoted += [(e.index, e.message) for e in exceptions if _unescaped(text, e)]
    quoted += [
        (e.index, cuda) for e in exceptions if (cuda := native.in_cuda_words(e.message)) is not None
    ]
    quoted += [
        (e.index, rest) for e in exceptions if (rest := native.without_place(e.message)) is not None
    ]
    # A log line a terminal wrapped (a long path cut at the column, the rest on a line of
    # its own without the log's prefix) is scanned joined too, as a line outside any
    # exception: a log site's record fits the whole of it.
    extra: list[tuple[int | None, str]] = [*quoted]
    if not exceptions:
        extra += [(None, joined) for joined in _wrapped_log_lines(lines)]
    subject, starts = _subject([line.text for line in lines] + [inner for _, inner in extra])
    regions = _Regions(exceptions)
    hits: list[LineHit] = []
    exception_index: int | None
    for count, hit in enumerate(index.candidates(subject)):
        if count % deadline.CHECK_EVERY == 0:
            deadline.check()
        number = bisect_right(starts, hit.start) - 1
        if number >= len(lines):
            exception_index, inner = extra[number - len(lines)]
            hits.append(LineHit(hit.key, exception_index, inner, exception_index is not None))
            continue
        line = lines[number]
        begin = hit.start - starts[number]
        exception_index, on_message = regions.at(
            line.offset(max(begin, hit.end - starts[number] - 1))
        )
        if not on_message:
            exception_index, on_message = regions.at(line.offset(begin))
        hits.append(LineHit(hit.key, exception_index, line.text, on_message))
    versions = log_versions(lines)
    raised_at = _raised_at(exceptions, sites or {})
    moves = _moved_raises(exceptions, raised_at, sites or {}, moved, versions)
    wanted = {hit.record_id for hit in hits} | {record_id for record_id, _ in raised_at}
    found = lookup(wanted | {record_id for record_id, _, _ in moves})
    raised_at += [
        (record_id, exception_index)
        for record_id, exception_index, where in moves
        if (candidate := found.get(record_id)) is not None
        and candidate.file_path == where.file_path
        and where.line in candidate.lines
        and not candidate.releases.isdisjoint(where.releases)
    ]
    wanted |= {record_id for record_id, _ in raised_at}

    def elsewhere(record_id: str, exception: ParsedException) -> bool:
        candidate = found.get(record_id)
        return candidate is not None and raised_elsewhere(candidate, exception)

    partials = second_chance(index, exceptions, hits, len(text.rstrip()), elsewhere)
    candidates = lookup(wanted | {record_id for record_id, _, _ in partials})
    statements = []
    raised = {exception_index for _, exception_index in raised_at}
    for exception in exceptions:
        if (
            statement is not None
            and exception.frames
            and exception.index not in raised
            and interpreter_error(exception)
            and (found_statement := statement(exception, versions)) is not None
        ):
            candidates[found_statement.id] = found_statement
            statements.append((found_statement.id, exception.index))
    checks = []
    if kernel is not None:
        asserted = native.device_side_assert(exceptions)
        error_class = "RuntimeError" if asserted is None else exceptions[asserted].qualified_class
        for assertion in kernel_assertions(lines):
            made = kernel(assertion, error_class)
            candidates[made.id] = made
            checks.append((made.id, assertion.text))
    evidence = Evidence(
        exceptions=exceptions,
        hits=hits,
        raised_at=raised_at,
        partials=partials,
        statements=statements,
        kernel_checks=checks,
        raised_from=native.raised_from_elsewhere(text, exceptions),
        graph=graph,
        log_repos=log_repos(lines),
        log_versions=versions,
        log_levels={
            line.text.strip(): level for line in lines if (level := line_level(line.prefix))
        },
    )
    ranked = rank(index, candidates, evidence)
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


def _moved_raises(
    exceptions: Sequence[ParsedException],
    raised_at: Sequence[tuple[str, int]],
    sites: RaiseSites,
    moved: MovedLookup | None,
    versions: Mapping[str, str],
) -> list[tuple[str, int, Statement]]:
    """(record id, exception index, where) of the records that may raise at the `raise` or
    `assert` of an innermost frame no record raises at: the ones at the statement's line in a
    harvested release whose file has it elsewhere (the caller keeps those whose site is there
    in one of the releases)."""
    if moved is None:
        return []
    raised = {exception_index for _, exception_index in raised_at}
    found = []
    for exception in exceptions:
        if not exception.frames or exception.index in raised:
            continue
        where = moved(exception, versions)
        if where is None:
            continue
        for record_id, file_path in sites.get((where.file_path.rpartition("/")[2], where.line), ()):
            if file_path == where.file_path:
                found.append((record_id, exception.index, where))
    return found


def match_text(
    matcher: Matcher, session: Session, text: str, limit: int = DEFAULT_MATCHES
) -> MatchResult:
    """The exceptions in `text` and the records that explain them, best first; a 503 when
    the matcher's deadline passes first (the work stops there too). Blank text holds no
    exception and matches nothing: an empty result, as the API's schema allows it.

    The index is first brought up to the store's writes, and the match waits for its slot
    among the matches computing at once (app.matching.matcher)."""
    if (blank := _blank(matcher, text, limit)) is not None:
        return blank
    # Following the store's writes (a harvest adds thousands of patterns) is the store's
    # work, not the paste's: it runs before the paste's deadline starts, and is never cut.
    index, version = matcher.index_at(session)
    with _in_time(matcher), matcher.slot():
        return _match(matcher, index, version, session, text, limit)


def match_text_now(
    matcher: Matcher, session: Session, text: str, limit: int = DEFAULT_MATCHES
) -> MatchResult:
    """`match_text` for a caller that may not wait (the event loop, app.serving.matches):
    IndexBehind (app.matching.matcher) before any work when the index is not the store's,
    and no slot among the matches computing at once."""
    if (blank := _blank(matcher, text, limit)) is not None:
        return blank
    index, version = matcher.index_now(session)
    with _in_time(matcher):
        return _match(matcher, index, version, session, text, limit)


def _blank(matcher: Matcher, text: str, limit: int) -> MatchResult | None:
    """Refuse a paste or a limit out of bounds; the empty result of blank text."""
    check_paste(text, matcher.max_paste_bytes)
    if not 1 <= limit <= MAX_MATCHES:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_MATCHES}")
    if text.strip():
        return None
    return MatchResult(exceptions=[], matches=[], truncated=False, ranking_version=RANKING_VERSION)


@contextmanager
def _in_time(matcher: Matcher) -> Iterator[None]:
    """Work under the matcher's deadline; a 503 when it passes first."""
    try:
        with deadline.within(matcher.deadline_s):
            yield
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
    memo holds thousands). Read per request, they would be most of a match on the default
    store with its older releases, where a record has many locations
    (`bench/profile_match.py`)."""

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
    kept = dataset_cache.memo.get_many(session, version, keys, gather)
    return {key[1]: known for key, known in kept.items() if known is not None}


_KNOWN = "match record"


def _known(stored: records.StoredRecord | None, known: list[locations.Location]) -> _Known | None:
    if stored is None:
        return None
    candidate = candidate_from(stored.record, stored.review_state, stored.gone_in, known)
    return _Known(candidate, known, RecordSummary.model_validate(stored))


def _history(session: Session, version: str, known: _Known) -> list[str]:
    """The record's release history in one line per package, kept per dataset version."""

    def compute() -> list[str]:
        harvested = dataset_cache.memo.get(
            session,
            version,
            ("harvested releases",),
            lambda: release_history.harvested_releases(session),
        )
        message = known.summary.error_message
        history = release_history.release_history(session, message, known.locations, harvested)
        return [item.text for item in history]

    return dataset_cache.memo.get(session, version, ("match history", known.summary.id), compute)


def _at_call_sites(
    matcher: Matcher, session: Session, known: dict[str, _Known], ranked: list[Match]
) -> list[Match]:
    """Each native check whose message names the line that called it answered with a record
    of that call (app.matching.call_sites), the check's own record beside it; the records of
    one call (a curated check and its draft) are one answer."""
    answers: list[Match] = []
    calls: dict[CallSite, Match] = {}
    for match in ranked:
        site = _at_call_site(matcher, session, known, match)
        if site is not None and site in calls:
            calls[site].same_message.extend(match.same_message)
            continue
        if site is not None:
            calls[site] = match
        answers.append(match)
    return answers


def _at_call_site(
    matcher: Matcher, session: Session, known: dict[str, _Known], match: Match
) -> CallSite | None:
    """The call the match's message names, where its record is turned into that call's."""
    site = named_call_site(match.captures)
    if site is None:
        return None
    macro = records.get_record(session, match.id)
    own_files = [
        str(where.context["sourceFile"])
        for where in known[match.id].locations
        if where.context and where.context.get("sourceFile")
    ]
    made = None if macro is None else call_site_record(macro, site, own_files)
    if made is None:
        return None
    item = _known(matcher.statements.keep(made), [])
    assert item is not None  # a record was given
    known[made.id] = item
    match.reasons.append(f"the message names the call at {site.file_path}:{site.line}")
    match.same_message.insert(0, match.id)
    match.id = made.id
    return site


def _match(
    matcher: Matcher, index: PatternIndex, version: str, session: Session, text: str, limit: int
) -> MatchResult:
    known: dict[str, _Known] = {}

    def lookup(record_ids: set[str]) -> dict[str, Candidate]:
        known.update(_known_records(session, version, record_ids - known.keys()))
        return {record_id: item.candidate for record_id, item in known.items()}

    def harvested() -> list[str]:
        return dataset_cache.memo.get(
            session,
            version,
            ("harvested releases",),
            lambda: release_history.harvested_releases(session),
        )

    def statement(exception: ParsedException, named: Mapping[str, str]) -> Candidate | None:
        stored = matcher.statements.record(exception, harvested(), named)
        item = _known(stored, [])
        if item is None:
            return None
        known[item.summary.id] = item
        return item.candidate

    def moved(exception: ParsedException, named: Mapping[str, str]) -> Statement | None:
        return matcher.statements.statement(exception.frames[-1], harvested(), named, raising=True)

    def kernel(assertion: KernelAssertion, error_class: str) -> Candidate:
        item = _known(matcher.statements.keep(kernel_record(assertion, error_class)), [])
        assert item is not None  # a record was given
        known[item.summary.id] = item
        return item.candidate

    exceptions, ranked = find_matches(
        index,
        text,
        lookup,
        matcher.raise_sites(),
        matcher.class_graph(),
        statement,
        kernel,
        moved,
    )
    truncated = len(ranked) > limit
    matches = []
    for match in _at_call_sites(matcher, session, known, ranked[:limit]):
        captures, shortened = capped_captures(match.captures)
        truncated |= shortened
        answered = Extended(
            match,
            captures=captures,
            record=known[match.id].summary,
            same_message=[known[other].summary for other in match.same_message],
            history=_history(session, version, known[match.id]),
        )
        matches.append(MatchOut.model_validate(answered))
    explained = {match.exception_index for match in matches if match.exception_index is not None}
    shown = shown_exceptions(exceptions, explained)
    truncated |= len(shown) < len(exceptions)
    exceptions_out = []
    for exception in shown:
        out, shortened = exception_out(exception)
        truncated |= shortened
        exceptions_out.append(out)
    return MatchResult(
        ranking_version=RANKING_VERSION,
        exceptions=exceptions_out,
        matches=matches,
        truncated=truncated,
    )
