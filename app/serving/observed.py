"""Matches and record views as the endpoints serve them: timed for /metrics, counted as hits,
and run where they cost least.

The API, the batch endpoint and the web pages all go through here, so a paste is counted
the same way wherever it comes in; the CLI and the search page's error-line boost call
match_text directly and count nothing.

A small paste is matched on the event loop itself (`served`), one per pass of the loop
(app.serving.loop_turns), where the store's reads are in this process (SQLite) and the match
index is current. Handed to a thread, the same match costs more again in the hand-over: the
future and the wake-up of each side, and the GIL taken back and forth some five times a
paste (docs/benchmarks.md, "Server CPU a request, and a match in process"). It may hold
the loop for LOOP_BUDGET_S at most: a paste that needs longer (a flood of short lines, a
paste naming hundreds of records) stops there, and is matched again from the start in a
request thread, where the GIL is shared every millisecond and /healthz keeps answering.
So does a large paste, a store read over the network (PostgreSQL), or an index that must
first catch up with the store's writes: there a few compute at once, and one may bring the
index up to date.
"""

import time
from collections.abc import Callable
from typing import TypeVar

from fastapi import Request
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app import store
from app.curation.hits import RECORD, match_subject
from app.matching import deadline
from app.matching.matcher import IndexBehind
from app.matching.service import match_text, match_texts
from app.wire.matching import MatchResult

T = TypeVar("T")
SMALL_PASTE_BYTES = 16 * 1024
"""Largest request body matched on the event loop: a 5 KB traceback is cheap there
(`bench/bench_store.py --sections latency`); a larger one is more likely to run out of its
budget."""
LOOP_BUDGET_S = 0.010
"""CPU time a match may spend on the event loop before it goes on in a request thread: what
a request that only needs the loop (/healthz, a kept reply) may wait behind it. Set above the
CPU time of the costliest of the real pastes of tests/fixtures/real_pastes on the
whole-history store, so that they are matched once, not twice (docs/benchmarks.md, "Costs
behind the code's choices")."""


async def served(request: Request, body_bytes: int, match: Callable[[bool], T]) -> T:
    """`match(waits)` on the event loop in its turn (`waits` False: no slot among the
    matches computing at once, and IndexBehind rather than a sync of the index) when the
    body is small and the store is read in process; in a request thread otherwise, or when
    the index is behind the store's writes, or the match ran past LOOP_BUDGET_S."""
    state = request.app.state
    if body_bytes <= SMALL_PASTE_BYTES and store.backend(state.engine).reads_in_process:
        await state.loop_turns.take()
        try:
            with deadline.budget(LOOP_BUDGET_S):
                return match(False)
        except (IndexBehind, deadline.OverBudget):
            pass  # a request thread brings the index up to the store, or takes its time
    return await run_in_threadpool(match, True)


def match_observed(
    request: Request, session: Session, text: str, limit: int, waits: bool = True
) -> tuple[MatchResult, bool]:
    """match_text, timed as errkb_match_seconds, its top record (or template) counted; and
    whether the counted hits are due to be written, which is the caller's to do: the event
    loop must not wait for a write's turn, so the API writes them after the reply, in a
    request thread."""
    started = time.perf_counter()
    matcher = request.app.state.matcher
    result = match_text(matcher, session, text, limit, waits)
    subject = match_subject(result, matcher.vocabulary())
    due = _observed(request, [subject], time.perf_counter() - started)
    return result, due


def match_counted(request: Request, session: Session, text: str, limit: int) -> MatchResult:
    """match_observed in a request thread, the hits written there when due."""
    result, due = match_observed(request, session, text, limit)
    if due:
        request.app.state.hits.flush()
    return result


def matches_counted(
    request: Request, session: Session, texts: list[str], limit: int
) -> list[MatchResult]:
    """match_texts (one deadline, one size limit for the batch), each result counted."""
    started = time.perf_counter()
    matcher = request.app.state.matcher
    results = match_texts(matcher, session, texts, limit)
    subjects = [match_subject(result, matcher.vocabulary()) for result in results]
    if _observed(request, subjects, time.perf_counter() - started):
        request.app.state.hits.flush()
    return results


def _observed(request: Request, subjects: list[tuple[str, str] | None], seconds: float) -> bool:
    """Time the match and count its subjects; whether the hits are due to be written."""
    state = request.app.state
    state.metrics.match_seconds.observe(seconds)
    due = False
    for subject in subjects:
        if subject is None:
            continue
        counted, flush = state.hits.count(*subject)
        due |= flush
        if counted:
            state.metrics.hits.labels(subject[0], "match").inc()
    return due


def count_view(request: Request, record_id: str) -> None:
    """Count a record-page view as a hit of the record."""
    state = request.app.state
    if state.hits.add(RECORD, record_id):
        state.metrics.hits.labels(RECORD, "view").inc()
