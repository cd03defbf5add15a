"""rich's traceback: a box (``╭── Traceback (most recent call last) ──╮`` to ``╰──╯``) with
the frames, source rows and locals panels inside it, and the exception line below it."""

import re
from collections.abc import Sequence

from app.matching.tracebacks.exception_line import with_frames
from app.matching.tracebacks.model import Draft, Frame, frame_file
from app.matching.tracebacks.names import exception_head
from app.matching.tracebacks.rows import Row

# rich's traceback box: "╭──── Traceback (most recent call last) ────╮", frames
# "/x/config.py:120 in __init__", source rows and locals panels, then "╰────╯".
_RICH_HEADER = re.compile(r"╭─{1,512} Traceback \(most recent call last\) ─{1,512}╮")
_RICH_FRAME = re.compile(
    r"(?P<file>\S.{0,4095}?):(?P<line>[0-9]{1,9}) in (?P<function>[\w.<>]{1,1024})"
)
_RICH_BOTTOM = re.compile(r"╰─{1,1024}╯")


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The traceback whose box's top is ``rows[at]``; None when it is no such top."""
    row = rows[at]
    if row.text.endswith("╮") and _RICH_HEADER.fullmatch(row.text, row.indent):
        return _read_rich(rows, at)
    return None


def _read_rich(rows: Sequence[Row], at: int) -> tuple[Draft | None, int]:
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
            head = exception_head(rows[at], lenient=True) if at < len(rows) else None
            if head is None:
                return None, at
            return with_frames(rows, at, head, header, frames)
        if "│" not in row.line.prefix:
            return None, at
        found = _RICH_FRAME.fullmatch(text)
        if found is not None:
            function = found["function"]
            frames.append(Frame(frame_file(found["file"]), int(found["line"]), function, ""))
        elif text.startswith("❱") and frames and not frames[-1].source:
            source = text.partition("│")[2].lstrip("│ ").strip()  # after rich's indent guides
            last = frames[-1]
            frames[-1] = Frame(last.file, last.line, last.function, source)
        at += 1
    return None, at
