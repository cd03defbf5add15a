"""Full-text search over the records: the queries behind GET /api/search and the web pages.

The index is the store's (app.store): SQLite FTS5 tables or PostgreSQL tsvectors, built and
kept in step with every write by triggers, over every searched field and, apart, over the
short ones (message, class, tags, file, repo; app.store.fulltext declares them and their
weights). A search ranks in tiers (issue 3), the same on both engines:

1. records the matcher says explain the query, when the query is an error line such as
   "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096" (its number
   is not in any record's text; the record's message pattern captures it);
2. reviewed records holding every word somewhere, ranked over all fields: a curated record
   whose prose answers the query beats drafts that merely share a word in their message
   (issue 9). There are few of them, and their index keys form one range, so this is cheap;
3. records whose short fields hold every word, ranked over those fields;
4. records holding every word somewhere, ranked over all fields, message and class first.

Tier 3 answers most queries alone, and ranking it never decodes the long prose postings of
common words, which is what makes ranking slow on a large store; tier 4 is ranked only when a
page reaches past tier 3. Within a tier, reviewed records come before drafts on equal
scores. When no record holds every word, the search is relaxed to any word.

User text never reaches the engine as syntax: it is split into words, each run of words
between spaces becomes one phrase (app.store.fulltext.TextQuery), and the last word is a
prefix; each engine quotes those words itself. Quotes, operators, column filters, parentheses
and NEAR are thereby plain words or nothing, and never an error.
"""

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session

from app import store
from app.errors import AppError
from app.matching.service import Matcher, match_text
from app.records import service as records
from app.records.service import StoredRecord
from app.store.fulltext import Scope, TextQuery
from app.store.tables import Record, RecordTag

MAX_QUERY_LENGTH = 500
MAX_QUERY_TERMS = 32
MIN_PREFIX_CHARS = 2  # a one-letter prefix would expand to most of the vocabulary
DEFAULT_SEARCH_LIMIT = 20
MAX_SEARCH_LIMIT = 100
MAX_RESULTS_WINDOW = 1000  # deepest position paging reaches; also where counting stops
MATCH_BOOST_LIMIT = 5
SNIPPET_TOKENS = 24
SNIPPET_CONTEXT_TOKENS = 4  # words shown before the first match
RELATED_LIMIT = 8
MAX_ERROR_LINE_CHARS = 300  # how much of a text is looked at to tell an error line

MATCHER, REVIEWED, SUMMARY, TEXT, RECENT = "matcher", "reviewed", "summary", "text", "recent"
_WORD = re.compile(r"[^\W_]+")
_ERROR_LINE = re.compile(
    r"\s{0,40}(?:[A-Za-z_]\w{0,127}\.){0,16}[A-Za-z_]\w{0,127}"
    r"(?:Error|Exception|Warning|Exit|Interrupt)(?::|\s*$)"
)
_TRACEBACK_HEADER = "Traceback (most recent call last)"


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Exact filters of a search; None means any."""

    repo: str | None = None
    error_class: str | None = None
    tag: str | None = None

    def active(self) -> dict[str, str]:
        """The filters set, by their API parameter names."""
        named = {"repo": self.repo, "errorClass": self.error_class, "tag": self.tag}
        return {name: value for name, value in named.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Marked:
    """A text and the (start, end) spans of it that the query matched."""

    text: str
    marks: tuple[tuple[int, int], ...] = ()

    def parts(self) -> list[tuple[str, bool]]:
        """The text cut into (piece, matched) runs, for a page to wrap the matched ones."""
        pieces, at = [], 0
        for start, end in self.marks:
            if start > at:
                pieces.append((self.text[at:start], False))
            pieces.append((self.text[start:end], True))
            at = end
        if at < len(self.text):
            pieces.append((self.text[at:], False))
        return pieces


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One record found: how it was found, its score within that tier, marked text."""

    record: StoredRecord
    score: float
    matched_by: str  # MATCHER, SUMMARY, TEXT or RECENT
    title: Marked  # the error message
    snippet: Marked | None  # the best passage elsewhere, when it is not the message


@dataclass(frozen=True, slots=True)
class SearchResults:
    """One page of a search; `total` is exact unless `total_exact` is False (then a floor)."""

    query: str
    filters: SearchFilters
    hits: list[SearchHit]
    total: int
    total_exact: bool
    offset: int
    limit: int
    next_cursor: str | None
    previous_cursor: str | None
    relaxed: bool = False  # no record held every word; these hold some


@dataclass(frozen=True, slots=True)
class Ranked:
    """A place in a ranking: which record, its score in its tier, how it was found."""

    record_id: str
    score: float
    matched_by: str
    key: int  # the record's key in the full-text index


@dataclass(frozen=True, slots=True)
class RelatedRecord:
    """A record related to another one, and why."""

    record: StoredRecord
    reasons: list[str] = field(default_factory=list)


def query_phrases(query: str) -> list[list[str]]:
    """The words of a query, grouped by the spaces the user typed, at most MAX_QUERY_TERMS.

    `free_buf()` is one group (free, buf), so it must match as a phrase, the way the
    tokenizer split the indexed text; everything that is not a letter or digit is dropped.
    """
    phrases = [_WORD.findall(chunk) for chunk in query.split()]
    return [words for words in phrases if words][:MAX_QUERY_TERMS]


def text_query(
    phrases: Sequence[Sequence[str]], *, any_word: bool = False, prefix: bool = True
) -> TextQuery:
    """The query the store looks for: the phrases, all (or any) of them, the last word a
    prefix when asked and long enough to be one."""
    return TextQuery(
        tuple(tuple(words) for words in phrases),
        any_word,
        prefix and len(phrases[-1][-1]) >= MIN_PREFIX_CHARS,
    )


def looks_like_error_line(query: str) -> bool:
    """Whether a query starts like `SomeError: message`, so the matcher should see it."""
    return _ERROR_LINE.match(query[:MAX_ERROR_LINE_CHARS]) is not None


def looks_like_paste(query: str) -> bool:
    """Whether text from the one box of the home page is a traceback or log (-> match)."""
    stripped = query.strip()
    return "\n" in stripped or _TRACEBACK_HEADER in stripped or looks_like_error_line(stripped)


def encode_cursor(offset: int) -> str:
    """An opaque cursor that resumes a ranking at this position."""
    return base64.urlsafe_b64encode(f"o{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The position a cursor resumes at; a cursor we did not make is a 400."""
    try:
        value = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        value = ""
    digits = value[1:]
    if not value.startswith("o") or not digits.isdigit() or int(digits) >= MAX_RESULTS_WINDOW:
        raise AppError(400, "Invalid cursor", "cursor must be a value returned as nextCursor")
    return int(digits)


def search(
    session: Session,
    query: str,
    filters: SearchFilters = SearchFilters(),
    *,
    limit: int = DEFAULT_SEARCH_LIMIT,
    cursor: str | None = None,
    matcher: Matcher | None = None,
) -> SearchResults:
    """Records for a query, best first; an empty query lists the most recently changed.

    With a matcher, a query that is an error line is also matched against the records'
    message patterns, and the records that explain it come first.
    """
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise AppError(422, "Invalid limit", f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
    if len(query) > MAX_QUERY_LENGTH:
        raise AppError(422, "Query too long", f"q must be at most {MAX_QUERY_LENGTH} characters")
    offset = decode_cursor(cursor) if cursor else 0
    if not query.strip():
        return _recent(session, query, filters, offset, limit)
    phrases = query_phrases(query)
    if not phrases:
        return _page(query, filters, [], 0, True, offset, limit)
    error_line = looks_like_error_line(query)
    # An error line ends in a value, not a word being typed: no prefix, and no prefix's cost.
    prefix = not error_line
    index = store.backend(session)
    boosted = _boosted(session, query, filters, matcher) if error_line else []
    wanted = text_query(phrases, prefix=prefix)
    counted = index.count(session, wanted, filters, MAX_RESULTS_WINDOW)
    relaxed = counted == 0 and len(phrases) > 1
    if relaxed:
        wanted = text_query(phrases, any_word=True, prefix=prefix)
        counted = index.count(session, wanted, filters, MAX_RESULTS_WINDOW)
    ranked = _rank(session, wanted, filters, boosted, offset + limit + 1, relaxed)
    extra = len(boosted) - len(index.holding(session, wanted, [row.key for row in boosted]))
    exact = counted < MAX_RESULTS_WINDOW
    hits = _hits(session, ranked[offset : offset + limit], _Terms(phrases, prefix))
    return _page(query, filters, hits, counted + extra, exact, offset, limit, len(ranked), relaxed)


def _page(
    query: str,
    filters: SearchFilters,
    hits: list[SearchHit],
    total: int,
    exact: bool,
    offset: int,
    limit: int,
    ranked: int = 0,
    relaxed: bool = False,
) -> SearchResults:
    more = ranked > offset + limit and offset + limit < MAX_RESULTS_WINDOW
    return SearchResults(
        query=query,
        filters=filters,
        hits=hits,
        total=total,
        total_exact=exact,
        offset=offset,
        limit=limit,
        next_cursor=encode_cursor(offset + limit) if more else None,
        previous_cursor=encode_cursor(max(0, offset - limit)) if offset else None,
        relaxed=relaxed,
    )


def _boosted(
    session: Session, query: str, filters: SearchFilters, matcher: Matcher | None
) -> list[Ranked]:
    """The records the matcher says explain an error line, best first."""
    if matcher is None:
        return []
    matches = match_text(matcher, session, query, MATCH_BOOST_LIMIT).matches
    wanted = [match for match in matches if _passes(match.record, filters)]
    if not wanted:
        return []
    keys = store.backend(session).keys(session, [match.id for match in wanted])
    return [Ranked(match.id, match.score, MATCHER, keys[match.id]) for match in wanted]


def _passes(summary: Any, filters: SearchFilters) -> bool:
    return (
        filters.repo in (None, summary.repo)
        and filters.error_class in (None, summary.error_class)
        and (filters.tag is None or filters.tag in summary.tags)
    )


_TIERS = (
    # (how found, which records over which fields)
    (REVIEWED, Scope.REVIEWED),
    (SUMMARY, Scope.HEAD),
    (TEXT, Scope.BODY_ONLY),
)


def _rank(
    session: Session,
    wanted: TextQuery,
    filters: SearchFilters,
    boosted: list[Ranked],
    limit: int,
    relaxed: bool = False,
) -> list[Ranked]:
    """The first `limit` of the ranking, tier after tier.

    Equal scores are ordered by index key, highest first: reviewed records have the higher
    keys (app.store.fulltext), so they come before drafts without a join per match.
    """
    ranked = list(boosted)
    seen = {row.record_id for row in boosted}
    index = store.backend(session)
    for matched_by, scope in _TIERS:
        if len(ranked) >= limit:
            break
        if matched_by == REVIEWED and relaxed:
            continue  # sharing any one word is no answer worth putting first
        # A tier may rank records of the tiers before again; taking as many more as those
        # keeps the page full.
        for scored in index.rank(session, scope, wanted, filters, limit):
            if scored.record_id not in seen:
                seen.add(scored.record_id)
                ranked.append(Ranked(scored.record_id, scored.score, matched_by, scored.key))
    return ranked[:limit]


class _Terms:
    """The query's phrases as the index compares words: folded, the last word maybe a prefix.

    Pages mark matches in Python, alike for both engines: the FTS5 tables are contentless,
    and FTS5's highlight() or PostgreSQL's ts_headline would evaluate the whole query again
    for each record of the page. ASCII text (nearly all of it) is searched with str.find,
    the rest word by word, folded like the tokenizer.
    """

    def __init__(self, phrases: list[list[str]], prefix: bool) -> None:
        self.phrases = [[_fold(word) for word in words] for words in phrases]
        self.prefix = prefix and len(self.phrases[-1][-1]) >= MIN_PREFIX_CHARS
        self._rest = []  # each phrase after its first word's start, as an anchored regex
        for number, words in enumerate(self.phrases):
            parts = [re.escape(word) for word in words]
            if self._is_prefixed(number):
                parts[-1] += r"[^\W_]*"
            self._rest.append(re.compile(r"[\W_]+".join(parts) + r"(?![^\W_])"))

    def _is_prefixed(self, number: int) -> bool:
        return self.prefix and number == len(self.phrases) - 1

    def find(
        self, value: str, start: int = 0, end: int | None = None
    ) -> list[tuple[int, int, int]]:
        """(start, end, phrase number) of each place in value[start:end] a phrase matches."""
        end = len(value) if end is None else end
        if not value.isascii():
            return [found for found in self._find_folded(value) if start <= found[0] < end]
        lowered = value.lower()
        found = sorted(
            (at, stop, number)
            for number in range(len(self.phrases))
            for at, stop in self._ascii_matches(lowered, number, start, end)
        )
        kept: list[tuple[int, int, int]] = []
        for match in found:
            if not kept or match[0] >= kept[-1][1]:
                kept.append(match)
        return kept

    def first(self, value: str) -> int:
        """Where the first match in `value` starts (there must be one)."""
        return self.find(value)[0][0]

    def distinct(self, value: str) -> int:
        """How many of the phrases `value` holds."""
        if not value.isascii():
            return len({number for _, _, number in self._find_folded(value)})
        lowered = value.lower()
        return sum(
            next(self._ascii_matches(lowered, number, 0, len(lowered)), None) is not None
            for number in range(len(self.phrases))
        )

    def _ascii_matches(
        self, lowered: str, number: int, start: int, end: int
    ) -> Iterator[tuple[int, int]]:
        first_word = self.phrases[number][0]
        at = lowered.find(first_word, start, end)
        while at != -1:
            if at == 0 or not lowered[at - 1].isalnum():
                match = self._rest[number].match(lowered, at, end)
                if match:
                    yield at, match.end()
            at = lowered.find(first_word, at + 1, end)

    def _find_folded(self, value: str) -> list[tuple[int, int, int]]:
        """find() for text beyond ASCII, word by word, folded like the tokenizer folds."""
        tokens = [(m.start(), m.end(), _fold(m.group())) for m in _WORD.finditer(value)]
        words = [word for _, _, word in tokens]
        found = []
        for at in range(len(words)):
            for number, phrase in enumerate(self.phrases):
                window = words[at : at + len(phrase)]
                if window == phrase or (
                    self._is_prefixed(number)
                    and len(window) == len(phrase)
                    and window[:-1] == phrase[:-1]
                    and window[-1].startswith(phrase[-1])
                ):
                    found.append((tokens[at][0], tokens[at + len(phrase) - 1][1], number))
                    break
        return found


def _fold(word: str) -> str:
    """A word as the unicode61 tokenizer (remove_diacritics 2) indexes it."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


_PASSAGE_FIELDS = (
    "documentation",
    "triggerScenarios",
    "commonSituations",
    "solutions",
    "preventionTips",
)


def _field_text(record: dict[str, Any], field_name: str) -> str:
    value = record.get(field_name)
    return "\n".join(value) if isinstance(value, list) else value or ""


def _passage(record: dict[str, Any], terms: _Terms) -> Marked | None:
    """The prose field holding the most query words, cut to SNIPPET_TOKENS words around them."""
    best, best_count = "", 0
    for field_name in _PASSAGE_FIELDS:
        value = _field_text(record, field_name)
        count = terms.distinct(value) if value else 0
        if count > best_count:
            best, best_count = value, count
            if count == len(terms.phrases):
                break  # no later field can hold more
    if not best_count:
        return None
    first_match = terms.first(best)
    spans = [m.span() for m in _WORD.finditer(best)]
    first = next(i for i, span in enumerate(spans) if span[0] == first_match)
    start_token = max(0, first - SNIPPET_CONTEXT_TOKENS)
    end_token = min(len(spans), start_token + SNIPPET_TOKENS) - 1
    start = 0 if start_token == 0 else spans[start_token][0]
    end = len(best) if end_token == len(spans) - 1 else spans[end_token][1]
    lead = "" if start == 0 else "…"
    shift = len(lead) - start
    marks = tuple((s + shift, e + shift) for s, e, _ in terms.find(best, start, end) if e <= end)
    return Marked(lead + best[start:end] + ("" if end == len(best) else "…"), marks)


def _hits(session: Session, page: list[Ranked], terms: _Terms) -> list[SearchHit]:
    """The page's records, their message and best passage marked where the words match."""
    stored = records.get_records(session, [row.record_id for row in page])
    hits = []
    for row in page:
        record = stored[row.record_id].record()
        message = record["errorMessage"]
        title = Marked(message, tuple((start, end) for start, end, _ in terms.find(message)))
        passage = _passage(record, terms)
        hits.append(SearchHit(stored[row.record_id], row.score, row.matched_by, title, passage))
    return hits


def _recent(
    session: Session, query: str, filters: SearchFilters, offset: int, limit: int
) -> SearchResults:
    """With no words to look for: the filtered records, most recently changed first."""
    statement = select(Record.id)
    if filters.repo is not None:
        statement = statement.where(Record.repo == filters.repo)
    if filters.error_class is not None:
        statement = statement.where(Record.error_class == filters.error_class)
    if filters.tag is not None:
        tagged = select(RecordTag.record_id).where(RecordTag.tag == filters.tag)
        statement = statement.where(Record.id.in_(tagged))
    total = session.execute(select(func.count()).select_from(statement.subquery())).scalar_one()
    ordered = statement.order_by(Record.modified_at.desc(), Record.id)
    ids = list(session.execute(ordered.offset(offset).limit(limit)).scalars())
    stored = records.get_records(session, ids)
    hits = [
        SearchHit(stored[i], 0.0, RECENT, Marked(stored[i].record()["errorMessage"]), None)
        for i in ids
    ]
    capped = min(total, MAX_RESULTS_WINDOW)
    return _page(query, filters, hits, total, True, offset, limit, capped)


def related_records(
    session: Session, stored: StoredRecord, limit: int = RELATED_LIMIT
) -> list[RelatedRecord]:
    """Records sharing this one's background tag, file or tags, the closest first.

    A shared background (the same root cause) counts most, then the same file, then each
    shared tag.
    """
    record = stored.record()
    index = store.backend(session)
    reasons: dict[str, list[str]] = {}
    weight: dict[str, int] = {}

    def add(record_id: str, points: int, reason: str) -> None:
        reasons.setdefault(record_id, []).append(reason)
        weight[record_id] = weight.get(record_id, 0) + points

    same = (
        ("background_tag", record["backgroundTag"], 3, "same background: {}"),
        ("file_path", record["filePath"], 2, "same file: {}"),
    )
    for column, value, points, reason in same:
        if value is not None:
            for record_id in index.sharing(session, column, value, stored.id, limit):
                add(record_id, points, reason.format(value))
    if record["tags"]:
        for record_id, shared, tags in index.sharing_tags(
            session, record["tags"], stored.id, limit
        ):
            add(record_id, shared, f"shared tags: {tags}")
    best = sorted(weight, key=lambda record_id: (-weight[record_id], record_id))[:limit]
    found = records.get_records(session, best)
    return [RelatedRecord(found[i], reasons[i]) for i in best if i in found]
