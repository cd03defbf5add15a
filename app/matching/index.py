"""All records' message patterns -> the records whose pattern a pasted text contains.

Trying every record's ``messagePattern`` in turn costs time in proportion to the number of records
(143 ms a paste for 28k patterns) and, with Python's ``re``, can backtrack for seconds on a crafted
line. This index makes one pass of a multi-pattern engine over the text, then confirms only the
patterns that engine flags with RE2, whose running time is linear in the text. Two engines sit
behind one interface:

* ``portable`` (the default, ``auto``): each pattern's longest required literal, found by
  Hyperscan's literal compiler where its wheel is installed, by Aho–Corasick elsewhere
  (``_LiteralSet``);
* ``hyperscan`` (x86-64 only): every pattern compiled into Hyperscan databases, in shards so a
  write recompiles one shard, serialised by :meth:`PatternIndex.save` because compiling is slow.

Per paste they cost the same (bench/bench_index.py: 0.57 vs 0.55 ms at 28k patterns, 2.7 vs
2.8 ms at 100k, against 2.3 s and 8.2 s for a loop of ``re.search``): the time goes to confirming
and locating the real hits, which both must do. The literal prefilter builds five times faster
(3 s vs 15 s at 28k, measured with Aho–Corasick), takes half the memory and runs everywhere, so
``auto`` picks it.

Patterns neither engine can take (no literal, or refused by Hyperscan) and patterns added since
the last :meth:`PatternIndex.rebuild` are few; they are checked with ``str.find`` on their literal
and confirmed with RE2 like the rest.

Every pattern is checked before it is stored (:func:`check_pattern`) against limits that bound
what one RE2 call can cost: its program size and groups, no ``\\C``, and no pattern
that matches the empty string or any line; and no RE2 call scans more than ``MAX_SCAN_BYTES``
of a paste or extracts groups from more than that. Between calls, the scan and confirm loops
check the match deadline (app.matching.deadline), so a request stops soon after it.

Matching is per line: a pattern matches inside one line of the text (``.``, ``\\s`` and negated
classes never cross a newline; ``^`` and ``$`` anchor at lines), unless the pattern itself
contains a newline, in which case its matches may span the lines it names. Offsets are ``str``
offsets. Captures (:meth:`PatternIndex.match`) come from RE2 too, never from Python's ``re``.
"""

from __future__ import annotations

import json
import os
import re
import re._constants as sre_constants  # Python's own regex parser: literals only, never run
import tempfile
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from functools import lru_cache
from itertools import accumulate, chain
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, Protocol

import ahocorasick
import re2

from app.matching import deadline
from app.patterns import PatternError, check_pattern, parsed, re2_options

try:
    import hyperscan

    HYPERSCAN = True
except ImportError:  # no wheel outside x86-64: the portable engine takes over
    HYPERSCAN = False

Backend = Literal["auto", "hyperscan", "portable"]

SHARD_SIZE = 5000
"""Patterns per Hyperscan database: a rebuild recompiles one shard (about 3 s), and each shard
costs one more pass over the text (20 us for 5 KB)."""

MAX_LITERAL_CHARS = 24
"""Prefix of the longest literal the Aho–Corasick automaton holds: at 100k patterns it builds in
0.3 s instead of 1 s, for 7% more patterns to confirm (bench/bench_index.py)."""

MAX_HITS_PER_KEY = 20
"""Hits reported per pattern and paste: a log repeating one line thousands of times (one per
rank) tells no more than its first lines, and a pattern without literal matches every line."""

MAX_COMPILED = 4096
"""RE2 programs kept compiled. Patterns are compiled when first needed, so start-up does not
pay for 100k of them and memory stays bounded."""

MAX_SCAN_BYTES = 32 * 1024
"""Most bytes of a paste one RE2 call scans: confirmation walks the text in windows of whole
lines up to this size (a longer line is scanned in its first MAX_SCAN_BYTES only), and groups
are extracted from subjects no longer than this. With MAX_PROGRAM_SIZE, one call stays under
about 0.1 s whatever the pattern and the paste. A match of a multi-line pattern must fit in
one window."""

MAX_SUBJECT_CHARS = MAX_SCAN_BYTES // 4
"""Characters of a subject (an exception message) that :meth:`PatternIndex.match` reads: a
character is at most four bytes of UTF-8, so the subject fits one scan."""

MIN_HEAD_CHARS = 8
"""A pattern's leading literal shorter than this is too common to find its cut messages by."""

CACHE_FORMAT = 4  # 2: patterns past the cost limits left out; 3: literals for cut messages;
# 4: the literal prefilters' Hyperscan databases
_CACHE_MAGIC = b"errkb-pattern-index\n"

_HS_FLAGS = (
    (hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY)
    if HYPERSCAN
    else 0
)
"""Line anchors like RE2's line mode; one report per pattern, the earliest, which is all the
confirmation needs; empty matches allowed so ``.*`` is not refused. No UTF-8 mode: it triples the
compile time, so the scanned text has one byte per character instead (see ``_Text.one_byte``)."""

# Hyperscan scans one byte per character, so it must not meet a pattern that names a non-ASCII
# character (by itself or by an escape), nor case-folding, which in RE2 maps ASCII to non-ASCII.
_NOT_FOR_HYPERSCAN = re.compile(r"[^\x00-\x7f]|\\[xuUNpPC0]|\(\?[a-zA-Z-]*i")
_ONE_BYTE = bytes(range(128)) + b"\x80" * 128
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))

_CAPTURING_OPENER = re.compile(r"\((?:\?P?<[A-Za-z_][A-Za-z0-9_]*>)?(?!\?)")


@dataclass(frozen=True, slots=True)
class Hit:
    """A confirmed match of record ``key``'s pattern at ``text[start:end]``."""

    key: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Captures:
    """The groups of one match, as ``re.Match.groups()`` and ``groupdict()`` would give them."""

    span: tuple[int, int]
    groups: tuple[str | None, ...]
    named: dict[str, str | None]


def _without_groups(pattern: str) -> str:
    """The pattern with each capturing group made non-capturing: RE2 then finds a match's span
    with its DFA alone, where groups would need its NFA (much slower on long lines)."""
    out, at, in_class = [], 0, False
    while at < len(pattern):
        char = pattern[at]
        if pattern.startswith("\\Q", at):  # literal text up to \E: nothing to change there
            end = pattern.find("\\E", at)
            end = len(pattern) if end < 0 else end + 2
            out.append(pattern[at:end])
            at = end
            continue
        if char == "\\":
            out.append(pattern[at : at + 2])
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            start = at + 1 + pattern.startswith("^", at + 1)
            start += pattern.startswith("]", start)  # a leading "]" is a member
            out.append(pattern[at:start])
            at = start
            continue
        elif opener := _CAPTURING_OPENER.match(pattern, at):
            out.append("(?:")
            at = opener.end()
            continue
        out.append(char)
        at += 1
    return "".join(out)


@lru_cache(maxsize=MAX_COMPILED)
def _compiled(
    pattern: str, *, in_lines: bool, spans_lines: bool = False, groups: bool = True
) -> Any:
    """The RE2 program for ``match`` (as written) or for candidates (line anchors, and no
    newline crossed unless the pattern names one); without ``groups``, the same program with
    its groups made non-capturing, for finding spans fast (or as written, should that fail)."""
    if not groups:
        regex = _compiled(pattern, in_lines=in_lines, spans_lines=spans_lines)
        if regex.groups == 0:
            return regex
        try:
            bare = _compiled(_without_groups(pattern), in_lines=in_lines, spans_lines=spans_lines)
        except re2.error:
            return regex
        return bare if bare.groups == 0 else regex
    if not in_lines:
        return re2.compile(pattern, re2_options(never_nl=False))
    return re2.compile(f"(?m){pattern}", re2_options(never_nl=not spans_lines))


@dataclass(frozen=True, slots=True)
class _Entry:
    key: str
    pattern: str
    literal: str  # (a prefix of) the longest literal every match contains; "" if none known
    specificity: int  # literal characters every match contains: noise patterns score 0
    spans_lines: bool  # the pattern names a newline, so its matches cross lines
    head: str  # (a prefix of) its first literal run: what a message cut short still shows


_ENTRY_FIELDS = [f.name for f in fields(_Entry)]


def _entry(key: str, pattern: str) -> _Entry:
    runs = _required_literals(pattern)
    head = runs[0][:MAX_LITERAL_CHARS] if runs else ""
    return _Entry(
        key=key,
        pattern=pattern,
        literal=max(runs, key=len, default="")[:MAX_LITERAL_CHARS],
        specificity=sum(map(len, runs)),
        spans_lines=any("\n" in run for run in runs),
        head=head if len(head) >= MIN_HEAD_CHARS else "",
    )


def _required_literals(pattern: str) -> list[str]:
    """Runs of literal text that every match contains, read off Python's regex parse tree.

    Only the shape is used: Python's parser never runs on user text. Patterns it cannot parse
    (RE2-only syntax) get no literal and are confirmed on every paste.
    """
    tree = parsed(pattern)
    if tree is None:
        return []
    runs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    def walk(items: Iterable[tuple[Any, Any]], caseless: bool) -> None:
        for op, arg in items:
            if op is sre_constants.LITERAL and not caseless:
                current.append(chr(arg))
            elif op is sre_constants.AT:  # zero-width: the literals around it stay adjacent
                continue
            elif op is sre_constants.SUBPATTERN:
                _, add_flags, del_flags, body = arg
                ignore = sre_constants.SRE_FLAG_IGNORECASE
                walk(body, (caseless or bool(add_flags & ignore)) and not del_flags & ignore)
            else:
                flush()
                if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and arg[0] >= 1:
                    walk(arg[2], caseless)
                    flush()

    walk(tree, bool(tree.state.flags & sre_constants.SRE_FLAG_IGNORECASE))
    flush()
    return runs


@dataclass(frozen=True, slots=True)
class _Text:
    """A pasted text with the line tables that turn engine offsets into lines and back."""

    text: str
    data: bytes  # UTF-8: what RE2 confirms against
    char_starts: list[int]
    byte_starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Text:
        lines = text.split("\n")
        char_starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
        if text.isascii():
            return cls(text, text.encode("ascii"), char_starts, char_starts)
        data = text.encode("utf-8", "surrogatepass")
        byte_lengths = (len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines[:-1])
        return cls(text, data, char_starts, list(accumulate(byte_lengths, initial=0)))

    def one_byte(self) -> bytes:
        """The text with every non-ASCII character as the byte 0x80, so that Hyperscan's
        offsets are character offsets and its ``.`` and negated classes still match once per
        character (0x80 is no ASCII literal, word or space character)."""
        if self.char_starts is self.byte_starts:  # ASCII
            return self.data
        return self.data.translate(_ONE_BYTE, _UTF8_CONTINUATION)

    def line_of_char(self, char: int) -> int:
        return bisect_right(self.char_starts, char) - 1

    def window_end(self, line: int) -> int:
        """Where a scan that starts at ``line`` stops (a byte offset): after the last whole
        line within ``MAX_SCAN_BYTES``, or, for a longer line, ``MAX_SCAN_BYTES`` into it at a
        character boundary."""
        start = self.byte_starts[line]
        limit = start + MAX_SCAN_BYTES
        if limit >= len(self.data):
            return len(self.data)
        after = bisect_right(self.byte_starts, limit + 1) - 1  # first line that does not fit
        if after > line:
            return self.byte_starts[after] - 1  # the newline ending the last line that fits
        while self.data[limit] & 0xC0 == 0x80:  # not inside a UTF-8 sequence
            limit -= 1
        return limit

    def char_of_byte(self, line: int, byte: int) -> int:
        if self.char_starts is self.byte_starts:
            return byte
        start = self.byte_starts[line]
        return self.char_starts[line] + len(self.data[start:byte].decode("utf-8", "surrogatepass"))


def _one_byte(text: str) -> bytes:
    """``text`` with one byte a character, as ``_Text.one_byte`` gives it."""
    if text.isascii():
        return text.encode("ascii")
    return text.encode("utf-8", "surrogatepass").translate(_ONE_BYTE, _UTF8_CONTINUATION)


class _Engine(Protocol):
    """A prefilter: for each pattern it covers that may match, the char offset at or before
    the line of its first match."""

    def first_offsets(self, text: _Text) -> dict[int, int]: ...

    def extended(self, entries: list[_Entry | None], ids: list[int]) -> tuple[_Engine, list[int]]:
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
        (``one_byte`` is ``text`` with one byte a character, see ``_Text.one_byte``)."""
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


class _PortableEngine:
    """A literal prefilter: the longest required literal of each pattern."""

    def __init__(self, ids_by_literal: dict[str, list[int]] | None = None, blob: bytes = b""):
        self._by_literal = ids_by_literal or {}
        self._literals = _LiteralSet(list(self._by_literal), blob) if self._by_literal else None
        self._ids_by_literal = list(self._by_literal.values())
        self._lengths = [len(literal) for literal in self._by_literal]

    @classmethod
    def restore(
        cls,
        entries: list[_Entry | None],  # noqa: ARG003 - the _Engine protocol's signature
        state: Any,
        blobs: list[bytes],
    ) -> _PortableEngine:
        """Rebuilt from the literals as they were when it was built (entries removed since
        keep theirs), with the compiled database saved beside them: compiling takes seconds
        at 100k patterns; the automaton is quicker to rebuild than to load."""
        literals, ids = state
        return cls(dict(zip(literals, ids, strict=True)), b"".join(blobs))

    def first_offsets(self, text: _Text) -> dict[int, int]:
        offsets: dict[int, int] = {}
        if self._literals is None:
            return offsets
        deadline.check()
        for literal_id, end in self._literals.first_ends(text.text, text.one_byte()).items():
            for id_ in self._ids_by_literal[literal_id]:
                offsets[id_] = end
        return offsets

    def extended(self, entries: list[_Entry | None], ids: list[int]) -> tuple[_Engine, list[int]]:
        """Remade from every live entry: one scan is cheaper than several."""
        engine = _PortableEngine(_ids_by_literal(entries, lambda entry: [entry.literal]))
        uncovered = [id_ for id_ in ids if not entries[id_].literal]  # type: ignore[union-attr]
        return engine, uncovered

    def dump(self) -> tuple[Any, list[bytes]]:
        blobs = [self._literals.blob()] if self._literals is not None else []
        return [list(self._by_literal), self._ids_by_literal], blobs

    @classmethod
    def of_literals(cls, entries: list[_Entry | None]) -> _PortableEngine:
        """A prefilter over each pattern's longest and leading literal, for ``near_keys``."""
        return cls(_ids_by_literal(entries, lambda entry: [entry.literal, entry.head]))

    def literal_hits(self, text: str) -> dict[int, int]:
        """Pattern id -> length of the longest of its literals found in ``text``."""
        found: dict[int, int] = {}
        if self._literals is None:
            return found
        for literal_id in self._literals.first_ends(text, _one_byte(text)):
            length = self._lengths[literal_id]
            for id_ in self._ids_by_literal[literal_id]:
                if found.get(id_, 0) < length:
                    found[id_] = length
        return found


def _ids_by_literal(
    entries: list[_Entry | None], literals_of: Callable[[_Entry], list[str]]
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
        entries: list[_Entry | None],  # noqa: ARG003 - the _Engine protocol's signature
        state: Any,
        blobs: list[bytes],
    ) -> _Engine:
        return cls(
            [_Shard(ids, _load_database(blob)) for ids, blob in zip(state, blobs, strict=True)]
        )

    def first_offsets(self, text: _Text) -> dict[int, int]:
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

    def extended(self, entries: list[_Entry | None], ids: list[int]) -> tuple[_Engine, list[int]]:
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


def _compile_shard(entries: list[_Entry | None], ids: list[int]) -> tuple[_Shard, list[int]]:
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


_ENGINES: dict[str, Any] = {"hyperscan": _HyperscanEngine, "portable": _PortableEngine}
_STALE_DATABASE = (hyperscan.error,) if HYPERSCAN else ()  # built by another Hyperscan


def _resolve(backend: Backend) -> str:
    """``auto`` is the portable engine: as fast per paste, quicker to build (module docstring)."""
    if backend == "auto":
        return "portable"
    if backend not in _ENGINES:
        raise ValueError(f"unknown backend {backend!r}; expected auto, hyperscan or portable")
    if backend == "hyperscan" and not HYPERSCAN:
        raise RuntimeError("the hyperscan module is not installed (it is x86-64 only)")
    return backend


class PatternIndex:
    """The message patterns of all records, matched against a paste in one pass.

    Reads (:meth:`candidates`, :meth:`match`) may run in several threads at once, also while a
    write runs; writes (:meth:`add`, :meth:`remove`, :meth:`rebuild`) must not overlap.
    """

    def __init__(self, entries: Iterable[tuple[str, str]] = (), backend: Backend = "auto"):
        """Build from ``(key, pattern)`` pairs. A pattern that :func:`check_pattern` refuses is
        left out and reported in ``rejected`` rather than raised: one bad record must not stop
        the service from starting (writes go through :meth:`add`, which raises)."""
        self.backend = _resolve(backend)
        self.rejected: dict[str, PatternError] = {}
        self._entries: list[_Entry | None] = []
        self._ids: dict[str, int] = {}
        self._loose: list[int] = []  # the engine cannot take these: found with str.find
        self._pending: list[int] = []  # added since the last rebuild: found with str.find
        self._engine: _Engine = _ENGINES[self.backend]()
        self._near: _PortableEngine = _PortableEngine()
        for key, pattern in entries:
            try:
                self.add(key, pattern)
            except PatternError as error:
                self.rejected[key] = error
        self.rebuild()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def candidates(self, text: str) -> list[Hit]:
        """Confirmed matches of any pattern in ``text``, by position: at most one per pattern
        and line, ``MAX_HITS_PER_KEY`` per pattern. Stops at the match deadline."""
        pasted = _Text.of(text)
        offsets = self._engine.first_offsets(pasted)
        for number, id_ in enumerate(chain(self._loose, self._pending)):
            if number % deadline.CHECK_EVERY == 0:
                deadline.check()
            entry = self._entries[id_]
            if entry is not None and (at := text.find(entry.literal)) >= 0:
                offsets[id_] = min(at, offsets.get(id_, at))
        # Records of many releases share one pattern (an unchanged message): it is searched
        # for once, from the first offset any of them was flagged at, and its hits are
        # each record's. On the whole-history store that is half the searches of a paste.
        shared: dict[str, tuple[_Entry, list[str]]] = {}
        first: dict[str, int] = {}
        for id_, at in offsets.items():
            entry = self._entries[id_]
            if entry is None:  # removed since the engine was built
                continue
            shared.setdefault(entry.pattern, (entry, []))[1].append(entry.key)
            first[entry.pattern] = min(at, first.get(entry.pattern, at))
        hits: list[Hit] = []
        for pattern, (entry, keys) in shared.items():
            for start, end in self._confirm(entry, first[pattern], pasted):
                hits.extend(Hit(key, start, end) for key in keys)
        hits.sort(key=attrgetter("start", "end", "key"))
        return hits

    def match(self, key: str, subject: str, full: bool = False) -> Captures | None:
        """Groups of ``key``'s pattern in ``subject`` (an exception message, say): the whole of
        it when ``full``, else the first match. Only the first ``MAX_SUBJECT_CHARS`` are read:
        a longer subject never matches whole. Raises KeyError for an unknown key, and
        DeadlineExceeded past the match deadline."""
        deadline.check()
        pattern = self._entry(key).pattern
        if len(subject) > MAX_SUBJECT_CHARS:
            if full:
                return None
            subject = subject[:MAX_SUBJECT_CHARS]
        bare = _compiled(pattern, in_lines=False, groups=False)
        found = bare.fullmatch(subject) if full else bare.search(subject)
        if found is None:
            return None
        start, end = found.span()
        regex = _compiled(pattern, in_lines=False)
        if regex is not bare:  # the groups of that same match: the span fixed, only they vary
            found = regex.fullmatch(subject, start, end)
        return Captures(found.span(), found.groups(), found.groupdict())

    def near_keys(self, text: str) -> dict[str, int]:
        """Keys whose pattern's longest or leading literal occurs in ``text``, with the length
        of the longer one found: the patterns a message that does not match in full may still
        be a cut or near copy of. Nothing is confirmed; that is the caller's job."""
        found: dict[str, int] = {}
        for id_, length in self._near.literal_hits(text).items():
            entry = self._entries[id_]
            if entry is not None:
                found[entry.key] = length
        for id_ in chain(self._loose, self._pending):
            entry = self._entries[id_]
            if entry is not None:
                for literal in (entry.literal, entry.head):
                    if literal and literal in text:
                        found[entry.key] = max(found.get(entry.key, 0), len(literal))
        return found

    def pattern(self, key: str) -> str:
        """``key``'s pattern. Raises KeyError for an unknown key."""
        return self._entry(key).pattern

    def specificity(self, key: str) -> int:
        """Literal characters every match of ``key``'s pattern contains: 0 for a pattern such
        as ``(.+?)`` that matches any line, so ranking can put it last."""
        return self._entry(key).specificity

    def add(self, key: str, pattern: str) -> None:
        """Add or replace ``key``'s pattern; it is matched at once, with ``str.find`` and RE2
        until the next :meth:`rebuild`. Raises :class:`PatternError` for a pattern RE2 refuses."""
        check_pattern(pattern)
        replaced = self._ids.get(key)
        self._entries.append(_entry(key, pattern))  # in this order, a reader sees the old
        self._ids[key] = len(self._entries) - 1  # pattern or the new one, never neither
        self._pending.append(self._ids[key])
        if replaced is not None:
            self._entries[replaced] = None

    def remove(self, key: str) -> None:
        """Forget ``key``'s pattern (nothing happens for an unknown key). Its slot in the engine
        stays until a fresh build; hits on it are dropped."""
        id_ = self._ids.pop(key, None)
        if id_ is not None:
            self._entries[id_] = None

    def rebuild(self) -> None:
        """Move the patterns added since the last rebuild into the engine: remakes the literal
        prefilters (2.1 s for the 100k patterns of the whole-history store with Hyperscan's
        literal compiler, 0.25 s with Aho–Corasick: bench/bench_prefilter.py) or recompiles a
        Hyperscan shard or two (3 s); call it off the request path."""
        pending = [id_ for id_ in self._pending if self._entries[id_] is not None]
        self._engine, uncovered = self._engine.extended(self._entries, pending)
        self._near = _PortableEngine.of_literals(self._entries)
        self._loose = [id_ for id_ in self._loose if self._entries[id_] is not None] + uncovered
        self._pending = []

    def save(self, path: Path, version: str) -> None:
        """Write the index to ``path`` (atomically), to be loaded while ``version`` (say the
        dataset version) is current: building checks and parses every pattern (3 s at 28k,
        15 s with Hyperscan), loading reads them back (0.1 s)."""
        state, blobs = self._engine.dump()
        near_state, near_blobs = self._near.dump()
        header = {
            "format": CACHE_FORMAT,
            "version": version,
            "backend": self.backend,
            "entries": {  # by column: strings and numbers decode fastest
                name: [getattr(entry, name) if entry else None for entry in self._entries]
                for name in _ENTRY_FIELDS
            },
            "loose": self._loose,
            "pending": self._pending,
            "engine": state,
            "blobs": [len(blob) for blob in blobs],
            "near": near_state,
            "near_blobs": [len(blob) for blob in near_blobs],
        }
        path = Path(path)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as file:
            file.write(_CACHE_MAGIC)
            file.write(json.dumps(header, separators=(",", ":")).encode())
            file.write(b"\n")
            for blob in chain(blobs, near_blobs):
                file.write(blob)
        os.replace(file.name, path)

    @classmethod
    def load(cls, path: Path, version: str, backend: Backend = "auto") -> PatternIndex | None:
        """The index saved at ``path`` for ``version``, or None when there is none to use: no
        file, another version or backend, or a Hyperscan database from another build."""
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            return None
        header_end = raw.find(b"\n", len(_CACHE_MAGIC))
        if not raw.startswith(_CACHE_MAGIC) or header_end < 0:
            return None
        header = json.loads(raw[len(_CACHE_MAGIC) : header_end])
        index = cls(backend=backend)
        if (header["format"], header["version"], header["backend"]) != (
            CACHE_FORMAT,
            version,
            index.backend,
        ):
            return None
        blobs, at = [], header_end + 1
        for size in chain(header["blobs"], header["near_blobs"]):
            blobs.append(raw[at : at + size])
            at += size
        blobs, near_blobs = blobs[: len(header["blobs"])], blobs[len(header["blobs"]) :]
        columns = (header["entries"][name] for name in _ENTRY_FIELDS)
        index._entries = [
            _Entry(*row) if row[0] is not None else None for row in zip(*columns, strict=True)
        ]
        index._ids = {entry.key: id_ for id_, entry in enumerate(index._entries) if entry}
        index._loose = header["loose"]
        index._pending = header["pending"]
        try:
            index._engine = _ENGINES[index.backend].restore(index._entries, header["engine"], blobs)
        except _STALE_DATABASE:
            return None
        index._near = _PortableEngine.restore(index._entries, header["near"], near_blobs)
        return index

    def _entry(self, key: str) -> _Entry:
        entry = self._entries[self._ids[key]]
        if entry is None:  # removed while this call was reading
            raise KeyError(key)
        return entry

    @staticmethod
    def _confirm(entry: _Entry, at: int, text: _Text) -> list[tuple[int, int]]:
        """The (start, end) char offsets of the pattern's matches: RE2 over the text from the
        line of the engine's first hit (from the top for a pattern that spans lines), one
        match per line, ``MAX_HITS_PER_KEY`` at most, in windows of at most
        ``MAX_SCAN_BYTES``. Each search resumes after the previous match or window, so one
        pattern costs one pass over the text at most; the deadline is checked before each."""
        regex = _compiled(entry.pattern, in_lines=True, spans_lines=entry.spans_lines, groups=False)
        line = 0 if entry.spans_lines else text.line_of_char(at)
        spans: list[tuple[int, int]] = []
        while line < len(text.byte_starts) and len(spans) < MAX_HITS_PER_KEY:
            deadline.check()
            end = text.window_end(line)
            found = regex.search(text.data, text.byte_starts[line], end)
            if found is None:
                line = bisect_right(text.byte_starts, end)
                continue
            start, stop = found.span()
            line = bisect_right(text.byte_starts, start) - 1
            spans.append((text.char_of_byte(line, start), text.char_of_byte(line, stop)))
            line += 1
        return spans
