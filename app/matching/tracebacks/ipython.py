"""IPython's and Jupyter's traceback: a header without a colon after the class, frames in
their own forms, numbered source lines and folded-frame notes between them."""

import re
from collections.abc import Sequence

from app.matching.tracebacks.exception_line import with_frames
from app.matching.tracebacks.model import Draft, Frame, frame_file
from app.matching.tracebacks.names import exception_head
from app.matching.tracebacks.rows import HEADER, Row

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
_IPYTHON_HEADER_END = HEADER[:-1]  # IPython's header has no colon
_IPYTHON_SOURCE = re.compile(r"(?:-{1,16}> ?)?[0-9]{1,9}(?: .{0,8192})?")
_IPYTHON_ARROW = re.compile(r"-{1,16}> ?(?P<line>[0-9]{1,9})")
_IPYTHON_FOLDED = re.compile(r"[0-9]{1,9} frames?")  # Colab: "20 frames" folded away


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The IPython traceback whose header is ``rows[at]``; None when it is no such header."""
    row = rows[at]
    if row.text.endswith(_IPYTHON_HEADER_END) and _IPYTHON_HEADER.fullmatch(row.text, row.indent):
        return _read_ipython(rows, at)
    return None


def _read_ipython(rows: Sequence[Row], at: int) -> tuple[Draft | None, int]:
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
        head = exception_head(row, lenient=True)
        if head is None:
            return None, at
        return with_frames(rows, at, head, header, frames)
    return None, at


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
    return Frame(frame_file(file), int(line), (function or "").partition("(")[0].strip(), "")
