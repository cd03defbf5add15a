"""Readiness: the start-up steps still to do, and the one that failed (issue 13).

/healthz says the process lives; /readyz says it should get traffic: not while the default
releases are harvested or the match index loads, and not after one of those failed (the
reason is kept for the operator; a restart tries again).
"""

import threading


class Readiness:
    """Pending start-up steps, in order; ready when none is left and none failed."""

    def __init__(self, steps: list[str]) -> None:
        self._pending = list(steps)
        self._failed: str | None = None
        self._lock = threading.Lock()

    def plan(self, steps: list[str]) -> None:
        """Put these steps before the pending ones."""
        with self._lock:
            self._pending[:0] = [step for step in steps if step not in self._pending]

    def done(self, step: str) -> None:
        with self._lock:
            self._pending.remove(step)

    def fail(self, step: str, reason: str) -> None:
        with self._lock:
            self._failed = f"{step}: {reason}"

    def state(self) -> tuple[bool, list[str], str | None]:
        """(ready, pending steps, failure)."""
        with self._lock:
            return not self._pending and self._failed is None, list(self._pending), self._failed
