"""The prefilters of the pattern index: one pass over a pasted text that flags the patterns
that may match it, each with the offset to confirm it from (app.matching.index).

* `PortableEngine`: each pattern's longest required literal, found by Hyperscan's literal
  compiler where its wheel is installed, by Aho–Corasick elsewhere (`_LiteralSet`);
* `_HyperscanEngine` (x86-64 only): every pattern compiled into Hyperscan databases, in
  shards so a write recompiles one shard.

A pattern neither can take is left to the index, which finds it with ``str.find``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import ahocorasick

from app.matching import deadline
from app.matching.pattern_entry import PatternEntry
from app.matching.scanned_text import ScannedText, one_byte

try:
    import hyperscan

    HYPERSCAN = True
except ImportError:  # no wheel outside x86-64: the portable engine takes over
    HYPERSCAN = False

Backend = Literal["auto", "hyperscan", "portable"]

SHARD_SIZE = 5000
"""Patterns per Hyperscan database: a rebuild recompiles one shard (about 3 s), and each shard
costs one more pass over the text (20 us for 5 KB)."""

_HS_FLAGS = (
    (hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY)
    if HYPERSCAN
    else 0
)
"""Line anchors like RE2's line mode; one report per pattern, the earliest, which is all the
confirmation needs; empty matches allowed so ``.*`` is not refused. No UTF-8 mode: it triples the
compile time, so the scanned text has one byte per character instead (see
``ScannedText.one_byte``)."""

# Hyperscan scans one byte per character, so it must not meet a pattern that names a non-ASCII
# character (by itself or by an escape), nor case-folding, which in RE2 maps ASCII to non-ASCII.
_NOT_FOR_HYPERSCAN = re.compile(r"[^\x00-\x7f]|\\[xuUNpPC0]|\(\?[a-zA-Z-]*i")


class Engine(Protocol):
    """A prefilter: for each pattern it covers that may match, the char offset at or before
    the line of its first match."""

    def first_offsets(self, text: ScannedText) -> dict[int, int]: ...

    def extended(
        self, entries: list[PatternEntry | None], ids: list[int]
    ) -> tuple[Engine, list[int]]:
        """A new engine covering ``ids`` too, and those of ``ids`` it cannot cover. A new
        object, so that readers keep using the old one until it is swapped in."""
        ...

    def dump(self) -> tuple[Any, list[bytes]]:
        """State as JSON and binary blobs, for the cache file."""
        ...


class _LiteralSet:
    """Which of a list of literals occur in a text, each with the char offset where its first
    occurrence ends: Hyperscan's literal compiler where the wheel is installed, Aho–Corasick
    elsewhere.

    Under load the prefilter's cost is cache misses, not instructions: the automaton walks one
    trie node per character through the 36,738 literals of the whole-history store, where
    Hyperscan's database of them is 4.8 MB; a real paste's scan after other work has taken the
    caches, as under load, is 108 us against 175 (bench/bench_prefilter.py). Literals Hyperscan
    cannot take here (a non-ASCII character, which the one-byte text does not hold, or a NUL,
    at which the binding cuts an expression) are found with ``str.find``.
    """

    def __init__(self, literals: list[str], blob: bytes = b"") -> None:
        self._automaton: Any = None
        self._database: Any = None
        self._scratch = threading.local()  # Hyperscan needs one scratch per concurrent scan
        self._by_find: list[tuple[int, str]] = []
        if not HYPERSCAN:
            if literals:
                self._automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
                for literal_id, literal in enumerate(literals):
                    self._automaton.add_word(literal, literal_id)
                self._automaton.make_automaton()
            return
        ids: list[int] = []
        for literal_id, literal in enumerate(literals):
            if literal.isascii() and "\x00" not in literal:
                ids.append(literal_id)
            else:
                self._by_find.append((literal_id, literal))
        if ids:
            self._database = _load_literals(blob) or _compile_literals(
                [literals[id_] for id_ in ids], ids
            )

    def blob(self) -> bytes:
        """The compiled database, to be given back to the constructor with the same literals;
        empty where there is none (the automaton rebuilds in well under a second)."""
        return hyperscan.dumpb(self._database) if self._database is not None else b""

    def first_ends(self, text: str, one_byte: bytes) -> dict[int, int]:
        """Literal id -> char offset of the last character of its first occurrence in ``text``
        (``one_byte`` is ``text`` with one byte a character, see ``ScannedText.one_byte``)."""
        ends: dict[int, int] = {}
        if self._automaton is not None:
            for number, (end, literal_id) in enumerate(self._automaton.iter(text)):
                if number % deadline.CHECK_EVERY == 0:
                    deadline.check()
                ends.setdefault(literal_id, end)
            return ends
        if self._database is not None:
            scratch = getattr(self._scratch, "scratch", None)
            if scratch is None:
                scratch = self._scratch.scratch = hyperscan.Scratch(self._database)

            def on_match(literal_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                ends[literal_id] = end - 1  # SINGLEMATCH: the first, by end offset

            self._database.scan(one_byte, match_event_handler=on_match, scratch=scratch)
        for literal_id, literal in self._by_find:
            if (at := text.find(literal)) >= 0:
                ends[literal_id] = at + len(literal) - 1
        return ends


def _compile_literals(literals: list[str], ids: list[int]) -> Any:
    flags = [hyperscan.HS_FLAG_SINGLEMATCH] * len(ids)
    return _compile_database(literals, ids, flags, literal=True)


def _load_literals(blob: bytes) -> Any:
    """The database saved as ``blob``, or None when there is none or it is not for this
    Hyperscan and CPU (then it is compiled afresh)."""
    try:
        return _load_database(blob)
    except hyperscan.error:
        return None


class PortableEngine:
    """A literal prefilter: the longest required literal of each pattern."""

    def __init__(self, ids_by_literal: dict[str, list[int]] | None = None, blob: bytes = b""):
        self._by_literal = ids_by_literal or {}
        self._literals = _LiteralSet(list(self._by_literal), blob) if self._by_literal else None
        self._ids_by_literal = list(self._by_literal.values())
        self._lengths = [len(literal) for literal in self._by_literal]

    @classmethod
    def restore(
        cls,
        entries: list[PatternEntry | None],  # noqa: ARG003 - the Engine protocol's signature
        state: Any,
        blobs: list[bytes],
    ) -> PortableEngine:
        """Rebuilt from the literals as they were when it was built (entries removed since
        keep theirs), with the compiled database saved beside them: compiling takes seconds
        at 100k patterns; the automaton is quicker to rebuild than to load."""
        literals, ids = state
        return cls(dict(zip(literals, ids, strict=True)), b"".join(blobs))

    def first_offsets(self, text: ScannedText) -> dict[int, int]:
        offsets: dict[int, int] = {}
        if self._literals is None:
            return offsets
        deadline.check()
        for literal_id, end in self._literals.first_ends(text.text, text.one_byte()).items():
            for id_ in self._ids_by_literal[literal_id]:
                offsets[id_] = end
        return offsets

    def extended(
        self, entries: list[PatternEntry | None], ids: list[int]
    ) -> tuple[Engine, list[int]]:
        """Remade from every live entry: one scan is cheaper than several."""
        engine = PortableEngine(_ids_by_literal(entries, lambda entry: [entry.literal]))
        uncovered = [id_ for id_ in ids if not entries[id_].literal]  # type: ignore[union-attr]
        return engine, uncovered

    def dump(self) -> tuple[Any, list[bytes]]:
        blobs = [self._literals.blob()] if self._literals is not None else []
        return [list(self._by_literal), self._ids_by_literal], blobs

    @classmethod
    def of_literals(cls, entries: list[PatternEntry | None]) -> PortableEngine:
        """A prefilter over each pattern's longest and leading literal, for ``near_keys``."""
        return cls(_ids_by_literal(entries, lambda entry: [entry.literal, entry.head]))

    def literal_hits(self, text: str) -> dict[int, int]:
        """Pattern id -> length of the longest of its literals found in ``text``."""
        found: dict[int, int] = {}
        if self._literals is None:
            return found
        for literal_id in self._literals.first_ends(text, one_byte(text)):
            length = self._lengths[literal_id]
            for id_ in self._ids_by_literal[literal_id]:
                if found.get(id_, 0) < length:
                    found[id_] = length
        return found


def _ids_by_literal(
    entries: list[PatternEntry | None], literals_of: Callable[[PatternEntry], list[str]]
) -> dict[str, list[int]]:
    """Each distinct literal of the live entries -> the ids of the entries that have it."""
    ids_by_literal: dict[str, list[int]] = {}
    for id_, entry in enumerate(entries):
        if entry is not None:
            for literal in dict.fromkeys(literals_of(entry)):
                if literal:
                    ids_by_literal.setdefault(literal, []).append(id_)
    return ids_by_literal


@dataclass(frozen=True, slots=True)
class _Shard:
    ids: list[int]
    database: Any  # hyperscan.Database, or None when every pattern of the shard was refused
    lock: threading.Lock = field(default_factory=threading.Lock)  # one scratch per database


class _HyperscanEngine:
    """Every pattern Hyperscan accepts, in databases of at most ``SHARD_SIZE`` patterns."""

    def __init__(self, shards: list[_Shard] | None = None) -> None:
        self._shards = shards or []

    @classmethod
    def restore(
        cls,
        entries: list[PatternEntry | None],  # noqa: ARG003 - the Engine protocol's signature
        state: Any,
        blobs: list[bytes],
    ) -> Engine:
        return cls(
            [_Shard(ids, _load_database(blob)) for ids, blob in zip(state, blobs, strict=True)]
        )

    def first_offsets(self, text: ScannedText) -> dict[int, int]:
        offsets: dict[int, int] = {}

        def on_match(id_: int, _start: int, end: int, _flags: int, _context: object) -> None:
            offsets[id_] = max(end - 1, 0)  # an end offset: the match's last char is before it

        data = text.one_byte()
        for shard in self._shards:
            deadline.check()
            if shard.database is not None:
                with shard.lock:
                    shard.database.scan(data, match_event_handler=on_match)
        return offsets

    def extended(
        self, entries: list[PatternEntry | None], ids: list[int]
    ) -> tuple[Engine, list[int]]:
        """The new patterns fill the last shard, then new ones; the other shards are kept."""
        fit = [id_ for id_ in ids if not _NOT_FOR_HYPERSCAN.search(entries[id_].pattern)]  # type: ignore[union-attr]
        uncovered = sorted(set(ids) - set(fit))
        if not fit:
            return self, uncovered
        shards = list(self._shards)
        if shards and len(shards[-1].ids) < SHARD_SIZE:
            fit = [id_ for id_ in shards.pop().ids if entries[id_] is not None] + fit
        for first in range(0, len(fit), SHARD_SIZE):
            shard, refused = _compile_shard(entries, fit[first : first + SHARD_SIZE])
            shards.append(shard)
            uncovered += refused
        return _HyperscanEngine(shards), uncovered

    def dump(self) -> tuple[Any, list[bytes]]:
        blobs = [hyperscan.dumpb(s.database) if s.database else b"" for s in self._shards]
        return [shard.ids for shard in self._shards], blobs


def _compile_shard(entries: list[PatternEntry | None], ids: list[int]) -> tuple[_Shard, list[int]]:
    """One database; when Hyperscan refuses the lot, pattern by pattern to find the refused
    ones (as prefilters first: a superset is enough, RE2 confirms), which it does not name."""
    patterns = [entries[id_].pattern for id_ in ids]  # type: ignore[union-attr]
    try:
        return _Shard(ids, _compile_database(patterns, ids, [_HS_FLAGS] * len(ids))), []
    except hyperscan.error:
        pass
    kept: list[int] = []
    flags: list[int] = []
    refused: list[int] = []
    for id_, pattern in zip(ids, patterns, strict=True):
        for flag in (_HS_FLAGS, _HS_FLAGS | hyperscan.HS_FLAG_PREFILTER):
            try:
                _compile_database([pattern], [id_], [flag])
            except hyperscan.error:
                continue
            kept.append(id_)
            flags.append(flag)
            break
        else:
            refused.append(id_)
    kept_patterns = [entries[id_].pattern for id_ in kept]  # type: ignore[union-attr]
    database = _compile_database(kept_patterns, kept, flags) if kept else None
    return _Shard(kept, database), refused


def _compile_database(
    patterns: list[str], ids: list[int], flags: list[int], literal: bool = False
) -> Any:
    """One block-mode database; with ``literal``, the patterns are plain text, compiled by
    Hyperscan's literal compiler."""
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    encoded = [pattern.encode("ascii") for pattern in patterns]
    database.compile(expressions=encoded, ids=ids, elements=len(ids), flags=flags, literal=literal)
    return database


def _load_database(blob: bytes) -> Any:
    """The database saved as ``blob`` with a scratch of its own (allocating it checks that the
    database was built for this CPU, here rather than at a scan); None for no blob."""
    if not blob:
        return None
    database = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database


ENGINES: dict[str, Any] = {"hyperscan": _HyperscanEngine, "portable": PortableEngine}
STALE_DATABASE = (hyperscan.error,) if HYPERSCAN else ()  # built by another Hyperscan


def resolve_backend(backend: Backend) -> str:
    """``auto`` is the portable engine: as fast per paste, quicker to build (module docstring)."""
    if backend == "auto":
        return "portable"
    if backend not in ENGINES:
        raise ValueError(f"unknown backend {backend!r}; expected auto, hyperscan or portable")
    if backend == "hyperscan" and not HYPERSCAN:
        raise RuntimeError("the hyperscan module is not installed (it is x86-64 only)")
    return backend
