"""What depends only on the store, computed once per dataset version and kept in the process.

A record's locations, its release history ("changed in"), its related records and its JSON
document change only when the store does, and computed on every match and every GET they would
be most of a request's time on the default store with its older releases
(`bench/profile_match.py`). Every write (harvest, import, API write, review) moves the dataset
version (app.records.service.bump_dataset_version), so a value kept under the version it was
computed at is right for as long as the version stays: the first request after a write computes
it again, the others read it.

The dataset version is read here, where the memo needs it, and app.records.service
re-exports it for everyone else.
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from app.store.engine import read_now
from app.store.tables import DatasetState

VERSION_KEY = "dataset_version"
REPRODUCERS_KEY = "reproducers_version"
"""Moves with every reproducer run, drift check and generated script stored: what a record's
JSON shows of them, which is written without moving the dataset version (a verify run of
thousands of records must not drop every memo and resync the match index)."""
EMPTY_DATASET_VERSION = "1970-01-01T00:00:00.000Z"
MEMO_ENTRIES = 20_000  # about a record page's worth each; bounds the memory on any store
VERSION_QUERY = select(col(DatasetState.value)).where(col(DatasetState.key) == VERSION_KEY)
_BOTH_QUERY = select(col(DatasetState.key), col(DatasetState.value)).where(
    col(DatasetState.key).in_([VERSION_KEY, REPRODUCERS_KEY])
)

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def dataset_version(session: Session) -> str:
    """The dataset's version: an ISO timestamp that moves forward with every write.

    Asked on every match and page, so it runs on a connection directly: the ORM's
    per-statement work is most of its cost. A session that has read or written nothing yet
    has no snapshot for the version to agree with, so the statement runs outside it
    (app.store.engine.read_now): a match whose records are all kept in memory then begins
    and rolls back no transaction at all, which on SQLite costs less than the session's
    read with its BEGIN and ROLLBACK (docs/benchmarks.md, "Costs behind the code's
    choices").
    """
    bind = session.get_bind()
    if isinstance(bind, Engine) and not session.in_transaction():
        return dataset_version_now(bind)
    session.flush()  # the connection does not see what the session holds unflushed
    value = session.connection().execute(VERSION_QUERY).scalar_one_or_none()
    return value or EMPTY_DATASET_VERSION


def record_versions(session: Session) -> tuple[str, str]:
    """The dataset version and the reproducers version, in one statement: everything a
    record's JSON shows changes only when one of them moves."""
    session.flush()
    return _versions(session.connection().execute(_BOTH_QUERY).all())


ARRIVED_NS: ContextVar[int | None] = ContextVar("errkb_arrived_ns", default=None)
"""When the request being served arrived (time.monotonic_ns()), set for each request by
app.ops.middleware; None outside a request (the CLI, the start-up and follow threads)."""

_LAST_READ: "WeakKeyDictionary[Engine, tuple[int, tuple[str, str]]]" = WeakKeyDictionary()
"""Per store, the versions last read outside a session, and when that read began."""


def record_versions_now(engine: Engine) -> tuple[str, str]:
    """record_versions outside any session: the one statement a kept reply costs
    (app.store.engine.read_now).

    In a request, a read of this process that began after the request arrived is as good as
    a new one: it saw every write committed before the request was sent, so a client that
    wrote and then asks still gets what it wrote, from whichever worker. Under load most
    requests wait behind others in the queue and find such a read made meanwhile, so the
    statement runs about once per queue's worth of requests rather than once each: the
    statement, and each time it lets go of the GIL and waits to take it back, are a large
    part of a small paste's CPU at 64 connections (`bench/bench_store.py --sections turns`;
    docs/benchmarks.md, "Server CPU a request, and a match in process"). Outside a request
    every call reads."""
    arrived = ARRIVED_NS.get()
    last = _LAST_READ.get(engine)
    if arrived is not None and last is not None and last[0] > arrived:
        return last[1]
    began = time.monotonic_ns()
    versions = _versions(read_now(engine, _BOTH_QUERY))
    last = _LAST_READ.get(engine)
    if last is None or began > last[0]:
        _LAST_READ[engine] = (began, versions)
    return versions


def dataset_version_now(engine: Engine) -> str:
    """dataset_version outside any session, as record_versions_now."""
    return record_versions_now(engine)[0]


def _versions(rows: Iterable[tuple[Any, ...]]) -> tuple[str, str]:
    values = dict(rows)
    return (
        values.get(VERSION_KEY) or EMPTY_DATASET_VERSION,
        values.get(REPRODUCERS_KEY) or EMPTY_DATASET_VERSION,
    )


class Memo:
    """Values computed from one state of a store, by key; those of an older dataset version
    are dropped the first time a newer one is seen. Least recently used values go first
    beyond `entries`. Shared by the threads of a process: a value is computed outside the
    lock (two threads may both compute it; either result is right). A version is anything
    ordered that moves forward with the store: the dataset version, or a tuple of it and
    another (app.serving.replies)."""

    def __init__(self, entries: int = MEMO_ENTRIES) -> None:
        self.entries = entries
        self._lock = threading.Lock()
        self._versions: dict[str, Any] = {}  # store -> the newest version seen
        self._values: OrderedDict[tuple[str, Any, Hashable], Any] = OrderedDict()

    def get(self, session: Session, version: Any, key: Hashable, compute: Callable[[], T]) -> T:
        """The value of `key` at `version` of the session's store, computed if not kept."""
        return self.get_many(session, version, [key], lambda _: {key: compute()})[key]

    def get_many(
        self,
        session: Session,
        version: Any,
        keys: Iterable[K],
        compute: Callable[[list[K]], Mapping[K, T]],
    ) -> dict[K, T]:
        """The values of `keys` at `version`; those not kept are computed by one call of
        `compute` with the missing keys (one query for all of a match's candidates, not one
        each), which answers a value for every key it is given."""
        store = _store(session)
        found: dict[K, T] = {}
        missing: list[K] = []
        with self._lock:
            for key in keys:
                slot = (store, version, key)
                if slot in self._values:
                    self._values.move_to_end(slot)
                    found[key] = self._values[slot]
                else:
                    missing.append(key)
        if not missing:
            return found
        computed = compute(missing)
        found.update(computed)
        self._keep(store, version, computed)
        return found

    def peek(self, session: Session | Engine, version: Any, key: Hashable) -> Any | None:
        """The value kept for `key` at `version`, or None (nothing is computed)."""
        slot = (_store(session), version, key)
        with self._lock:
            if slot not in self._values:
                return None
            self._values.move_to_end(slot)
            return self._values[slot]

    def put(self, session: Session | Engine, version: Any, key: Hashable, value: Any) -> None:
        """Keep `value` for `key` at `version` (unless a newer version was seen already)."""
        self._keep(_store(session), version, {key: value})

    def _keep(self, store: str, version: Any, values: Mapping[Any, Any]) -> None:
        with self._lock:
            newest = self._versions.get(store)
            if newest is not None and version < newest:
                return  # a reader of an older snapshot: its values are not kept
            if newest != version:
                self._versions[store] = version
                for stale in [s for s in self._values if s[0] == store]:
                    del self._values[stale]
            for key, value in values.items():
                self._values[store, version, key] = value
            while len(self._values) > self.entries:
                self._values.popitem(last=False)

    def clear(self) -> None:
        """Forget every value (a store replaced under the same URL, as tests do)."""
        with self._lock:
            self._versions.clear()
            self._values.clear()


def _store(where: Session | Engine) -> str:
    """The store a session or an engine reads (without opening a connection)."""
    bind = where.get_bind() if isinstance(where, Session) else where
    engine = bind.engine
    text = _URL_TEXT.get(engine)
    if text is None:
        text = _URL_TEXT[engine] = str(engine.url)
    return text


_URL_TEXT: "WeakKeyDictionary[Engine, str]" = WeakKeyDictionary()
"""Each engine's URL as text, rendered once: rendering quotes every part anew (and so does
hashing a URL), which each memo read of a match paid for."""


memo = Memo()
"""The process's memo: every app and command of the process shares it, told apart by store."""
