"""Full-text search over the records: the queries behind GET /api/search and the web pages.

The index is the store's (app.store): SQLite FTS5 tables or PostgreSQL tsvectors, built and
kept in step with every write by triggers, over every searched field and, apart, over the
short ones (message, class, tags, file, repo; app.store.fulltext declares them and their
weights). A search ranks in tiers, the same on both engines:

1. records the matcher says explain the query, when the query is an error line such as
   "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096" (its number
   is not in any record's text; the record's message pattern captures it);
2. reviewed records holding every word somewhere, ranked over all fields: a curated record
   whose prose answers the query beats drafts that merely share a word in their message
  . There are few of them, and their index keys form one range, so this is cheap;
3. records whose short fields hold every word, ranked over those fields;
4. records holding every word somewhere, ranked over all fields, message and class first.

Tier 3 answers most queries alone, and ranking it never decodes the long prose postings of
common words, which is what makes ranking slow on a large store; tier 4 is ranked only when a
page reaches past tier 3. Within a tier, reviewed records come before drafts on equal
scores. When no record holds every word, the search is relaxed to any word.

The parts: app.search.query makes user text safe words and phrases, app.search.fts ranks
the tiers over the store's index, app.search.highlight marks the matched words and cuts the
snippet, app.search.related finds the records next to a record.
"""

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlmodel import Session, col

from app import cursor as cursor_codec
from app import store
from app.app_error import AppError
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import service as records
from app.records.filters import NO_FILTERS, RecordFilters, filtered, record_condition
from app.records.service import StoredRecord
from app.search.fts import MATCHER, RECENT, Ranked, rank
from app.search.highlight import Marked, Terms, passage
from app.search.query import MAX_QUERY_LENGTH, looks_like_error_line, query_phrases, text_query
from app.store.tables import Record
from app.wire.base import Extended
from app.wire.search import SearchPage

DEFAULT_SEARCH_LIMIT = 20
MAX_SEARCH_LIMIT = 100
MAX_RESULTS_WINDOW = 1000  # deepest position paging reaches; also where counting stops
MATCH_BOOST_LIMIT = 5


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
    filters: RecordFilters
    hits: list[SearchHit]
    total: int
    total_exact: bool
    offset: int
    limit: int
    next_cursor: str | None
    previous_cursor: str | None
    relaxed: bool = False  # no record held every word; these hold some


def encode_cursor(offset: int) -> str:
    """An opaque cursor that resumes a ranking at this position."""
    return cursor_codec.encode_cursor(f"o{offset}")


def _is_position(value: str) -> bool:
    digits = value[1:]
    return value.startswith("o") and digits.isdigit() and int(digits) < MAX_RESULTS_WINDOW


def decode_cursor(cursor: str) -> int:
    """The position a cursor resumes at; a cursor we did not make is a 400."""
    return int(cursor_codec.decode_cursor(cursor, _is_position)[1:])


def search(
    session: Session,
    query: str,
    filters: RecordFilters = NO_FILTERS,
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
    condition = record_condition(filters)
    boosted = _boosted(session, query, filters, matcher) if error_line else []
    wanted = text_query(phrases, prefix=prefix)
    counted = index.count(session, wanted, condition, MAX_RESULTS_WINDOW)
    relaxed = counted == 0 and len(phrases) > 1
    if relaxed:
        wanted = text_query(phrases, any_word=True, prefix=prefix)
        counted = index.count(session, wanted, condition, MAX_RESULTS_WINDOW)
    ranked = rank(session, wanted, condition, boosted, offset + limit + 1, relaxed)
    extra = len(boosted) - len(index.holding(session, wanted, [row.key for row in boosted]))
    exact = counted < MAX_RESULTS_WINDOW
    hits = _hits(session, ranked[offset : offset + limit], Terms(phrases, prefix))
    return _page(query, filters, hits, counted + extra, exact, offset, limit, len(ranked), relaxed)


def search_page(results: SearchResults, version: str) -> SearchPage:
    """GET /api/search's page of these results, read at the store's dataset `version`: what
    the API answers and `errkb search --json` prints."""
    return SearchPage.model_validate(Extended(results, dataset_version=version))


def _page(
    query: str,
    filters: RecordFilters,
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
    session: Session, query: str, filters: RecordFilters, matcher: Matcher | None
) -> list[Ranked]:
    """The records the matcher says explain an error line, best first."""
    if matcher is None:
        return []
    matches = match_text(matcher, session, query, MATCH_BOOST_LIMIT).matches
    ids = [match.id for match in matches]
    passing = filtered(select(col(Record.id)), filters).where(col(Record.id).in_(ids))
    kept = set(session.execute(passing).scalars()) if ids else set()
    wanted = [match for match in matches if match.id in kept]
    if not wanted:
        return []
    keys = store.backend(session).keys(session, [match.id for match in wanted])
    return [Ranked(match.id, match.score, MATCHER, keys[match.id]) for match in wanted]


def _hits(session: Session, page: list[Ranked], terms: Terms) -> list[SearchHit]:
    """The page's records, their message and best passage marked where the words match."""
    stored = records.get_records(session, [row.record_id for row in page])
    hits = []
    for row in page:
        record = stored[row.record_id].record
        message = record.error_message
        title = Marked(message, tuple((start, end) for start, end, _ in terms.find(message)))
        found = passage(record, terms)
        hits.append(SearchHit(stored[row.record_id], row.score, row.matched_by, title, found))
    return hits


def _recent(
    session: Session, query: str, filters: RecordFilters, offset: int, limit: int
) -> SearchResults:
    """With no words to look for: the filtered records, most recently changed first."""
    statement = filtered(select(col(Record.id)), filters)
    total = session.execute(select(func.count()).select_from(statement.subquery())).scalar_one()
    ordered = statement.order_by(col(Record.modified_at).desc(), col(Record.id))
    ids = list(session.execute(ordered.offset(offset).limit(limit)).scalars())
    stored = records.get_records(session, ids)
    hits = [
        SearchHit(stored[i], 0.0, RECENT, Marked(stored[i].record.error_message), None) for i in ids
    ]
    capped = min(total, MAX_RESULTS_WINDOW)
    return _page(query, filters, hits, total, True, offset, limit, capped)
