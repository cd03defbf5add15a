"""Ranking in tiers over the store's full-text index, the same on both engines.

1. records the matcher says explain the query (app.search.service gives them);
2. reviewed records holding every word somewhere, ranked over all fields;
3. records whose short fields hold every word, ranked over those fields;
4. records holding every word somewhere, ranked over all fields, message and class first.

The index itself is the store's (app.store: SQLite FTS5 or PostgreSQL tsvectors; the
searched fields and weights are declared once in app.store.fulltext); no SQL is written here.
"""

from dataclasses import dataclass

from sqlmodel import Session

from app import store
from app.store.base import Condition
from app.store.fulltext import Scope, TextQuery

MATCHER, REVIEWED, SUMMARY, TEXT, RECENT = "matcher", "reviewed", "summary", "text", "recent"


@dataclass(frozen=True, slots=True)
class Ranked:
    """A place in a ranking: which record, its score in its tier, how it was found."""

    record_id: str
    score: float
    matched_by: str
    key: int  # the record's key in the full-text index


_TIERS = (
    # (how found, which records over which fields)
    (REVIEWED, Scope.REVIEWED),
    (SUMMARY, Scope.HEAD),
    (TEXT, Scope.BODY_ONLY),
)


def rank(
    session: Session,
    wanted: TextQuery,
    condition: Condition | None,
    boosted: list[Ranked],
    limit: int,
    relaxed: bool = False,
) -> list[Ranked]:
    """The first `limit` of the ranking, tier after tier, of the records passing the
    condition (app.records.filters.record_condition).

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
        for scored in index.rank(session, scope, wanted, condition, limit):
            if scored.record_id not in seen:
                seen.add(scored.record_id)
                ranked.append(Ranked(scored.record_id, scored.score, matched_by, scored.key))
    return ranked[:limit]
