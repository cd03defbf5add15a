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

import ast
import builtins
import json
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from app.matching import deadline
from app.matching.logtext import ISSUE_TITLE_TAGS, CleanLine, clean_lines

MAX_MESSAGE_LINES = 200
"""Most lines one message may span; beyond that the rest is log, not message."""

MAX_WRAPPED_ROWS = 3
"""Rows one frame line may be wrapped into by a terminal and still be read as a frame."""

DENSE_OPENERS = 4
"""A stream where more than one line in this many may begin an exception has all its rows
made at once (see _parse_lines)."""

_HEADER = "Traceback (most recent call last):"
_GROUP_HEADER = "Exception Group "
_GROUP_OPENER = "+ " + _GROUP_HEADER
_CHAIN_SEPARATORS = {
    "The above exception was the direct cause of the following exception:": "cause",
    "During handling of the above exception, another exception occurred:": "context",
}
_FRAME = re.compile(
    r'File "(?P<file>.{1,4096}?)", line (?P<line>[0-9]{1,9})(?:,? in (?P<function>.{1,4096}))?'
)
# A frame's source line that raises: `raise AssertionError("Torch not compiled with C`,
# its class and the text of its message's literal (to the closing quote, or the paste's end).
_RAISE_SOURCE = re.compile(
    r"raise (?P<name>[^\W\d][\w.]{0,255})\((?:[rRuUfF]{0,2}[\"'](?P<message>[^\"'\\]{0,4096}))?"
)
# A paste whose selection began inside a frame line keeps its tail:
# `vllm/model_executor/models/chatglm.py", line 53, in __init__`.
_CUT_FRAME = re.compile(
    r'(?P<file>[^"\s][^"]{0,4095}?\.py)", line (?P<line>[0-9]{1,9}), '
    r"in (?P<function>[\w.<>]{1,1024})"
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
# IPython and Jupyter: "ValueError      Traceback (most recent call last)" heads
# frames like "File ~/x/llm.py:177, in LLM.__init__(self, model)" (the path may be a
# markdown link in VS Code: "File [~/x.py:177](vscode://...), in f(...)"), a cell's
# "Cell In[10], line 1", and before IPython 8 "/x/module.py in __call__(self)" whose line
# is the arrow's ("---> 550 ..."); numbered source lines and blank lines sit between them.
_IPYTHON_FRAME = re.compile(
    r"File (?:\[(?P<linked>[^\]]{1,4096}):(?P<linked_line>[0-9]{1,9})\]\([^)]{0,8192}\)"
    r"|(?P<file>\S.{0,4095}?):(?P<line>[0-9]{1,9}))(?:, in (?P<function>.{1,4096}))?"
    r"|(?P<cell>Cell In ?\[[0-9 ]{0,9}\]|Input In ?\[[0-9 ]{0,9}\]), line (?P<cell_line>[0-9]{1,9})"
    r"(?:, in (?P<cell_function>.{1,4096}))?"
    r"|(?P<old_file>\S{1,4096}) in (?P<old_function>[\w.<>]{1,1024})\(.{0,4096}\)"
)
_IPYTHON_HEADER = re.compile(
    r"[^\W\d][\w.]{0,255}(?:\([\w.]{1,256}\))? {1,256}Traceback \(most recent call last\)"
)
_IPYTHON_HEADER_END = _HEADER[:-1]  # IPython's header has no colon
_IPYTHON_SOURCE = re.compile(r"(?:-{1,16}> ?)?[0-9]{1,9}(?: .{0,8192})?")
_IPYTHON_ARROW = re.compile(r"-{1,16}> ?(?P<line>[0-9]{1,9})")
_IPYTHON_FOLDED = re.compile(r"[0-9]{1,9} frames?")  # Colab: "20 frames" folded away
# rich's traceback box: "╭──── Traceback (most recent call last) ────╮", frames
# "/x/config.py:120 in __init__", source rows and locals panels, then "╰────╯".
_RICH_HEADER = re.compile(r"╭─{1,512} Traceback \(most recent call last\) ─{1,512}╮")
_RICH_FRAME = re.compile(
    r"(?P<file>\S.{0,4095}?):(?P<line>[0-9]{1,9}) in (?P<function>[\w.<>]{1,1024})"
)
_RICH_BOTTOM = re.compile(r"╰─{1,1024}╯")
# What other tools put in front of the message they pass on: xinference's
# "[address=127.0.0.1:1234, pid=56] ", at the start or after its own words.
_WRAPPER = re.compile(r"\[address=[\w.:\-\[\]]{1,64}, pid=[0-9]{1,10}\] ?")
# An HTTP error body: vLLM's and SGLang's `{"object":"error","message":...}`,
# OpenAI's `{'error': {'message': ...}}`, as JSON, a Python repr (how the openai client
# prints it) or JSON inside a string (`{\"message\":\"...\"}`); its message is the error.
_BODY_MESSAGE = re.compile(r"""(?P<key>\\?["'])message(?P=key) ?: ?(?P<quote>\\?["'])""")
_BODY_TYPE = re.compile(r"""\\?["']type\\?["'] ?: ?\\?["'](?P<type>[A-Za-z_]\w{0,127})""")
_BODY_ERROR_MARK = re.compile(r"""\\?["'](?:object\\?["'] ?: ?\\?["']error|error\\?["'] ?: ?\{)""")
# What may come before a body that says nothing of being an error: nothing, a quote, or the
# openai client's "Error code: 400 - ".
_BODY_LEAD = re.compile(r"""["']?(?:Error code: [0-9]{3} - )?""")
MAX_BODY_MESSAGE = 8192
# pydantic: "1 validation error for ModelConfig" then "  Value error, <message>
# [type=value_error, input_value=..., input_type=...]": the message a validator raised.
_VALIDATION_SUMMARY = re.compile(r"[0-9]{1,6} validation errors? for .{1,512}")
# The levels at which a log line alone is an error's message (vLLM's `ERROR 11-27 08:40:23
# engine.py:366] Model architectures [...] are not supported`), not a line of log.
_ERROR_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b")
_VALIDATOR_MESSAGE = {"Value error, ": "ValueError", "Assertion failed, ": "AssertionError"}
_VALIDATION_TAIL = re.compile(r" \[type=[\w.]{1,128}, input_value=")
# What a line of prose or of a log says an exception was: quoted in a sentence
# ("... I got \"ValueError: ...\"", "actual error: RuntimeError: ..."), or its repr as a log
# prints it (`OutOfMemoryError('CUDA out of memory. ...')`).
# The opener is matched, not looked behind at, and the name looked ahead at: the engine then
# skips to the next opener in C, four times faster over the lines of a large log. Searched
# from a line's indent, nothing before it can be an opener: the results are the same.
# Chinese and Japanese prose puts no space before a word in Latin letters ("后报错ValueError:
# ..."): a CJK character opens a mention too.
# ASCII only: every CJK character is a word character, and a name running on over them would
# be read again from each one.
_ASCII_NAME = r"[A-Za-z_][A-Za-z0-9_.]{0,255}"
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
_MENTIONED = re.compile(
    rf"""(?:["'`“(]|: |[{_CJK}](?={_ASCII_NAME}: ))(?=(?P<name>[^\W\d][\w.]{{0,255}}): )"""
)
_CLOSING_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”"}
_REPR = re.compile(r"""(?P<name>[^\W\d][\w.]{0,255})\((?P<quote>["'])""")
# The warnings module's line: "/x/scheduler.py:1326: UserWarning: <message>".
_WARNING_LINE = re.compile(
    r"(?P<file>\S.{0,4095}?\.py):(?P<line>[0-9]{1,9}): (?=[^\W\d][\w.]{0,255}Warning: )"
)
MIN_MESSAGE_ALNUM = 4  # a line alone with fewer letters, or fewer words, is no message
MIN_MESSAGE_WORDS = 2
_PYTEST_MARGIN = re.compile(r"E {3,16}(?=\S)")
_DIGITS_AND_SPACES = str.maketrans("", "", "0123456789 \t")
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
_MAY_OPEN = re.compile(rf"{_MAY_OPEN_IN_ASCII}|[{_CJK}]{_ASCII_NAME}: ")
_MAY_OPEN_ASCII = re.compile(_MAY_OPEN_IN_ASCII)

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
    drafts = [draft for lines in streams.values() for draft in _parse_lines(lines, cut_at)]
    if not drafts:
        drafts = _message_alone([line for lines in streams.values() for line in lines])
    drafts.sort(key=lambda draft: draft.span)
    frozen = []
    for index, draft in enumerate(drafts):
        if index % deadline.CHECK_EVERY == 0:
            deadline.check()
        draft.index = index
        frozen.append(draft.freeze())
    return frozen


@dataclass(slots=True)
class _Row:
    """A clean line as the parser sees it, with any exception-group or pytest margin removed.

    ``margin`` is "", "|" (inside an exception group) or "E" (pytest's failure lines);
    ``nested`` marks a sub-exception of a group; ``boundary`` a group's separator line;
    ``cut`` marks the paste's last line when the paste ends in the middle of it.

    Not frozen, though never changed: one is made per line, and a frozen dataclass takes
    twice as long to make (a 1 MB log has thirteen thousand lines).
    """

    line: CleanLine
    col: int
    text: str
    indent: int
    margin: str
    nested: bool
    boundary: bool
    cut: bool

    @property
    def shape(self) -> str:
        """The log prefix without digits and spaces, which stays the same along one log
        record while timestamps tick and padding varies; asked of the few rows after an
        exception line only."""
        return self.line.prefix.translate(_DIGITS_AND_SPACES)

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


def _parse_lines(lines: Sequence[CleanLine], cut_at: int) -> list[_Draft]:
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
    if _GROUP_OPENER in joined:
        return _parse_stream(_every_row(lines, cut_at), None)
    openers = _openers(joined)
    if len(openers) * DENSE_OPENERS > len(lines):
        return _parse_stream(_every_row(lines, cut_at), openers)
    return _parse_stream(_Rows(lines, cut_at), openers)


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


class _Rows(Sequence[_Row]):
    """The rows of a stream without an exception group, each made when first asked for:
    then a row depends on its own line alone."""

    def __init__(self, lines: Sequence[CleanLine], cut_at: int) -> None:
        self._lines = lines
        self._cut_at = cut_at
        self._made: dict[int, _Row] = {}

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, number: int) -> _Row: ...

    @overload
    def __getitem__(self, number: slice) -> list[_Row]: ...

    def __getitem__(self, number: int | slice) -> _Row | list[_Row]:
        if isinstance(number, slice):
            return [self[each] for each in range(*number.indices(len(self)))]
        row = self._made.get(number)
        if row is None:
            row = self._made[number] = _row(self._lines[number], self._cut_at, -1)
        return row


def _every_row(lines: Sequence[CleanLine], cut_at: int) -> list[_Row]:
    """Every row of a stream, with the margins of an exception group ("  | ", "  +-+---")
    removed from the group's opener on while rows keep them."""
    rows: list[_Row] = []
    group_column = -1
    for number, line in enumerate(lines):
        if number % deadline.CHECK_EVERY == 0:
            deadline.check()
        stripped = line.text.rstrip().lstrip()
        if group_column < 0 and stripped.startswith(_GROUP_OPENER):
            group_column = len(line.text.rstrip()) - len(stripped)
        if stripped[:1] not in ("+", "|"):
            group_column = -1
        rows.append(_row(line, cut_at, group_column))
    return rows


def _row(line: CleanLine, cut_at: int, group_column: int) -> _Row:
    """The row of ``line``, inside an exception group when ``group_column`` is not -1 (the
    column of the group's opener), else with any pytest margin removed."""
    text = line.text.rstrip()
    stripped = text.lstrip()
    column = len(text) - len(stripped)
    col, margin, boundary = 0, "", False
    if group_column >= 0:
        margin = "|"
        boundary = stripped.startswith("+-")
        col = column + (2 if stripped[1:2] == " " else 1)
    else:
        pytest = _PYTEST_MARGIN.match(text) if text.startswith("E ") else None
        if pytest:
            col, margin = pytest.end(), "E"
    body = text[col:]
    return _Row(
        line=line,
        col=col,
        text=body,
        indent=column if col == 0 else len(body) - len(body.lstrip()),
        margin=margin,
        nested=margin == "|" and column > group_column,
        boundary=boundary,
        cut=line.end == cut_at and bool(line.text),
    )


def _parse_stream(rows: Sequence[_Row], openers: Sequence[int] | None) -> list[_Draft]:
    """All exceptions in one stream, with chained ones linked to their causes.

    ``openers`` are the rows that may begin something (None: any row may); the others are
    passed over unless a chain separator above waits for the exception it announces.
    """
    drafts: list[_Draft] = []
    pending: tuple[_Draft | None, str] | None = None
    last_top: _Draft | None = None
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
        kind = _CHAIN_SEPARATORS.get(row.text.strip()) if row.text.endswith(":") else None
        if kind:
            pending = ((drafts[-1] if drafts else None) if row.nested else last_top, kind)
            at += 1
            continue
        if row.text.endswith(_HEADER) or _frame_match(row):
            draft, at = _read_traceback(rows, at)
        elif row.text.endswith(_IPYTHON_HEADER_END) and _IPYTHON_HEADER.fullmatch(
            row.text, row.indent
        ):
            draft, at = _read_ipython(rows, at)
        elif row.text.endswith("╮") and _RICH_HEADER.fullmatch(row.text, row.indent):
            draft, at = _read_rich(rows, at)
        else:
            head = _exception_head(row, lenient=row.nested or pending is not None)
            if head is not None:
                draft, at = _read_message(rows, at, head)
            elif ".py:" in row.text and (warned := _WARNING_LINE.match(row.text, row.indent)):
                draft, at = _read_warning(rows, at, warned)
            else:
                draft, at = _mentioned(row) or _body_alone(row), at + 1
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
        if frames and not row.text and _blank_from(rows, at):
            break
        if row.boundary or not row.text:
            return None, at
        frame, used = _wrapped_frame(rows, at)
        if frame:
            source, at = _read_source(rows, at + used, row)
            frames.append(
                Frame(
                    file=_frame_file(frame["file"]),
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
    if frames:
        return _cut_in_raise(rows, at, frames, header.span(start, start)[0]), len(rows)
    return None, at


def _blank_from(rows: Sequence[_Row], at: int) -> bool:
    """Whether the rows from ``at`` to the end of the stream are all blank."""
    return all(not rows[number].text for number in range(at, len(rows)))


def _cut_in_raise(rows: Sequence[_Row], at: int, frames: list[Frame], begin: int) -> _Draft | None:
    """A traceback the paste ends in, after its last frame's source line: when that line is a
    raise (`raise AssertionError("Torch not compiled with C`), it names the exception's
    class and its message's start, the literal up to its closing quote or to where the paste
    cut it. None when the source is no raise of an exception's class."""
    source = next((rows[n] for n in range(at - 1, -1, -1) if rows[n].text), None)
    if source is None or source.text.strip() != frames[-1].source:
        return None
    found = _RAISE_SOURCE.match(source.text, source.indent)
    if found is None or not _looks_like_exception(found["name"]):
        return None
    if found["message"] is None:
        end = found.end("name")
        span = source.span(end, end)
        draft = _Draft(found["name"], "", (begin, span[1]), span, ())
    else:
        draft = _draft(
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


def _read_ipython(rows: Sequence[_Row], at: int) -> tuple[_Draft | None, int]:
    """An IPython or Jupyter traceback whose header is ``rows[at]``: its frames, with the
    numbered source lines, folded-frame notes and blank lines between them skipped, then
    the exception line. Rows that fit none of these end it with nothing found."""
    header = rows[at]
    frames: list[Frame] = []
    at += 1
    while at < len(rows):
        row = rows[at]
        text = row.text.strip()
        if not text or not text.strip("-") or _IPYTHON_FOLDED.fullmatch(text):
            at += 1
            continue
        if _IPYTHON_SOURCE.fullmatch(text):
            arrow = _IPYTHON_ARROW.match(text)
            if arrow and frames:
                line = frames[-1].line or int(arrow["line"])
                source = text[arrow.end() :].strip()
                frames[-1] = Frame(frames[-1].file, line, frames[-1].function, source)
            at += 1
            continue
        found = _IPYTHON_FRAME.fullmatch(text)
        if found is not None:
            frames.append(_ipython_frame(found))
            at += 1
            continue
        head = _exception_head(row, lenient=True)
        if head is None:
            return None, at
        return _with_frames(rows, at, head, header, frames)
    return None, at


def _with_frames(
    rows: Sequence[_Row], at: int, head: _Head, header: _Row, frames: list[Frame]
) -> tuple[_Draft, int]:
    """The exception whose line is ``rows[at]``, with the frames read above it, its span
    starting at the traceback's header."""
    draft, after = _read_message(rows, at, head)
    draft.frames = tuple(frames)
    draft.has_traceback = True
    draft.span = (header.span(header.indent, header.indent)[0], draft.span[1])
    return draft, after


def _ipython_frame(found: re.Match[str]) -> Frame:
    """A frame of an IPython traceback; the function without its arguments, and the line
    still 0 for the old form, whose line is the arrow's that follows."""
    if found["cell"]:
        file, line, function = found["cell"], found["cell_line"], found["cell_function"]
    elif found["old_file"]:
        file, line, function = found["old_file"], "0", found["old_function"]
    elif found["linked"]:
        file, line, function = found["linked"], found["linked_line"], found["function"]
    else:
        file, line, function = found["file"], found["line"], found["function"]
    return Frame(_frame_file(file), int(line), (function or "").partition("(")[0].strip(), "")


def _read_rich(rows: Sequence[_Row], at: int) -> tuple[_Draft | None, int]:
    """A traceback rich drew in a box (``rows[at]`` is its top): the frames inside it, the
    source line each marks with ``❱``, then the exception line below the box. A row
    outside the box before its bottom ends it with nothing found."""
    header = rows[at]
    frames: list[Frame] = []
    at += 1
    while at < len(rows):
        row = rows[at]
        text = row.text.strip()
        if _RICH_BOTTOM.fullmatch(text):
            at += 1
            while at < len(rows) and not rows[at].text.strip():
                at += 1
            head = _exception_head(rows[at], lenient=True) if at < len(rows) else None
            if head is None:
                return None, at
            return _with_frames(rows, at, head, header, frames)
        if "│" not in row.line.prefix:
            return None, at
        found = _RICH_FRAME.fullmatch(text)
        if found is not None:
            function = found["function"]
            frames.append(Frame(_frame_file(found["file"]), int(found["line"]), function, ""))
        elif text.startswith("❱") and frames and not frames[-1].source:
            source = text.partition("│")[2].lstrip("│ ").strip()  # after rich's indent guides
            last = frames[-1]
            frames[-1] = Frame(last.file, last.line, last.function, source)
        at += 1
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
        start = _after_wrappers(row.text, head.message_start)
        body = _error_body(row.text, start, marked=False)
        if body is not None:
            message, begin, end, _ = body
            return _draft(head.name, message, row, begin, [row.span(begin, end)]), at
        parts.append(row.text[start:])
        spans.append(row.span(start, len(row.text)))
        while at < len(rows) and len(parts) < MAX_MESSAGE_LINES and _continues(row, rows[at]):
            parts.append(rows[at].text)
            spans.append(rows[at].span(0, len(rows[at].text)))
            at += 1
    if head.name.endswith("ValidationError") and len(parts) > 1:
        validated = _validator_message(rows[first:at], head.message_start or 0)
        if validated is not None:
            name, message, found = validated
            return _draft(name, message, row, head.name_start, found), at
    draft = _Draft(
        qualified_class=head.name,
        message="\n".join(parts),
        span=(row.span(head.name_start, head.name_start)[0], spans[-1][1] if spans else name_end),
        message_span=(spans[0][0], spans[-1][1]) if spans else (name_end, name_end),
        message_line_spans=tuple(spans),
    )
    return draft, at


def _draft(
    name: str, message: str, row: _Row, begin: int, spans: Sequence[tuple[int, int]]
) -> _Draft:
    """An exception whose message was unwrapped: it spans from ``row[begin]`` (its class, or
    the body it was read from) to the end of its message."""
    first = row.span(begin, begin)[0]
    return _Draft(
        qualified_class=name,
        message=message,
        span=(min(first, spans[0][0]), spans[-1][1]),
        message_span=(spans[0][0], spans[-1][1]),
        message_line_spans=tuple(spans),
    )


def _after_wrappers(text: str, start: int) -> int:
    """Where the message begins once the wrappers other tools put in front are taken off:
    xinference's ``[address=..., pid=...]``, at the start or after its own words (``Failed
    to launch model, detail: [address=...] <the engine's message>``)."""
    found = start
    if "[address=" in text:
        for match in _WRAPPER.finditer(text, start):
            found = match.end()
    return found


def _error_body(text: str, start: int, marked: bool) -> tuple[str, int, int, str | None] | None:
    """(message, where its text begins and ends in ``text``, the body's ``type``) of an HTTP
    error body at or after ``start``; None when there is none. A body alone on a line
    (``marked``), or after other words, must say it is an error (``"object": "error"``,
    ``"error": {``), so that a log line or a message that shows a dict with a ``message``
    key (a chat message) is not taken for one."""
    brace = text.find("{", start)
    if brace < 0 or "message" not in text:
        return None
    marked = marked or _BODY_LEAD.fullmatch(text, start, brace) is None
    if marked and _BODY_ERROR_MARK.search(text, brace) is None:
        return None
    key = text.find("message", brace)
    while key >= 0:
        for back in (1, 2):
            found = _BODY_MESSAGE.match(text, key - back) if key - back >= brace else None
            if found is not None:
                begin = found.end()
                end = _string_end(text, begin, found["quote"])
                kind = _BODY_TYPE.search(text, brace)
                return _unescape(text[begin:end], found["quote"]), begin, end, kind and kind["type"]
        key = text.find("message", key + 1)
    return None


def _string_end(text: str, begin: int, quote: str) -> int:
    """Where the quoted string starting at ``begin`` ends (its closing quote), or where the
    line or the longest message ends when a cut paste left it open."""
    limit = min(len(text), begin + MAX_BODY_MESSAGE)
    at = begin
    while at < limit:
        if text.startswith(quote, at) and (len(quote) == 1 or text[at - 1 : at] != "\\"):
            return at
        at += 2 if text[at] == "\\" and len(quote) == 1 else 1
    return limit


def _unescape(raw: str, quote: str) -> str:
    """The text of a string literal as JSON (``"``, or ``\\"`` inside another string) or
    Python's repr (``'``) wrote it; as written when it does not decode."""
    try:
        if quote.endswith("'"):
            value = ast.literal_eval(f"'{raw}'")
        else:  # JSON has no \\' escape, yet servers write one for a quote in the message
            value = json.loads('"' + raw.replace("\\'", "'") + '"')
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw
    return value if isinstance(value, str) else raw


def _validator_message(
    lines: Sequence[_Row], begin: int
) -> tuple[str, str, list[tuple[int, int]]] | None:
    """(class, message, spans) of the first error a pydantic ``ValidationError`` lists (its
    message's lines, the first from ``begin``): the lines from ``Value error, `` (a
    validator's ValueError) or ``Assertion failed, `` up to its `` [type=...]`` details."""
    if not _VALIDATION_SUMMARY.fullmatch(lines[0].text, begin):
        return None
    for first, row in enumerate(lines[1:], start=1):
        text = row.text.lstrip()
        opener = next((key for key in _VALIDATOR_MESSAGE if text.startswith(key)), None)
        if opener is None:
            continue
        parts: list[str] = []
        spans: list[tuple[int, int]] = []
        start = len(row.text) - len(text) + len(opener)
        for line in lines[first:]:
            tail = _VALIDATION_TAIL.search(line.text, start)
            stop = tail.start() if tail else len(line.text)
            parts.append(line.text[start:stop])
            spans.append(line.span(start, stop))
            if tail:
                break
            start = 0
        return _VALIDATOR_MESSAGE[opener], "\n".join(parts), spans
    return None


def _body_alone(row: _Row) -> _Draft | None:
    """An HTTP error body alone on its line (what ``curl`` shows): an exception whose class
    is the body's ``type`` when that names a class, else unknown ("")."""
    body = _error_body(row.text, row.indent, marked=True)
    if body is None:
        return None
    message, begin, end, kind = body
    name = kind if kind and kind[:1].isupper() else ""
    return _draft(name, message, row, row.indent, [row.span(begin, end)])


def _mentioned(row: _Row) -> _Draft | None:
    """An exception a line names without being its exception line: quoted in a sentence or
    after words of its own (the message then ends at the closing quote), or printed as its
    repr. Only names that look like an exception's count."""
    text = row.text
    found = _REPR.match(text, row.indent) if text.endswith(")") else None
    if found is not None and text[-2] == found["quote"] and _looks_like_exception(found["name"]):
        begin, end = found.end(), len(text) - 2
        message = _unescape(text[begin:end], found["quote"])
        return _draft(found["name"], message, row, found.start(), [row.span(begin, end)])
    if ": " not in text:  # what _MENTIONED finds ends in one
        return None
    for found in _MENTIONED.finditer(text, row.indent):
        if not _looks_like_exception(found["name"]):
            continue
        start, begin, end = found.start("name"), found.end("name") + len(": "), len(text)
        closer = _CLOSING_QUOTES.get(text[start - 1 : start])
        if closer and (close := text.rfind(closer, begin)) >= 0:
            end = close
        begin = _after_wrappers(text, begin)
        body = _error_body(text[:end], begin, marked=False)
        if body is not None:
            message, begin, end, _ = body
            return _draft(found["name"], message, row, start, [row.span(begin, end)])
        return _draft(found["name"], text[begin:end], row, start, [row.span(begin, end)])
    return None


def _read_warning(rows: Sequence[_Row], at: int, found: re.Match[str]) -> tuple[_Draft, int]:
    """A warning as the warnings module prints it: its category and message, and where it
    was raised as its one frame."""
    row = rows[at]
    head = _exception_head(row, lenient=True, start=found.end())
    assert head is not None  # the pattern looked ahead at "<Name>Warning: "
    draft, after = _read_message(rows, at, head)
    draft.frames = (Frame(_frame_file(found["file"]), int(found["line"]), "", ""),)
    draft.span = (row.span(row.indent, row.indent)[0], draft.span[1])
    return draft, after


def _message_alone(lines: Sequence[CleanLine]) -> list[_Draft]:
    """A paste that is one line of message and nothing else (``max_num_scheduled_tokens is
    set to -1792, ...``), or a bare log whose last line is one (the log a server printed up
    to its error, ``The model's max seq len (29000) is larger than ...``, with no logger's
    prefix): an exception whose class is unknown (""), so that its message is still matched
    as a message. Any other paste without an exception is a log."""
    filled = [line for line in lines if line.text.strip()]
    if not filled or (len(filled) > 1 and any(line.prefix for line in filled)):
        return []
    line = filled[-1]
    text = line.text.rstrip()
    begin = _after_wrappers(text, len(text) - len(text.lstrip()))
    logger = ISSUE_TITLE_TAGS.sub("", line.prefix)
    logged = bool(logger.strip().strip("`")) and not text.startswith(
        tuple(_VALIDATOR_MESSAGE), begin
    )
    if logged and not _ERROR_LEVEL.search(logger):
        return []  # an INFO or WARNING line is a log line: its message is matched inside it
    words = text[begin:].split()
    if len(words) < MIN_MESSAGE_WORDS or sum(char.isalpha() for char in text) < MIN_MESSAGE_ALNUM:
        return []
    if text.endswith(_HEADER) or text.lstrip().startswith('File "'):
        return []
    name, end = "", len(text)
    opener = next((key for key in _VALIDATOR_MESSAGE if text.startswith(key, begin)), None)
    if opener is not None:  # pydantic's line for one error: its class is the validator's
        name, begin = _VALIDATOR_MESSAGE[opener], begin + len(opener)
        tail = _VALIDATION_TAIL.search(text, begin)
        end = tail.start() if tail else end
    span = line.span(begin, end)
    return [_Draft(name, text[begin:end], span, span, (span,))]


def _frame_file(path: str) -> str:
    """A frame's path, with the doubled backslashes of a Windows path that was escaped once
    more (``C:\\\\Users\\\\...`` printed from a string's repr) made single."""
    return path.replace("\\\\", "\\") if "\\\\" in path else path


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


def _exception_head(row: _Row, lenient: bool, start: int | None = None) -> _Head | None:
    """Parse ``Class: message`` or a lone ``Class`` (at ``start``, else at the indent).

    Right after a traceback's frames any dotted name is an exception class; elsewhere
    (``lenient`` false) the name must look like one, or ordinary log lines such as
    ``Note: ...`` would be taken for exceptions. A lone name on a line the end of the paste
    cut (``eng`` of ``engine``) must look like one too.
    """
    indent = row.indent if start is None else start
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
    """The ``File "...", line N, in fn`` match of a row, if it is a frame line; on the
    paste's first line, also the tail of one whose start the selection left out."""
    if row.text.startswith('File "', row.indent):
        return _FRAME.fullmatch(row.text, row.indent)
    if row.line.line_no == 0 and '", line ' in row.text:
        return _CUT_FRAME.fullmatch(row.text, row.indent)
    return None


def _is_cut_marker(text: str) -> bool:
    """Lines that stand for frames left out: "[Previous line repeated N more times]", "..."."""
    stripped = text.strip()
    return (
        stripped == "..."
        or stripped.startswith("... ")
        or stripped.startswith("[Previous line repeated ")
    )
