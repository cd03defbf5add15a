"""The warnings module's line, ``/x/scheduler.py:1326: UserWarning: <message>``: a warning
with where it was raised as its one frame."""

import re
from collections.abc import Sequence

from app.matching.tracebacks.exception_line import read_message
from app.matching.tracebacks.model import Draft, Frame, frame_file
from app.matching.tracebacks.names import exception_head
from app.matching.tracebacks.rows import Row

# The warnings module's line: "/x/scheduler.py:1326: UserWarning: <message>", or with the
# message on the next lines where a terminal wrapped the line right after the category.
_WARNING_LINE = re.compile(
    r"(?P<file>\S.{0,4095}?\.py):(?P<line>[0-9]{1,9}): (?=[^\W\d][\w.]{0,255}Warning:(?: |$))"
)


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The warning whose line is ``rows[at]``; None when it is no warnings module line."""
    row = rows[at]
    if ".py:" in row.text and (warned := _WARNING_LINE.match(row.text, row.indent)):
        return _read_warning(rows, at, warned)
    return None


def _read_warning(rows: Sequence[Row], at: int, found: re.Match[str]) -> tuple[Draft, int]:
    """A warning as the warnings module prints it: its category and message, and where it
    was raised as its one frame; the source line it prints below, indented, is not its
    message."""
    row = rows[at]
    head = exception_head(row, lenient=True, start=found.end())
    assert head is not None  # the pattern looked ahead at "<Name>Warning:"
    draft, after = read_message(rows, at, head, indented_ends=True)
    draft.message = draft.message.lstrip(" \n")  # wrapped right after the category
    draft.frames = (Frame(frame_file(found["file"]), int(found["line"]), "", ""),)
    draft.span = (row.span(row.indent, row.indent)[0], draft.span[1])
    return draft, after
