"""Python's own traceback: ``Traceback (most recent call last):``, or its frames without the
header, then the exception line; frame lines a terminal wrapped, source lines with 3.11+
carets, left-out frames, and a paste that ends inside a frame's ``raise``."""

import re
from collections.abc import Sequence

from app.matching.tracebacks.exception_line import read_message, unwrapped
from app.matching.tracebacks.model import Draft, Frame, frame_file
from app.matching.tracebacks.names import exception_head, looks_like_exception
from app.matching.tracebacks.rows import FRAME, GROUP_HEADER, HEADER, Row, frame_match

MAX_WRAPPED_ROWS = 3
"""Rows one frame line may be wrapped into by a terminal and still be read as a frame."""

# A frame's source line that raises: `raise AssertionError("Torch not compiled with C`,
# its class and the text of its message's literal (to the closing quote, or the paste's end).
_RAISE_SOURCE = re.compile(
    r"raise (?P<name>[^\W\d][\w.]{0,255})\((?:[rRuUfF]{0,2}[\"'](?P<message>[^\"'\\]{0,4096}))?"
)
_FUNCTION = re.compile(r"[\w.<>]{1,1024}")  # a frame's function: `f`, `<module>`, `A.f`


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The traceback whose header or first frame is ``rows[at]``; None when it is neither."""
    row = rows[at]
    if row.text.endswith(HEADER) or frame_match(row):
        return _read_traceback(rows, at)
    return None


def _read_traceback(rows: Sequence[Row], at: int) -> tuple[Draft | None, int]:
    """The traceback whose header or first frame is ``rows[at]``, and where parsing goes on.

    Frames count without a header: the exception line after them closes the
    traceback. When no exception line ends it (the paste was cut, or noise follows), nothing
    is returned and parsing goes on at the row that did not fit, so rows already read are
    not read again.
    """
    header = rows[at]
    if header.text.endswith(HEADER):
        start = len(header.text) - len(HEADER)
        if header.text[:start].endswith(GROUP_HEADER):
            start -= len(GROUP_HEADER)
        if not header.text[:start].strip():
            start = header.indent
        at += 1
    else:
        start = header.indent
    frames: list[Frame] = []
    while at < len(rows):
        row = rows[at]
        if frames and not row.text and _blank_from(rows, at):
            break
        if row.boundary or not row.text:
            return None, at
        frame, used = _wrapped_frame(rows, at)
        if frame:
            source, at = _read_source(rows, at + used, row)
            frames.append(
                Frame(
                    file=frame_file(frame["file"]),
                    line=int(frame["line"]),
                    function=frame["function"] or "",
                    source=source,
                )
            )
        elif _is_cut_marker(row.text):
            at += 1
        else:
            head = exception_head(row, lenient=row.shape == rows[at - 1].shape)
            if head is None and frames and _wrap_remnant(rows, at):
                at += 1
                continue
            if head is None:
                return None, at
            draft, after = read_message(rows, at, head)
            draft.frames = tuple(frames)
            draft.has_traceback = True
            draft.span = (header.span(start, start)[0], draft.span[1])
            return draft, after
    if frames:
        return _cut_in_raise(rows, at, frames, header.span(start, start)[0]), len(rows)
    return None, at


def _blank_from(rows: Sequence[Row], at: int) -> bool:
    """Whether the rows from ``at`` to the end of the stream are all blank."""
    return all(not rows[number].text for number in range(at, len(rows)))


def _cut_in_raise(rows: Sequence[Row], at: int, frames: list[Frame], begin: int) -> Draft | None:
    """A traceback the paste ends in, after its last frame's source line: when that line is a
    raise (`raise AssertionError("Torch not compiled with C`), it names the exception's
    class and its message's start, the literal up to its closing quote or to where the paste
    cut it. None when the source is no raise of an exception's class."""
    source = next((rows[n] for n in range(at - 1, -1, -1) if rows[n].text), None)
    if source is None or source.text.strip() != frames[-1].source:
        return None
    found = _RAISE_SOURCE.match(source.text, source.indent)
    if found is None or not looks_like_exception(found["name"]):
        return None
    if found["message"] is None:
        end = found.end("name")
        span = source.span(end, end)
        draft = Draft(found["name"], "", (begin, span[1]), span, ())
    else:
        draft = unwrapped(
            found["name"],
            found["message"],
            source,
            found.start("name"),
            [source.span(found.start("message"), found.end("message"))],
        )
        draft.span = (begin, draft.span[1])
    draft.frames = tuple(frames)
    draft.has_traceback = True
    return draft


def _read_source(rows: Sequence[Row], at: int, frame: Row) -> tuple[str, int]:
    """The source line shown under a frame, skipping 3.11+ caret lines (``~~~^^^``).

    The source is indented deeper than its frame; when a log lost the indentation, a line at
    the frame's own depth still counts as source if it cannot be the exception line.
    """
    source = ""
    while at < len(rows):
        row = rows[at]
        if row.boundary or not row.text or frame_match(row) or _is_cut_marker(row.text):
            break
        if not row.text.strip("^~ "):
            at += 1
            continue
        if row.indent > frame.indent:
            source = source or row.text.strip()
        elif row.indent == frame.indent and not source and _source_at_frame_depth(rows, at):
            source = row.text.strip()
        else:
            break
        at += 1
    return source, at


def _source_at_frame_depth(rows: Sequence[Row], at: int) -> bool:
    """Whether an unindented line after a frame is its source rather than the exception."""
    if exception_head(rows[at], lenient=True) is None:
        return True
    return at + 1 < len(rows) and frame_match(rows[at + 1]) is not None


def _wrapped_frame(rows: Sequence[Row], at: int) -> tuple[re.Match[str] | None, int]:
    """The frame at ``rows[at]`` and how many rows it takes: one, or up to
    ``MAX_WRAPPED_ROWS`` when a terminal wrapped a long frame line at its width.

    A wrap may leave a first row that reads as a frame of its own (``line 4`` of ``line 46``,
    ``in __in``): the next row continues it when it starts at the first column, as source
    lines never do, and the joined row ends in a function name."""
    row = rows[at]
    alone = frame_match(row)
    if not row.text.startswith('File "', row.indent):
        return alone, 1
    text = row.line.text[row.col + row.indent :]  # unstripped: a wrap may end in a space
    for used in range(2, min(MAX_WRAPPED_ROWS, len(rows) - at) + 1):
        rest = rows[at + used - 1]
        if alone and (rest.indent or not rest.text):  # a source line: the frame was whole
            break
        text += rest.line.text[rest.col :]
        found = FRAME.fullmatch(text)
        if found and (not alone or _FUNCTION.fullmatch(found["function"] or "")):
            return found, used
        if alone:  # a whole frame is only ever continued by one row
            break
    return alone, 1


def _wrap_remnant(rows: Sequence[Row], at: int) -> bool:
    """Whether ``rows[at]``, which fits nowhere in a traceback, is the rest of a wrapped source
    line: a frame or a line that is clearly an exception's comes right after it."""
    if at + 1 >= len(rows):
        return False
    after = rows[at + 1]
    return frame_match(after) is not None or exception_head(after, lenient=False) is not None


def _is_cut_marker(text: str) -> bool:
    """Lines that stand for frames left out: "[Previous line repeated N more times]", "..."."""
    stripped = text.strip()
    return (
        stripped == "..."
        or stripped.startswith("... ")
        or stripped.startswith("[Previous line repeated ")
    )
