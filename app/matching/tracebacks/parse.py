"""The entry point: a paste's exceptions, each stream's read apart, then merged in order of
appearance and indexed."""

from collections.abc import Sequence

from app.matching import deadline
from app.matching.logtext import CleanLine, clean_lines
from app.matching.tracebacks.exception_line import wrap_remnant
from app.matching.tracebacks.lone_message import message_alone
from app.matching.tracebacks.model import ParsedException
from app.matching.tracebacks.stream import parse_lines


def parse_exceptions(text: str, lines: Sequence[CleanLine] | None = None) -> list[ParsedException]:
    """Every exception in ``text``, in order of appearance, indexed 0..n-1.

    ``lines`` are ``clean_lines(text)`` when the caller has them already (matching scans
    them too), so a large paste is cleaned once.
    """
    streams: dict[str, list[CleanLine]] = {}
    before: CleanLine | None = None
    for line in clean_lines(text) if lines is None else lines:
        stream = before.stream if before and wrap_remnant(before, line) else line.stream
        streams.setdefault(stream, []).append(line)
        before = line
    cut_at = len(text) if text[-1:] not in ("\n", "\r", "") else -1
    drafts = [draft for lines in streams.values() for draft in parse_lines(lines, cut_at)]
    if not drafts:
        drafts = message_alone([line for lines in streams.values() for line in lines])
    drafts.sort(key=lambda draft: draft.span)
    frozen = []
    for index, draft in enumerate(drafts):
        if index % deadline.CHECK_EVERY == 0:
            deadline.check()
        draft.index = index
        frozen.append(draft.freeze())
    return frozen
