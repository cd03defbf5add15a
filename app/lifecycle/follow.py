"""Following other processes' writes: a replica's match index catches up in the background.

Each process polls the dataset version every ERRKB_INDEX_POLL_S seconds (one read of a
one-row table) and, when it moved, syncs its match index off the request path
(`Matcher.refresh`); requests meanwhile answer with the index as it is, and /healthz and
/readyz say how far behind it is. A poll rather than LISTEN/NOTIFY: it works alike for
SQLite's workers and PostgreSQL's replicas, holds no connection open, and a write made
through one replica is matched by the others within about one interval.
"""

import logging
import threading

from sqlalchemy import Engine

from app.matching.matcher import Matcher

log = logging.getLogger(__name__)


def follow(matcher: Matcher, engine: Engine, interval_s: float, stop: threading.Event) -> None:
    """Sync the index whenever the store's dataset version moves, until `stop` is set."""
    while not stop.wait(interval_s):
        try:
            matcher.refresh(engine)
        except Exception:  # a thread's error: logged, and the next poll tries again
            log.exception("could not bring the match index up to the store")
