"""The paste budget: how many bytes of paste each client may send to matching per minute.

Matching is the one costly thing an anonymous client can ask for: one client looping
mebibyte pastes took the matching time of everyone else. Each client (by its address) has a
bucket of ERRKB_PASTE_BUDGET_BYTES that refills over a minute; a paste takes its size out,
and one that does not fit is answered 429 with the seconds until it would (Retry-After),
before anything is parsed or matched. Other clients' buckets are untouched.
"""

import math
import threading
import time
from collections.abc import Callable

from fastapi import Request

from app.errors import AppError

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


def charge_paste(request: Request, size: int) -> None:
    """Take a paste of `size` bytes from its client's budget, or refuse it: 429 with
    Retry-After."""
    budget: PasteBudget = request.app.state.paste_budget
    wait = budget.take(client_of(request), size)
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
