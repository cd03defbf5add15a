"""Matches as the endpoints serve them: run where they cost least, timed for /metrics and
counted as hits.

The API, the batch endpoint and the web pages all go through here, so a paste is counted
the same way wherever it comes in; the CLI and the search page's error-line boost call
match_text directly and count nothing.

A small paste is matched on the event loop itself (`reply_to_paste`), one per pass of the
loop (app.serving.loop_turns), where the store's reads are in this process (SQLite) and the
match index is current. Handed to a thread, the same match costs more again in the
hand-over: the future and the wake-up of each side, and the GIL taken back and forth some
five times a paste (docs/benchmarks.md, "Server CPU a request, and a match in process"). It
may hold the loop for LOOP_BUDGET_S at most: a paste that needs longer (a flood of short
lines, a paste naming hundreds of records) stops there, and is matched again from the start
in a request thread, where the GIL is shared every millisecond and /healthz keeps answering.
So does a large paste, a store read over the network (PostgreSQL), or an index that must
first catch up with the store's writes: there a few compute at once, and one may bring the
index up to date.
"""

import time
from collections.abc import Callable

from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app import store
from app.curation.hits import match_subject
from app.matching import deadline
from app.matching.matcher import IndexBehind, Matcher
from app.matching.service import match_text, match_text_now, match_texts
from app.serving.deps import body_field, parse_body
from app.serving.services import Services
from app.wire.matching import MatchResult

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


async def reply_to_paste(
    services: Services, body: bytes, is_json: bool, limit: int
) -> tuple[str, bool]:
    """The JSON reply to the paste a request body holds (`_paste_text`), and whether the hits
    its match counted are due to be written, which is the caller's to do: the event loop
    must not wait for a write's turn, so the API writes them after the reply, in a request
    thread.

    Matched on the event loop in its turn (match_text_now: no slot among the matches
    computing at once, and IndexBehind rather than a sync of the index) when the body is
    small and the store is read in process; in a request thread (match_text) otherwise, or
    when the index is behind the store's writes, or the match ran past LOOP_BUDGET_S."""
    if len(body) <= SMALL_PASTE_BYTES and store.backend(services.engine).reads_in_process:
        await services.loop_turns.take()
        try:
            with deadline.budget(LOOP_BUDGET_S):
                return _reply(services, body, is_json, limit, match_text_now)
        except (IndexBehind, deadline.OverBudget):
            pass  # a request thread brings the index up to the store, or takes its time
    return await run_in_threadpool(_reply, services, body, is_json, limit, match_text)


def _paste_text(body: bytes, is_json: bool) -> str:
    """The paste of a request body: a JSON body's "text", else the body itself as text
    (bytes that are not UTF-8 replaced)."""
    if is_json:
        text: str = body_field(parse_body(body), "text", str)
        return text
    return body.decode("utf-8", "replace")


Matching = Callable[[Matcher, Session, str, int], MatchResult]
"""match_text, or match_text_now where the match may not wait (app.matching.service)."""


def _reply(
    services: Services, body: bytes, is_json: bool, limit: int, match: Matching
) -> tuple[str, bool]:
    text = _paste_text(body, is_json)
    with Session(services.engine) as session:
        result, due = _counted(services, session, text, limit, match)
    return result.model_dump_json(by_alias=True), due


def _counted(
    services: Services, session: Session, text: str, limit: int, match: Matching
) -> tuple[MatchResult, bool]:
    """`match`, timed as errkb_match_seconds, its top record (or template) counted; and
    whether the counted hits are due to be written."""
    started = time.perf_counter()
    result = match(services.matcher, session, text, limit)
    subject = match_subject(result, services.matcher.vocabulary())
    due = _time_and_count(services, [subject], time.perf_counter() - started)
    return result, due


def match_counted(services: Services, session: Session, text: str, limit: int) -> MatchResult:
    """match_text in a request thread, timed and counted, the hits written there when due."""
    result, due = _counted(services, session, text, limit, match_text)
    if due:
        services.hits.flush()
    return result


def matches_counted(
    services: Services, session: Session, texts: list[str], limit: int
) -> list[MatchResult]:
    """match_texts (one deadline, one size limit for the batch), each result counted."""
    started = time.perf_counter()
    matcher = services.matcher
    results = match_texts(matcher, session, texts, limit)
    subjects = [match_subject(result, matcher.vocabulary()) for result in results]
    if _time_and_count(services, subjects, time.perf_counter() - started):
        services.hits.flush()
    return results


def _time_and_count(
    services: Services, subjects: list[tuple[str, str] | None], seconds: float
) -> bool:
    """Time the match and count its subjects; whether the hits are due to be written."""
    services.metrics.match_seconds.observe(seconds)
    due = False
    for subject in subjects:
        if subject is None:
            continue
        counted, flush = services.hits.count(*subject)
        due |= flush
        if counted:
            services.metrics.hits.labels(subject[0], "match").inc()
    return due
