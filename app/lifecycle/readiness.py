"""Readiness: the start-up steps still to do, and the one that failed; and the
progress of the work that goes on in the background once the server is ready.

/healthz says the process lives; /readyz says it should get traffic: not while the default
releases are harvested or the match index loads, and not after one of those failed (a
restart tries again). /readyz names the step that failed, never its exception: that may
hold paths, addresses or credentials of the deployment, and goes to the log only. Older
releases are harvested after that, while the server answers: /readyz shows how far that
got, without turning unready.
"""

import threading
from dataclasses import dataclass, field

FAILED = "failed (the server log has the error)"


@dataclass
class Background:
    """Steps done after the server is ready: how many, which are done, which one runs, and
    which failed (a failed one does not stop the others)."""

    steps: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    running: str | None = None
    failed: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {
            "total": len(self.steps),
            "done": len(self.done),
            "running": self.running,
            "pending": [s for s in self.steps if s not in self.done and s not in self.failed],
            "failed": dict(self.failed),
        }


class Readiness:
    """Pending start-up steps, in order; ready when none is left and none failed."""

    def __init__(self, steps: list[str]) -> None:
        self._pending = list(steps)
        self._failed: str | None = None
        self._background = Background()
        self._lock = threading.Lock()

    def plan(self, steps: list[str]) -> None:
        """Put these steps before the pending ones."""
        with self._lock:
            self._pending[:0] = [step for step in steps if step not in self._pending]

    def done(self, step: str) -> None:
        with self._lock:
            self._pending.remove(step)

    def fail(self, step: str) -> None:
        with self._lock:
            self._failed = f"{step}: {FAILED}"

    def state(self) -> tuple[bool, list[str], str | None]:
        """(ready, pending steps, failure)."""
        with self._lock:
            return not self._pending and self._failed is None, list(self._pending), self._failed

    def plan_background(self, steps: list[str]) -> None:
        """The steps to run in the background once ready."""
        with self._lock:
            self._background = Background(steps=list(steps))

    def background_step(self, step: str, *, running: bool = False, failed: bool = False) -> None:
        """Record a background step as running, done, or failed."""
        with self._lock:
            background = self._background
            if running:
                background.running = step
                return
            background.running = None
            if failed:
                background.failed[step] = FAILED
            else:
                background.done.append(step)

    def background(self) -> dict[str, object] | None:
        """The background progress for /readyz; None when there is none planned."""
        with self._lock:
            return self._background.as_json() if self._background.steps else None
