"""A clean line as the parser sees it (a row), and the lines every dialect must tell apart:
Python's traceback header, the separators of a chain, and frame lines."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from app.matching import deadline
from app.matching.logtext import CleanLine

HEADER = "Traceback (most recent call last):"
GROUP_HEADER = "Exception Group "
GROUP_OPENER = "+ " + GROUP_HEADER
CHAIN_SEPARATORS = {
    "The above exception was the direct cause of the following exception:": "cause",
    "During handling of the above exception, another exception occurred:": "context",
}
FRAME = re.compile(
    r'File "(?P<file>.{1,4096}?)", line (?P<line>[0-9]{1,9})(?:,? in (?P<function>.{1,4096}))?'
)
# A paste whose selection began inside a frame line keeps its tail:
# `vllm/model_executor/models/chatglm.py", line 53, in __init__`.
_CUT_FRAME = re.compile(
    r'(?P<file>[^"\s][^"]{0,4095}?\.py)", line (?P<line>[0-9]{1,9}), '
    r"in (?P<function>[\w.<>]{1,1024})"
)
_PYTEST_MARGIN = re.compile(r"E {3,16}(?=\S)")
_DIGITS_AND_SPACES = str.maketrans("", "", "0123456789 \t")


@dataclass(slots=True)
class Row:
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


class Rows(Sequence[Row]):
    """The rows of a stream without an exception group, each made when first asked for:
    then a row depends on its own line alone."""

    def __init__(self, lines: Sequence[CleanLine], cut_at: int) -> None:
        self._lines = lines
        self._cut_at = cut_at
        self._made: dict[int, Row] = {}

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, number: int) -> Row: ...

    @overload
    def __getitem__(self, number: slice) -> list[Row]: ...

    def __getitem__(self, number: int | slice) -> Row | list[Row]:
        if isinstance(number, slice):
            return [self[each] for each in range(*number.indices(len(self)))]
        row = self._made.get(number)
        if row is None:
            row = self._made[number] = _row(self._lines[number], self._cut_at, -1)
        return row


def every_row(lines: Sequence[CleanLine], cut_at: int) -> list[Row]:
    """Every row of a stream, with the margins of an exception group ("  | ", "  +-+---")
    removed from the group's opener on while rows keep them."""
    rows: list[Row] = []
    group_column = -1
    for number, line in enumerate(lines):
        if number % deadline.CHECK_EVERY == 0:
            deadline.check()
        stripped = line.text.rstrip().lstrip()
        if group_column < 0 and stripped.startswith(GROUP_OPENER):
            group_column = len(line.text.rstrip()) - len(stripped)
        if stripped[:1] not in ("+", "|"):
            group_column = -1
        rows.append(_row(line, cut_at, group_column))
    return rows


def _row(line: CleanLine, cut_at: int, group_column: int) -> Row:
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
    return Row(
        line=line,
        col=col,
        text=body,
        indent=column if col == 0 else len(body) - len(body.lstrip()),
        margin=margin,
        nested=margin == "|" and column > group_column,
        boundary=boundary,
        cut=line.end == cut_at and bool(line.text),
    )


def frame_match(row: Row) -> re.Match[str] | None:
    """The ``File "...", line N, in fn`` match of a row, if it is a frame line; on the
    paste's first line, also the tail of one whose start the selection left out."""
    if row.text.startswith('File "', row.indent):
        return FRAME.fullmatch(row.text, row.indent)
    if row.line.line_no == 0 and '", line ' in row.text:
        return _CUT_FRAME.fullmatch(row.text, row.indent)
    return None
