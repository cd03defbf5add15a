"""Clean lines -> the exceptions in a paste: frames, messages and how they chain.

A paste may hold any number of tracebacks, chained ones ("The above exception was the direct
cause ...", "During handling of the above exception ..."), tracebacks whose middle was cut,
frames without their ``Traceback (most recent call last):`` header (people paste from the middle
of a log), or only a bare ``SomeError: message`` line. Each exception found becomes a
ParsedException whose spans point into the original paste, so a page can highlight exactly what
matched.

Lines are parsed per stream (the process a log line came from, see logtext), so tracebacks of
two processes whose lines interleave are both recovered intact. Every line is looked at a
constant number of times and every regex is anchored and bounded, so parsing is linear time;
nothing here raises on any input, except DeadlineExceeded once the match deadline passed.
"""

import builtins
import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.matching import deadline
from app.matching.logtext import CleanLine, clean_lines

MAX_MESSAGE_LINES = 200
"""Most lines one message may span; beyond that the rest is log, not message."""

MAX_WRAPPED_ROWS = 3
"""Rows one frame line may be wrapped into by a terminal and still be read as a frame."""

_HEADER = "Traceback (most recent call last):"
_GROUP_HEADER = "Exception Group "
_CHAIN_SEPARATORS = {
    "The above exception was the direct cause of the following exception:": "cause",
    "During handling of the above exception, another exception occurred:": "context",
}
_FRAME = re.compile(
    r'File "(?P<file>.{1,4096}?)", line (?P<line>[0-9]{1,9})(?:,? in (?P<function>.{1,4096}))?'
)
_EXCEPTION_LINE = re.compile(
    r"(?P<name>[^\W\d]\w{0,127}(?:\.[^\W\d]\w{0,127}){0,15}(?:\([\w.]{1,256}\))?)"
    r"(?P<colon>:(?: (?P<message>.*))?)?"
)
_MODULE = re.compile(r"[a-z_][a-z0-9_]{0,127}")
_FUNCTION = re.compile(r"[\w.<>]{1,1024}")  # a frame's function: `f`, `<module>`, `A.f`
# Lines that open a new log record rather than carry on a message: multiprocessing's and
# threading's headers above a child's traceback, asyncio's, the interpreter's.
_LOG_HEADER = re.compile(
    r"Process [\w.\-]{1,128}:|Exception in thread .{1,256}:|Exception ignored in: .{0,4096}"
    r"|(?:Task|Future) exception was never retrieved"
)
_MIN_HEADER_START = len("Traceback (")
_PYTEST_MARGIN = re.compile(r"E {3,16}(?=\S)")
_DIGITS_AND_SPACES = str.maketrans("", "", "0123456789 \t")

# A bare line is only taken for an exception when its class name says so.
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt")
_TOO_GENERIC = frozenset({"Error", "Warning", "Exit", "Interrupt"})
_BUILTIN_EXCEPTIONS = (
    frozenset(
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    )
    - _TOO_GENERIC
)


@dataclass(frozen=True, slots=True)
class Frame:
    """One ``File "...", line N, in fn`` entry; ``function`` and ``source`` are "" when absent."""

    file: str
    line: int
    function: str
    source: str


@dataclass(frozen=True, slots=True)
class ParsedException:
    """One exception found in a paste; spans are (start, end) offsets into the original text.

    ``span`` covers the whole traceback (or the bare line), ``message_span`` the message from
    its first to its last character, and ``message_line_spans`` each message line alone, which
    is what to highlight when log prefixes sit between the lines. ``cause_index`` names the
    earlier exception that this one was raised from (``cause_kind`` "cause") or while handling
    (``cause_kind`` "context").
    """

    index: int
    error_class: str
    qualified_class: str
    message: str
    frames: tuple[Frame, ...]
    cause_index: int | None
    cause_kind: str | None
    span: tuple[int, int]
    message_span: tuple[int, int]
    message_line_spans: tuple[tuple[int, int], ...]
    has_traceback: bool


def parse_exceptions(text: str, lines: Sequence[CleanLine] | None = None) -> list[ParsedException]:
    """Every exception in ``text``, in order of appearance, indexed 0..n-1.

    ``lines`` are ``clean_lines(text)`` when the caller has them already (matching scans
    them too), so a large paste is cleaned once.
    """
    streams: dict[str, list[CleanLine]] = {}
    for line in clean_lines(text) if lines is None else lines:
        streams.setdefault(line.stream, []).append(line)
    cut_at = len(text) if text[-1:] not in ("\n", "\r", "") else -1
    drafts = [draft for lines in streams.values() for draft in _parse_stream(_rows(lines, cut_at))]
    drafts.sort(key=lambda draft: draft.span)
    for index, draft in enumerate(drafts):
        draft.index = index
    return [draft.freeze() for draft in drafts]


@dataclass(frozen=True, slots=True)
class _Row:
    """A clean line as the parser sees it, with any exception-group or pytest margin removed.

    ``margin`` is "", "|" (inside an exception group) or "E" (pytest's failure lines);
    ``nested`` marks a sub-exception of a group; ``boundary`` a group's separator line;
    ``shape`` is the log prefix without digits and spaces, which stays the same along one log
    record while timestamps tick and padding varies; ``cut`` marks the paste's last line when
    the paste ends in the middle of it.
    """

    line: CleanLine
    col: int
    text: str
    indent: int
    margin: str
    nested: bool
    boundary: bool
    shape: str
    cut: bool

    def span(self, begin: int, end: int) -> tuple[int, int]:
        """Original offsets of ``text[begin:end]``."""
        return self.line.span(self.col + begin, self.col + end)


@dataclass(frozen=True, slots=True)
class _Head:
    """Where the class name and the message sit in an exception line (row coordinates)."""

    name: str
    name_start: int
    name_end: int
    message_start: int | None


@dataclass(slots=True)
class _Draft:
    """An exception being assembled; its index is only known once all streams are merged."""

    qualified_class: str
    message: str
    span: tuple[int, int]
    message_span: tuple[int, int]
    message_line_spans: tuple[tuple[int, int], ...]
    frames: tuple[Frame, ...] = ()
    has_traceback: bool = False
    cause: "_Draft | None" = None
    cause_kind: str | None = None
    index: int = -1

    def freeze(self) -> ParsedException:
        """The public, immutable form, once indexes are assigned."""
        name = self.qualified_class
        bare_name, paren, argument = name.partition("(")
        return ParsedException(
            index=self.index,
            error_class=bare_name.rpartition(".")[2] + paren + argument,
            qualified_class=name,
            message=self.message,
            frames=self.frames,
            cause_index=None if self.cause is None else self.cause.index,
            cause_kind=self.cause_kind,
            span=self.span,
            message_span=self.message_span,
            message_line_spans=self.message_line_spans,
            has_traceback=self.has_traceback,
        )


def _rows(lines: Sequence[CleanLine], cut_at: int) -> list[_Row]:
    """Rows of one stream, with exception-group margins ("  | ", "  +-+---") removed;
    ``cut_at`` is where the paste ends when it ends in the middle of a line, else -1."""
    rows: list[_Row] = []
    group_column = -1
    for number, line in enumerate(lines):
        if number % deadline.CHECK_EVERY == 0:
            deadline.check()
        text = line.text.rstrip()
        stripped = text.lstrip()
        column = len(text) - len(stripped)
        if group_column < 0 and stripped.startswith("+ " + _GROUP_HEADER):
            group_column = column
        col, margin, boundary = 0, "", False
        if group_column >= 0 and stripped[:1] in ("+", "|"):
            margin = "|"
            boundary = stripped.startswith("+-")
            col = column + (2 if stripped[1:2] == " " else 1)
        else:
            group_column = -1
            pytest = _PYTEST_MARGIN.match(text)
            if pytest:
                col, margin = pytest.end(), "E"
        body = text[col:]
        rows.append(
            _Row(
                line=line,
                col=col,
                text=body,
                indent=len(body) - len(body.lstrip()),
                margin=margin,
                nested=margin == "|" and column > group_column,
                boundary=boundary,
                shape=line.prefix.translate(_DIGITS_AND_SPACES),
                cut=line.end == cut_at and bool(line.text),
            )
        )
    return rows


def _parse_stream(rows: Sequence[_Row]) -> list[_Draft]:
    """All exceptions in one stream, with chained ones linked to their causes."""
    drafts: list[_Draft] = []
    pending: tuple[_Draft | None, str] | None = None
    last_top: _Draft | None = None
    at = 0
    steps = 0
    while at < len(rows):
        steps += 1
        if steps % deadline.CHECK_EVERY == 0:
            deadline.check()
        row = rows[at]
        if row.boundary or not row.text:
            at += 1
            continue
        kind = _CHAIN_SEPARATORS.get(row.text.strip())
        if kind:
            pending = ((drafts[-1] if drafts else None) if row.nested else last_top, kind)
            at += 1
            continue
        if row.text.endswith(_HEADER) or _frame_match(row):
            draft, at = _read_traceback(rows, at)
        else:
            head = _exception_head(row, lenient=row.nested or pending is not None)
            draft, at = (None, at + 1) if head is None else _read_message(rows, at, head)
        if draft is not None:
            if pending is not None and pending[0] is not None:
                draft.cause, draft.cause_kind = pending
            drafts.append(draft)
            if not row.nested:
                last_top = draft
        pending = None
    return drafts


def _read_traceback(rows: Sequence[_Row], at: int) -> tuple[_Draft | None, int]:
    """The traceback whose header or first frame is ``rows[at]``, and where parsing goes on.

    Frames count without a header: the exception line after them closes the
    traceback. When no exception line ends it (the paste was cut, or noise follows), nothing
    is returned and parsing goes on at the row that did not fit, so rows already read are
    not read again.
    """
    header = rows[at]
    if header.text.endswith(_HEADER):
        start = len(header.text) - len(_HEADER)
        if header.text[:start].endswith(_GROUP_HEADER):
            start -= len(_GROUP_HEADER)
        if not header.text[:start].strip():
            start = header.indent
        at += 1
    else:
        start = header.indent
    frames: list[Frame] = []
    while at < len(rows):
        row = rows[at]
        if row.boundary or not row.text:
            return None, at
        frame, used = _wrapped_frame(rows, at)
        if frame:
            source, at = _read_source(rows, at + used, row)
            frames.append(
                Frame(
                    file=frame["file"],
                    line=int(frame["line"]),
                    function=frame["function"] or "",
                    source=source,
                )
            )
        elif _is_cut_marker(row.text):
            at += 1
        else:
            head = _exception_head(row, lenient=row.shape == rows[at - 1].shape)
            if head is None and frames and _wrap_remnant(rows, at):
                at += 1
                continue
            if head is None:
                return None, at
            draft, after = _read_message(rows, at, head)
            draft.frames = tuple(frames)
            draft.has_traceback = True
            draft.span = (header.span(start, start)[0], draft.span[1])
            return draft, after
    return None, at


def _read_source(rows: Sequence[_Row], at: int, frame: _Row) -> tuple[str, int]:
    """The source line shown under a frame, skipping 3.11+ caret lines (``~~~^^^``).

    The source is indented deeper than its frame; when a log lost the indentation, a line at
    the frame's own depth still counts as source if it cannot be the exception line.
    """
    source = ""
    while at < len(rows):
        row = rows[at]
        if row.boundary or not row.text or _frame_match(row) or _is_cut_marker(row.text):
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


def _source_at_frame_depth(rows: Sequence[_Row], at: int) -> bool:
    """Whether an unindented line after a frame is its source rather than the exception."""
    if _exception_head(rows[at], lenient=True) is None:
        return True
    return at + 1 < len(rows) and _frame_match(rows[at + 1]) is not None


def _read_message(rows: Sequence[_Row], at: int, head: _Head) -> tuple[_Draft, int]:
    """The exception at ``rows[at]`` with its message, which may run over several lines.

    Further lines join the message until a blank line, a new traceback, a chain separator, a
    frame, another exception line, or a line from another log record (a different prefix).
    """
    row = rows[at]
    name_end = row.span(head.name_start, head.name_end)[1]
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at += 1
    if head.message_start is not None:
        parts.append(row.text[head.message_start :])
        spans.append(row.span(head.message_start, len(row.text)))
        while at < len(rows) and len(parts) < MAX_MESSAGE_LINES and _continues(row, rows[at]):
            parts.append(rows[at].text)
            spans.append(rows[at].span(0, len(rows[at].text)))
            at += 1
    draft = _Draft(
        qualified_class=head.name,
        message="\n".join(parts),
        span=(row.span(head.name_start, head.name_start)[0], spans[-1][1] if spans else name_end),
        message_span=(spans[0][0], spans[-1][1]) if spans else (name_end, name_end),
        message_line_spans=tuple(spans),
    )
    return draft, at


def _continues(first: _Row, row: _Row) -> bool:
    """Whether ``row`` carries on the message begun on ``first``."""
    return (
        bool(row.text)
        and not row.boundary
        and row.shape == first.shape
        and row.margin == first.margin
        and row.nested == first.nested
        and not row.text.endswith(_HEADER)
        and not _opens_record(row.text)
        and row.text.strip() not in _CHAIN_SEPARATORS
        and _frame_match(row) is None
        and _exception_head(row, lenient=False) is None
    )


def _opens_record(text: str) -> bool:
    """Whether a line starts a new log record: a known header, or a traceback header that the
    end of the paste cut ("Traceback (most rec")."""
    stripped = text.strip()
    if len(stripped) >= _MIN_HEADER_START and _HEADER.startswith(stripped):
        return True
    return _LOG_HEADER.fullmatch(stripped) is not None


def _exception_head(row: _Row, lenient: bool) -> _Head | None:
    """Parse ``Class: message`` or a lone ``Class``.

    Right after a traceback's frames any dotted name is an exception class; elsewhere
    (``lenient`` false) the name must look like one, or ordinary log lines such as
    ``Note: ...`` would be taken for exceptions. A lone name on a line the end of the paste
    cut (``eng`` of ``engine``) must look like one too.
    """
    indent = row.indent
    match = _EXCEPTION_LINE.fullmatch(row.text, indent)
    if match is None:
        return None
    lenient = lenient and not (row.cut and match["colon"] is None)
    if not (lenient or _looks_like_exception(match["name"])):
        return None
    if match["colon"] is None:
        message_start = None
    elif match["message"] is None:
        message_start = match.end("colon")
    else:
        message_start = match.start("message")
    return _Head(match["name"], indent, match.end("name"), message_start)


def _looks_like_exception(name: str) -> bool:
    """Whether a class name found outside a traceback is an exception's.

    Builtins, names ending in Error/Exception/Warning/Exit/Interrupt, and module-qualified
    CapWords names (``torch.OutOfMemoryError``, ``vllm.v1.engine.exceptions.EngineDeadError``).
    """
    modules, _, short = name.partition("(")[0].rpartition(".")
    if short in _BUILTIN_EXCEPTIONS:
        return True
    if short[:1].isupper() and short.endswith(_EXCEPTION_SUFFIXES) and short not in _TOO_GENERIC:
        return True
    return (
        bool(modules)
        and short[:1].isupper()
        and all(_MODULE.fullmatch(part) for part in modules.split("."))
    )


def _wrapped_frame(rows: Sequence[_Row], at: int) -> tuple[re.Match[str] | None, int]:
    """The frame at ``rows[at]`` and how many rows it takes: one, or up to
    ``MAX_WRAPPED_ROWS`` when a terminal wrapped a long frame line at its width.

    A wrap may leave a first row that reads as a frame of its own (``line 4`` of ``line 46``,
    ``in __in``): the next row continues it when it starts at the first column, as source
    lines never do, and the joined row ends in a function name."""
    row = rows[at]
    alone = _frame_match(row)
    if not row.text.startswith('File "', row.indent):
        return alone, 1
    text = row.line.text[row.col + row.indent :]  # unstripped: a wrap may end in a space
    for used in range(2, min(MAX_WRAPPED_ROWS, len(rows) - at) + 1):
        rest = rows[at + used - 1]
        if alone and (rest.indent or not rest.text):  # a source line: the frame was whole
            break
        text += rest.line.text[rest.col :]
        found = _FRAME.fullmatch(text)
        if found and (not alone or _FUNCTION.fullmatch(found["function"] or "")):
            return found, used
        if alone:  # a whole frame is only ever continued by one row
            break
    return alone, 1


def _wrap_remnant(rows: Sequence[_Row], at: int) -> bool:
    """Whether ``rows[at]``, which fits nowhere in a traceback, is the rest of a wrapped source
    line: a frame or a line that is clearly an exception's comes right after it."""
    if at + 1 >= len(rows):
        return False
    after = rows[at + 1]
    return _frame_match(after) is not None or _exception_head(after, lenient=False) is not None


def _frame_match(row: _Row) -> re.Match[str] | None:
    """The ``File "...", line N, in fn`` match of a row, if it is a frame line."""
    if not row.text.startswith('File "', row.indent):
        return None
    return _FRAME.fullmatch(row.text, row.indent)


def _is_cut_marker(text: str) -> bool:
    """Lines that stand for frames left out: "[Previous line repeated N more times]", "..."."""
    stripped = text.strip()
    return (
        stripped == "..."
        or stripped.startswith("... ")
        or stripped.startswith("[Previous line repeated ")
    )
