"""Matches and record views as the endpoints serve them: timed for /metrics, counted as hits.

The API, the batch endpoint and the web pages all go through here, so a paste is counted
the same way wherever it comes in; the CLI and the search page's error-line boost call
match_text directly and count nothing.
"""

import time

from fastapi import Request
from sqlmodel import Session

from app.curation.hits import RECORD, match_subject
from app.matching.result import MatchResult
from app.matching.service import match_text, match_texts


def match_counted(request: Request, session: Session, text: str, limit: int) -> MatchResult:
    """match_text, timed as errkb_match_seconds, its top record (or template) counted."""
    started = time.perf_counter()
    result = match_text(request.app.state.matcher, session, text, limit)
    _observed(request, [match_subject(result)], time.perf_counter() - started)
    return result


def matches_counted(
    request: Request, session: Session, texts: list[str], limit: int
) -> list[MatchResult]:
    """match_texts (one deadline, one size limit for the batch), each result counted."""
    started = time.perf_counter()
    results = match_texts(request.app.state.matcher, session, texts, limit)
    _observed(request, [match_subject(result) for result in results], time.perf_counter() - started)
    return results


def _observed(request: Request, subjects: list[tuple[str, str] | None], seconds: float) -> None:
    state = request.app.state
    state.metrics.match_seconds.observe(seconds)
    for subject in subjects:
        if subject is not None and state.hits.add(*subject):
            state.metrics.hits.labels(subject[0], "match").inc()


def count_view(request: Request, record_id: str) -> None:
    """Count a record-page view as a hit of the record."""
    state = request.app.state
    if state.hits.add(RECORD, record_id):
        state.metrics.hits.labels(RECORD, "view").inc()
