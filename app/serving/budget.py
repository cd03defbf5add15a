"""The paste budgets: bytes of paste each client may send to matching per minute, and bytes
of large pastes the whole server matches at once.

Matching is the one costly thing an anonymous client can ask for: one client looping mebibyte
pastes would take the matching time of everyone else (`bench/bench_hostile.py --sections
fairness`). Each client (by its address) has a bucket of ERRKB_PASTE_BUDGET_BYTES that refills
over a minute; a paste takes its size out, and one that does not fit is answered 429 with the
seconds until it would (Retry-After), before anything is parsed or matched. Other clients'
buckets are untouched.

A crowd of clients, or one client with many addresses, never runs out of its own buckets: a few
sending 1 MB pastes from a new address each would take every request thread and match slot, and
a 5 KB traceback would wait behind them (`bench/bench_hostile.py --sections crowd`). So large
pastes (over LARGE_PASTE_BYTES) also share one server-wide budget of
ERRKB_LARGE_PASTES_IN_FLIGHT_BYTES being matched at once: a large paste waits for room on the
event loop, holding no thread, in the order they came, and one that finds none within
ERRKB_MATCH_DEADLINE_S is answered 503 with Retry-After. Small pastes (the tracebacks people
paste) never wait for it.
"""

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import Request

from app.app_error import AppError

REFILL_S = 60.0
MAX_CLIENTS = 10_000
"""Buckets kept before the full ones are forgotten (a full bucket is what a new one is)."""


class PasteBudget:
    """Token buckets by client: each holds up to `bytes_per_minute` bytes and refills at
    that rate; 0 turns the budget off."""

    def __init__(self, bytes_per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = bytes_per_minute
        self._rate = bytes_per_minute / REFILL_S
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (bytes left, when)
        self._lock = threading.Lock()

    def take(self, client: str, size: int) -> float | None:
        """Take `size` bytes from the client's bucket: None when they were there, else the
        seconds until they will be (nothing is taken then). A paste larger than the whole
        budget waits for a full bucket and empties it."""
        if self.capacity == 0:
            return None
        size = min(size, self.capacity)
        now = self._clock()
        with self._lock:
            left = self._left(client, now)
            if left < size:
                return (size - left) / self._rate
            self._buckets[client] = (left - size, now)
            if len(self._buckets) > MAX_CLIENTS:
                self._forget_full(now)
        return None

    def _left(self, client: str, now: float) -> float:
        left, then = self._buckets.get(client, (self.capacity, now))
        return min(self.capacity, left + (now - then) * self._rate)

    def _forget_full(self, now: float) -> None:
        full = [c for c in self._buckets if self._left(c, now) >= self.capacity]
        for client in full:
            del self._buckets[client]


def client_of(request: Request) -> str:
    """The client's address as the server sees it (behind a proxy, uvicorn's
    --forwarded-allow-ips makes it the address the proxy forwards)."""
    return request.client.host if request.client else "unknown"


def charge_paste(budget: PasteBudget, client: str, size: int) -> None:
    """Take a paste of `size` bytes from its client's budget, or refuse it: 429 with
    Retry-After."""
    wait = budget.take(client, size)
    if wait is None:
        return
    seconds = max(1, math.ceil(wait))
    raise AppError(
        429,
        "Paste budget spent",
        f"this client sent more than {budget.capacity} bytes of paste within a minute "
        f"(ERRKB_PASTE_BUDGET_BYTES); this one fits again in {seconds} s",
        retry_after_s=seconds,
    )


LARGE_PASTE_BYTES = 16 * 1024
"""Pastes over this share the server-wide budget: a real traceback is a few KB; what is
larger (a whole log) costs its matching time in proportion."""
BUSY_RETRY_S = 1


class PastesInFlight:
    """Bytes of large pastes being matched at once, server-wide, at most `capacity` (0: no
    limit). Used from the event loop only: a paste waits for room as a future, in the order
    they came, holding no thread."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    async def take(self, size: int, timeout_s: float) -> int | None:
        """Room for a paste of `size` bytes (a paste larger than the whole budget waits for
        all of it): the bytes taken, to give back, or None when none came within
        `timeout_s` (nothing is taken then)."""
        if self.capacity == 0:
            return 0
        size = min(size, self.capacity)
        if not self._waiting and self.used + size <= self.capacity:
            self.used += size
            return size
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, turn)
        self._waiting.append(entry)
        try:
            await asyncio.wait({turn}, timeout=timeout_s)
        except BaseException:  # the request went away while it waited
            if turn.done():
                self.give_back(size)
            else:
                self._forget(entry)
            raise
        if turn.done():
            return size
        self._forget(entry)
        return None

    def _forget(self, entry: tuple[int, asyncio.Future[None]]) -> None:
        self._waiting.remove(entry)
        entry[1].cancel()

    def give_back(self, size: int) -> None:
        """A paste's bytes are matched: the waiting pastes that now fit go, first come
        first."""
        self.used -= size
        while self._waiting and self.used + self._waiting[0][0] <= self.capacity:
            size, turn = self._waiting.popleft()
            self.used += size
            turn.set_result(None)


@asynccontextmanager
async def large_paste_turn(
    in_flight: PastesInFlight, size: int, wait_s: float
) -> AsyncIterator[None]:
    """Match a paste of `size` bytes within the server-wide budget of large pastes: at once
    when it is small, else once there is room (503 with Retry-After when none came within
    `wait_s`, the match deadline). Entered and left on the event loop."""
    if size <= LARGE_PASTE_BYTES:
        yield
        return
    taken = await in_flight.take(size, wait_s)
    if taken is None:
        raise AppError(
            503,
            "Too many large pastes",
            f"{in_flight.capacity} bytes of large pastes are being matched "
            f"(ERRKB_LARGE_PASTES_IN_FLIGHT_BYTES) and this one found no room within "
            f"{wait_s:g} s; try again",
            retry_after_s=BUSY_RETRY_S,
        )
    try:
        yield
    finally:
        in_flight.give_back(taken)
