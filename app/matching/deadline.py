"""The time limit of one match request, checked inside every loop of the pipeline.

A thread cannot be killed and an RE2 call cannot be interrupted, so a request that runs too
long must stop itself: logtext, the traceback parser, the index's scan and confirm loops,
the near matches of each exception and every pattern call of ranking call `check()`, which
raises `DeadlineExceeded` once the limit has passed. What one step costs between two checks
is bounded elsewhere (the pattern limits of app.matching.index), so the work stops soon
after the limit, not only the reply.

The limit belongs to the current context, like a cancel scope: `within()` sets it around a
request, and the stages need no extra parameter. With no limit set, `check()` does nothing.

A caller may also give the work a budget (`budget()`), shorter than the limit, past which
`check()` raises `OverBudget`: not the client's failure but the caller's cue to go on
elsewhere (app.serving.matches matches a small paste on the event loop only while it is
quick).
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

CHECK_EVERY = 1024
"""Lines (or scan hits) between two checks in the per-line loops: about a millisecond."""


@dataclass(frozen=True, slots=True)
class _Limit:
    expires_at: float  # time.monotonic()
    seconds: float


class DeadlineExceeded(Exception):
    """The match ran past its time limit of `seconds`."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"matching stopped after its limit of {seconds:g} s")
        self.seconds = seconds


class OverBudget(Exception):
    """The work ran past the budget its caller gave it; it returns nothing, and the caller
    does it again elsewhere (what it put in the store's memo stays: it is the same there)."""


@dataclass(frozen=True, slots=True)
class _Budget:
    """Ends at `cpu_ends` (time.thread_time()); not before `not_before` (time.monotonic()):
    a thread uses no more CPU time than the clock shows pass, so until then the clock,
    cheaper to read, answers for it."""

    not_before: float
    cpu_ends: float


_current: ContextVar[_Limit | None] = ContextVar("errkb_match_deadline", default=None)
_budget: ContextVar[_Budget | None] = ContextVar("errkb_match_budget", default=None)


@contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Run the block under a limit of `seconds` (None: no limit). An outer limit that ends
    sooner still holds: a batch's texts share the batch's limit."""
    outer = _current.get()
    if seconds is None:
        yield
        return
    expires_at = time.monotonic() + seconds
    if outer is not None and outer.expires_at <= expires_at:
        yield
        return
    token = _current.set(_Limit(expires_at, seconds))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Run the block with a budget of `seconds` of this thread's CPU time: past it, `check()`
    raises OverBudget. CPU time, not the clock's: on a machine busy with other processes a
    quick match is not sent elsewhere for the time it waited for a core (and done twice)."""
    token = _budget.set(_Budget(time.monotonic() + seconds, time.thread_time() + seconds))
    try:
        yield
    finally:
        _budget.reset(token)


def remaining() -> float | None:
    """Seconds left before the current limit (0 once it has passed); None without one."""
    limit = _current.get()
    return None if limit is None else max(0.0, limit.expires_at - time.monotonic())


def check() -> None:
    """Raise DeadlineExceeded when the current limit has passed, OverBudget when the
    current budget has."""
    limit = _current.get()
    if limit is not None and time.monotonic() > limit.expires_at:
        raise DeadlineExceeded(limit.seconds)
    spent = _budget.get()
    if (
        spent is not None
        and time.monotonic() > spent.not_before
        and time.thread_time() > spent.cpu_ends
    ):
        raise OverBudget
