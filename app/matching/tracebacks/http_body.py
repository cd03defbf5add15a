"""An HTTP error body alone on its line, as ``curl`` shows it: an exception whose class is the
body's ``type`` when that names a class, else unknown ("")."""

from collections.abc import Sequence

from app.matching.tracebacks.exception_line import unwrapped
from app.matching.tracebacks.model import Draft
from app.matching.tracebacks.rows import Row
from app.matching.tracebacks.wrappers import error_body


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The error body alone on ``rows[at]``, and the row after it; None when there is none."""
    draft = _body_alone(rows[at])
    return None if draft is None else (draft, at + 1)


def _body_alone(row: Row) -> Draft | None:
    """An HTTP error body alone on its line (what ``curl`` shows): an exception whose class
    is the body's ``type`` when that names a class, else unknown ("")."""
    body = error_body(row.text, row.indent, marked=True)
    if body is None:
        return None
    message, begin, end, kind = body
    name = kind if kind and kind[:1].isupper() else ""
    return unwrapped(name, message, row, row.indent, [row.span(begin, end)])
