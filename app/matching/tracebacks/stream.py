"""One stream's exceptions: the dialects tried in order at each line that may begin one, and
chained exceptions ("The above exception was the direct cause ...") linked to their causes."""

import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import Protocol

from app.matching import deadline
from app.matching.logtext import CleanLine
from app.matching.tracebacks import (
    exception_line,
    http_body,
    ipython,
    mentions,
    python,
    rich,
    warning_line,
)
from app.matching.tracebacks.mentions import ASCII_NAME, CJK
from app.matching.tracebacks.model import Draft
from app.matching.tracebacks.rows import CHAIN_SEPARATORS, GROUP_OPENER, Row, Rows, every_row

DENSE_OPENERS = 4
"""A stream where more than one line in this many may begin an exception has all its rows
made at once (see parse_lines)."""

# What a line must hold to begin anything the parser reads, searched in the clean lines
# joined by newlines with one more in front, so that "\n" opens a line and no other branch
# crosses one: a chain separator, a header (plain, IPython's, rich's), a frame, an HTTP
# error body, a warnings module line, a repr or a quoted mention of an exception, or a line
# that is a name and a colon or a name alone (an exception line, after a pytest margin or
# not). Each branch is looser than what it stands for, so a line without any is one the
# parser would pass over; each begins with a fixed character, so the engine skips in C to
# the next place where one may match.
_NAME = r"[^\W\d][\w.]*"
_LINE_END = r"[^\S\n]*(?=\n|\Z)"
_MAY_OPEN_IN_ASCII = (
    r"The above exception|During handling|most recent call last|File \"|\.py\", line |message"
    r"|\.py:[0-9]+: "
    rf"|\"\){_LINE_END}|'\){_LINE_END}"
    rf"|\"{_NAME}: |'{_NAME}: |`{_NAME}: |“{_NAME}: |\({_NAME}: |: {_NAME}: "
    rf"|\n(?:E )?[^\S\n]*{_NAME}(?:\([\w.]+\))?(?::|{_LINE_END})"
)
# A CJK character opening a mention is a class, not a fixed character: with that branch the
# engine tries every branch at every place, at twice the cost. An ASCII text holds none, and
# is searched without it.
_MAY_OPEN = re.compile(rf"{_MAY_OPEN_IN_ASCII}|[{CJK}]{ASCII_NAME}: ")
_MAY_OPEN_ASCII = re.compile(_MAY_OPEN_IN_ASCII)


class Dialect(Protocol):
    """How one dialect reads the exception that may begin at ``rows[at]``: None when the row
    begins none of its kind, else what it found (None: nothing after all) and the row where
    parsing goes on. ``lenient``: a class name need not look like an exception's (the row
    follows a chain separator or sits in an exception group)."""

    def __call__(
        self, rows: Sequence[Row], at: int, lenient: bool
    ) -> tuple[Draft | None, int] | None: ...


DIALECTS: tuple[Dialect, ...] = (
    python.read,
    ipython.read,
    rich.read,
    exception_line.read,
    warning_line.read,
    mentions.read,
    http_body.read,
)
"""The dialects in the order they are tried; the first that reads a row has it."""


def parse_lines(lines: Sequence[CleanLine], cut_at: int) -> list[Draft]:
    """The exceptions of one stream; ``cut_at`` is where the paste ends when it ends in the
    middle of a line, else -1.

    Most lines of a large log can begin nothing: a line with none of `_MAY_OPEN` in it is
    neither a header, a frame, an exception line nor one that mentions an exception, so
    the parser goes straight to the next line that has one, and makes the rows of the
    others only when a traceback or message it reads runs over them. Where most lines may
    begin something (a flood of exception lines), every row is made at once: a list is
    quicker to index than rows made on demand. Inside an exception group a row depends on
    the rows above it (its margin), so a stream with a group has all its rows made and
    looked at.
    """
    joined = "\n".join([line.text for line in lines])
    if GROUP_OPENER in joined:
        return parse_stream(every_row(lines, cut_at), None)
    openers = _openers(joined)
    if len(openers) * DENSE_OPENERS > len(lines):
        return parse_stream(every_row(lines, cut_at), openers)
    return parse_stream(Rows(lines, cut_at), openers)


def _openers(joined: str) -> list[int]:
    """The numbers of the lines of ``joined`` (clean lines joined by newlines) that hold a
    match of `_MAY_OPEN`: one search of the whole text, resumed at the line after each."""
    subject = "\n" + joined
    may_open = _MAY_OPEN_ASCII if subject.isascii() else _MAY_OPEN
    found: list[int] = []
    number, counted, at = -1, 0, 0
    while (match := may_open.search(subject, at)) is not None:
        inside = match.end() - 1  # every branch ends inside the line it found
        number += subject.count("\n", counted, inside + 1)
        counted = inside + 1
        found.append(number)
        at = subject.find("\n", match.end())
        if at < 0:
            break
    return found


def parse_stream(rows: Sequence[Row], openers: Sequence[int] | None) -> list[Draft]:
    """All exceptions in one stream, with chained ones linked to their causes.

    ``openers`` are the rows that may begin something (None: any row may); the others are
    passed over unless a chain separator above waits for the exception it announces.
    """
    drafts: list[Draft] = []
    pending: tuple[Draft | None, str] | None = None
    last_top: Draft | None = None
    at = 0
    steps = 0
    while at < len(rows):
        steps += 1
        if steps % deadline.CHECK_EVERY == 0:
            deadline.check()
        if openers is not None and pending is None:
            following = bisect_left(openers, at)
            if following == len(openers):
                break
            at = openers[following]
        row = rows[at]
        if row.boundary or not row.text:
            at += 1
            continue
        kind = CHAIN_SEPARATORS.get(row.text.strip()) if row.text.endswith(":") else None
        if kind:
            pending = ((drafts[-1] if drafts else None) if row.nested else last_top, kind)
            at += 1
            continue
        lenient = row.nested or pending is not None
        for dialect in DIALECTS:
            found = dialect(rows, at, lenient)
            if found is not None:
                draft, at = found
                break
        else:
            draft, at = None, at + 1
        if draft is not None:
            if pending is not None and pending[0] is not None:
                draft.cause, draft.cause_kind = pending
            drafts.append(draft)
            if not row.nested:
                last_top = draft
        pending = None
    return drafts
