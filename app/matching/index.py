"""All records' message patterns -> the records whose pattern a pasted text contains.

Trying every record's ``messagePattern`` in turn costs time in proportion to the number of records
(143 ms a paste for 28k patterns) and, with Python's ``re``, can backtrack for seconds on a crafted
line. This index makes one pass of a multi-pattern engine over the text, then confirms only the
patterns that engine flags with RE2, whose running time is linear in the text. Two engines sit
behind one interface:

* ``portable`` (the default, ``auto``): each pattern's longest required literal, found by
  Hyperscan's literal compiler where its wheel is installed, by Aho–Corasick elsewhere;
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

The engines are app.matching.prefilter; a pattern's literals app.matching.pattern_entry, its
RE2 programs app.matching.re2_programs; the text they scan app.matching.scanned_text.
"""

from __future__ import annotations

import json
import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from pathlib import Path

from app.matching import deadline
from app.matching.pattern_entry import ENTRY_FIELDS, PatternEntry, pattern_entry
from app.matching.prefilter import (
    ENGINES,
    STALE_DATABASE,
    Backend,
    Engine,
    PortableEngine,
    resolve_backend,
)
from app.matching.re2_programs import re2_program
from app.matching.scanned_text import MAX_SCAN_BYTES, ScannedText
from app.patterns import PatternError, check_pattern

MAX_HITS_PER_KEY = 20
"""Hits reported per pattern and paste: a log repeating one line thousands of times (one per
rank) tells no more than its first lines, and a pattern without literal matches every line."""

MAX_SUBJECT_CHARS = MAX_SCAN_BYTES // 4
"""Characters of a subject (an exception message) that :meth:`PatternIndex.match` reads: a
character is at most four bytes of UTF-8, so the subject fits one scan."""

CACHE_FORMAT = 4  # 2: patterns past the cost limits left out; 3: literals for cut messages;
# 4: the literal prefilters' Hyperscan databases
_CACHE_MAGIC = b"errkb-pattern-index\n"


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


class PatternIndex:
    """The message patterns of all records, matched against a paste in one pass.

    Reads (:meth:`candidates`, :meth:`match`) may run in several threads at once, also while a
    write runs; writes (:meth:`add`, :meth:`remove`, :meth:`rebuild`) must not overlap.
    """

    def __init__(self, entries: Iterable[tuple[str, str]] = (), backend: Backend = "auto"):
        """Build from ``(key, pattern)`` pairs. A pattern that :func:`check_pattern` refuses is
        left out and reported in ``rejected`` rather than raised: one bad record must not stop
        the service from starting (writes go through :meth:`add`, which raises)."""
        self.backend = resolve_backend(backend)
        self.rejected: dict[str, PatternError] = {}
        self._entries: list[PatternEntry | None] = []
        self._ids: dict[str, int] = {}
        self._loose: list[int] = []  # the engine cannot take these: found with str.find
        self._pending: list[int] = []  # added since the last rebuild: found with str.find
        self._engine: Engine = ENGINES[self.backend]()
        self._near: PortableEngine = PortableEngine()
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
        pasted = ScannedText.of(text)
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
        shared: dict[str, tuple[PatternEntry, list[str]]] = {}
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
        bare = re2_program(pattern, in_lines=False, groups=False)
        found = bare.fullmatch(subject) if full else bare.search(subject)
        if found is None:
            return None
        start, end = found.span()
        regex = re2_program(pattern, in_lines=False)
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
        self._entries.append(pattern_entry(key, pattern))  # in this order, a reader sees the old
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
        self._near = PortableEngine.of_literals(self._entries)
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
                for name in ENTRY_FIELDS
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
        columns = (header["entries"][name] for name in ENTRY_FIELDS)
        index._entries = [
            PatternEntry(*row) if row[0] is not None else None for row in zip(*columns, strict=True)
        ]
        index._ids = {entry.key: id_ for id_, entry in enumerate(index._entries) if entry}
        index._loose = header["loose"]
        index._pending = header["pending"]
        try:
            index._engine = ENGINES[index.backend].restore(index._entries, header["engine"], blobs)
        except STALE_DATABASE:
            return None
        index._near = PortableEngine.restore(index._entries, header["near"], near_blobs)
        return index

    def _entry(self, key: str) -> PatternEntry:
        entry = self._entries[self._ids[key]]
        if entry is None:  # removed while this call was reading
            raise KeyError(key)
        return entry

    @staticmethod
    def _confirm(entry: PatternEntry, at: int, text: ScannedText) -> list[tuple[int, int]]:
        """The (start, end) char offsets of the pattern's matches: RE2 over the text from the
        line of the engine's first hit (from the top for a pattern that spans lines), one
        match per line, ``MAX_HITS_PER_KEY`` at most, in windows of at most
        ``MAX_SCAN_BYTES``. Each search resumes after the previous match or window, so one
        pattern costs one pass over the text at most; the deadline is checked before each."""
        regex = re2_program(
            entry.pattern, in_lines=True, spans_lines=entry.spans_lines, groups=False
        )
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
