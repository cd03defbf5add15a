"""Matches and record views as the endpoints serve them: timed for /metrics, counted as hits,
and run where they cost least.

The API, the batch endpoint and the web pages all go through here, so a paste is counted
the same way wherever it comes in; the CLI and the search page's error-line boost call
match_text directly and count nothing.

A small paste is matched on the process's one thread for small pastes (`served`), where
the store's reads are in this process (SQLite) and the match index is current: about a
millisecond of CPU, which in the request threads cost as much again in switches of the
GIL among them and the event loop (two workers at 64 connections served 904 matches a
second, p99 159 ms; on one thread of their own 1,160-1,190, p99 about 100 ms). On the
event loop itself they served more but starved some connections (p99 of seconds). A large
paste, a store read over the network (PostgreSQL), or an index that must first catch up
with the store's writes goes to the request threads, where a few compute at once and one
may bring the index up to date.
"""

import asyncio
import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from fastapi import Request
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app import store
from app.curation.hits import RECORD, match_subject
from app.matching.matcher import IndexBehind
from app.matching.result import MatchResult
from app.matching.service import match_text, match_texts

T = TypeVar("T")
SMALL_PASTE_BYTES = 16 * 1024
"""Largest request body matched on the thread for small pastes: a 5 KB traceback costs
about a millisecond there, so a queue of them moves; a larger one would hold it up."""


def small_paste_thread() -> ThreadPoolExecutor:
    """The one thread of a process that matches small pastes, one after the other."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="errkb-small-pastes")


async def served(request: Request, body_bytes: int, match: Callable[[bool], T]) -> T:
    """`match(waits)` on the thread for small pastes (`waits` False: no slot among the
    matches computing at once, and IndexBehind rather than a sync of the index) when the
    body is small and the store is read in process; in a request thread otherwise, or when
    the index is behind the store's writes there. Either way in a copy of this context
    (the request id of the logs). The event loop itself reads nothing."""
    state = request.app.state
    if body_bytes <= SMALL_PASTE_BYTES and store.backend(state.engine).reads_in_process:
        run = partial(contextvars.copy_context().run, match, False)
        try:
            return await asyncio.get_running_loop().run_in_executor(state.small_pastes, run)
        except IndexBehind:
            pass  # a request thread brings the index up to the store, then matches
    return await run_in_threadpool(match, True)


def match_observed(
    request: Request, session: Session, text: str, limit: int, waits: bool = True
) -> tuple[MatchResult, bool]:
    """match_text, timed as errkb_match_seconds, its top record (or template) counted; and
    whether the counted hits are due to be written, which is the caller's to do: the thread
    for small pastes must not wait for a write's turn, so the API writes them after the
    reply, in a request thread."""
    started = time.perf_counter()
    result = match_text(request.app.state.matcher, session, text, limit, waits)
    due = _observed(request, [match_subject(result)], time.perf_counter() - started)
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
    results = match_texts(request.app.state.matcher, session, texts, limit)
    subjects = [match_subject(result) for result in results]
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
