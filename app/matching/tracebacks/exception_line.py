"""The exception line, ``Class: message``, with its message over the lines that carry it on
and unwrapped from what other tools put around it. Every traceback dialect ends in one; alone
on its line it is a dialect of its own (`read`)."""

import re
from collections.abc import Sequence

from app.matching.logtext import CleanLine, continues_at_margin
from app.matching.tracebacks.model import Draft, Frame
from app.matching.tracebacks.names import Head, exception_head
from app.matching.tracebacks.rows import CHAIN_SEPARATORS, HEADER, Row, frame_match
from app.matching.tracebacks.wrappers import after_wrappers, error_body

MAX_MESSAGE_LINES = 200
"""Most lines one message may span; beyond that the rest is log, not message."""
MIN_WRAP_WIDTH = 80
"""The narrowest terminal that wraps a log line: a shorter line ended where its writer did."""

# Lines that open a new log record rather than carry on a message: multiprocessing's and
# threading's headers above a child's traceback, asyncio's, the interpreter's.
_LOG_HEADER = re.compile(
    r"Process [\w.\-]{1,128}:|Exception in thread .{1,256}:|Exception ignored in: .{0,4096}"
    r"|(?:Task|Future) exception was never retrieved"
)
_MIN_HEADER_START = len("Traceback (")
_NAME_OR_HEAD = re.compile(r"[\w.]+(?::|\s*$)")  # `kv_cache_configs`, `ValueError: ...`
# pydantic: "1 validation error for ModelConfig" then "  Value error, <message>
# [type=value_error, input_value=..., input_type=...]": the message a validator raised.
_VALIDATION_SUMMARY = re.compile(r"[0-9]{1,6} validation errors? for .{1,512}")
VALIDATOR_MESSAGE = {"Value error, ": "ValueError", "Assertion failed, ": "AssertionError"}
VALIDATION_TAIL = re.compile(r" \[type=[\w.]{1,128}, input_value=")


def read(rows: Sequence[Row], at: int, lenient: bool) -> tuple[Draft | None, int] | None:
    """The exception whose line, with no traceback above it, is ``rows[at]``."""
    head = exception_head(rows[at], lenient=lenient)
    if head is None:
        return None
    return read_message(rows, at, head)


def read_message(
    rows: Sequence[Row], at: int, head: Head, indented_ends: bool = False
) -> tuple[Draft, int]:
    """The exception at ``rows[at]`` with its message, which may run over several lines.

    Further lines join the message until a blank line, a new traceback, a chain separator, a
    frame, another exception line, or a line from another log record (a different prefix);
    with ``indented_ends``, a line indented past the first too (the source line the warnings
    module prints after a warning's message).
    What other tools wrap around the message is taken off: a prefix such as
    xinference's ``[address=..., pid=...]``, an HTTP error body around it (the body's message
    is the message), and pydantic's summary of the errors its validators raised (the first
    one's message and class are the exception's).
    """
    row = rows[at]
    name_end = row.span(head.name_start, head.name_end)[1]
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    first = at
    at += 1
    if head.message_start is not None:
        start = after_wrappers(row.text, head.message_start)
        body = error_body(row.text, start, marked=False)
        if body is not None:
            message, begin, end, _ = body
            return unwrapped(head.name, message, row, begin, [row.span(begin, end)]), at
        parts.append(row.text[start:])
        spans.append(row.span(start, len(row.text)))
        while at < len(rows) and len(parts) < MAX_MESSAGE_LINES:
            if _wrapped(rows[at - 1], rows[at]):
                parts[-1] += rows[at].text
            elif _continues(row, rows[at]) and not (indented_ends and rows[at].indent > row.indent):
                parts.append(rows[at].text)
            else:
                break
            spans.append(rows[at].span(0, len(rows[at].text)))
            at += 1
    if head.name.endswith("ValidationError") and len(parts) > 1:
        validated = _validator_message(rows[first:at], head.message_start or 0)
        if validated is not None:
            name, message, found = validated
            return unwrapped(name, message, row, head.name_start, found), at
    draft = Draft(
        qualified_class=head.name,
        message="\n".join(parts),
        span=(row.span(head.name_start, head.name_start)[0], spans[-1][1] if spans else name_end),
        message_span=(spans[0][0], spans[-1][1]) if spans else (name_end, name_end),
        message_line_spans=tuple(spans),
    )
    return draft, at


def with_frames(
    rows: Sequence[Row], at: int, head: Head, header: Row, frames: list[Frame]
) -> tuple[Draft, int]:
    """The exception whose line is ``rows[at]``, with the frames read above it, its span
    starting at the traceback's header."""
    draft, after = read_message(rows, at, head)
    draft.frames = tuple(frames)
    draft.has_traceback = True
    draft.span = (header.span(header.indent, header.indent)[0], draft.span[1])
    return draft, after


def unwrapped(
    name: str, message: str, row: Row, begin: int, spans: Sequence[tuple[int, int]]
) -> Draft:
    """An exception whose message was unwrapped: it spans from ``row[begin]`` (its class, or
    the body it was read from) to the end of its message."""
    first = row.span(begin, begin)[0]
    return Draft(
        qualified_class=name,
        message=message,
        span=(min(first, spans[0][0]), spans[-1][1]),
        message_span=(spans[0][0], spans[-1][1]),
        message_line_spans=tuple(spans),
    )


def _validator_message(
    lines: Sequence[Row], begin: int
) -> tuple[str, str, list[tuple[int, int]]] | None:
    """(class, message, spans) of the first error a pydantic ``ValidationError`` lists (its
    message's lines, the first from ``begin``): the lines from ``Value error, `` (a
    validator's ValueError) or ``Assertion failed, `` up to its `` [type=...]`` details."""
    if not _VALIDATION_SUMMARY.fullmatch(lines[0].text, begin):
        return None
    for first, row in enumerate(lines[1:], start=1):
        text = row.text.lstrip()
        opener = next((key for key in VALIDATOR_MESSAGE if text.startswith(key)), None)
        if opener is None:
            continue
        parts: list[str] = []
        spans: list[tuple[int, int]] = []
        start = len(row.text) - len(text) + len(opener)
        for line in lines[first:]:
            tail = VALIDATION_TAIL.search(line.text, start)
            stop = tail.start() if tail else len(line.text)
            parts.append(line.text[start:stop])
            spans.append(line.span(start, stop))
            if tail:
                break
            start = 0
        return VALIDATOR_MESSAGE[opener], "\n".join(parts), spans
    return None


def _continues(first: Row, row: Row) -> bool:
    """Whether ``row`` carries on the message begun on ``first``."""
    return (
        bool(row.text)
        and not row.boundary
        and row.shape == first.shape
        and row.margin == first.margin
        and row.nested == first.nested
        and not row.text.endswith(HEADER)
        and not _opens_record(row.text)
        and row.text.strip() not in CHAIN_SEPARATORS
        and frame_match(row) is None
        and exception_head(row, lenient=False) is None
    )


def wrap_remnant(line: CleanLine, after: CleanLine) -> bool:
    """Whether ``after`` may be the rest of ``line``, a log line a terminal wrapped at its
    width: the line has a log prefix and is as long as a terminal is wide, and the rest has
    no prefix and begins at the margin, cut mid-word (`... (4.26 GiB KV cach` then `e is
    needed, ...`), and is no name alone, nor a name and a colon, nor a traceback's header.
    It is read in the line's stream."""
    return (
        continues_at_margin(line, after)
        and len(line.prefix) + line.end - line.start >= MIN_WRAP_WIDTH
        and _NAME_OR_HEAD.match(after.text) is None
        and not after.text.startswith(HEADER[:_MIN_HEADER_START])
    )


def _wrapped(line: Row, row: Row) -> bool:
    """Whether ``row`` is the rest of the message line ``line`` that a terminal wrapped."""
    return (
        wrap_remnant(line.line, row.line)
        and frame_match(row) is None
        and exception_head(row, lenient=False) is None
        and not _opens_record(row.text)
    )


def _opens_record(text: str) -> bool:
    """Whether a line starts a new log record: a known header, or a traceback header that the
    end of the paste cut ("Traceback (most rec")."""
    stripped = text.strip()
    if len(stripped) >= _MIN_HEADER_START and HEADER.startswith(stripped):
        return True
    return _LOG_HEADER.fullmatch(stripped) is not None
