"""One pattern as the index holds it (`PatternEntry`): the literal text every match of it
contains, read off Python's regex parse tree without running it.

The prefilters look for that literal text before RE2 confirms a match, ranking scores a
pattern by how much of it there is (its specificity), and the partial matcher finds a cut
message by its leading run.
"""

from __future__ import annotations

import re._constants as sre_constants  # Python's own regex parser: literals only, never run
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from app.patterns import parsed

MAX_LITERAL_CHARS = 24
"""Prefix of the longest literal the Aho–Corasick automaton holds: at 100k patterns it builds in
0.3 s instead of 1 s, for 7% more patterns to confirm (bench/bench_index.py)."""

MIN_HEAD_CHARS = 8
"""A pattern's leading literal shorter than this is too common to find its cut messages by."""


@dataclass(frozen=True, slots=True)
class PatternEntry:
    """A pattern of the index, with the literal text its parse says every match contains."""

    key: str
    pattern: str
    literal: str  # (a prefix of) the longest literal every match contains; "" if none known
    specificity: int  # literal characters every match contains: noise patterns score 0
    spans_lines: bool  # the pattern names a newline, so its matches cross lines
    head: str  # (a prefix of) its first literal run: what a message cut short still shows


ENTRY_FIELDS = [f.name for f in fields(PatternEntry)]


def pattern_entry(key: str, pattern: str) -> PatternEntry:
    runs = _required_literals(pattern)
    head = runs[0][:MAX_LITERAL_CHARS] if runs else ""
    return PatternEntry(
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
