"""An exception a line names without being its exception line: quoted in a sentence or after
words of its own, or printed as its repr (`OutOfMemoryError('CUDA out of memory. ...')`)."""

import re
from collections.abc import Sequence

from app.matching.tracebacks.exception_line import unwrapped
from app.matching.tracebacks.model import Draft
from app.matching.tracebacks.names import looks_like_exception
from app.matching.tracebacks.rows import Row
from app.matching.tracebacks.wrappers import after_wrappers, error_body, unescape

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
ASCII_NAME = r"[A-Za-z_][A-Za-z0-9_.]{0,255}"
CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
_MENTIONED = re.compile(
    rf"""(?:["'`“(]|: |[{CJK}](?={ASCII_NAME}: ))(?=(?P<name>[^\W\d][\w.]{{0,255}}): )"""
)
_CLOSING_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”"}
_REPR = re.compile(r"""(?P<name>[^\W\d][\w.]{0,255})\((?P<quote>["'])""")


def read(
    rows: Sequence[Row],
    at: int,
    lenient: bool,  # noqa: ARG001 - the Dialect signature
) -> tuple[Draft | None, int] | None:
    """The exception ``rows[at]`` mentions, and the row after it; None when it mentions none."""
    draft = _mentioned(rows[at])
    return None if draft is None else (draft, at + 1)


def _mentioned(row: Row) -> Draft | None:
    """An exception a line names without being its exception line: quoted in a sentence or
    after words of its own (the message then ends at the closing quote), or printed as its
    repr. Only names that look like an exception's count."""
    text = row.text
    found = _REPR.match(text, row.indent) if text.endswith(")") else None
    if found is not None and text[-2] == found["quote"] and looks_like_exception(found["name"]):
        begin, end = found.end(), len(text) - 2
        message = unescape(text[begin:end], found["quote"])
        return unwrapped(found["name"], message, row, found.start(), [row.span(begin, end)])
    if ": " not in text:  # what _MENTIONED finds ends in one
        return None
    for found in _MENTIONED.finditer(text, row.indent):
        if not looks_like_exception(found["name"]):
            continue
        start, begin, end = found.start("name"), found.end("name") + len(": "), len(text)
        closer = _CLOSING_QUOTES.get(text[start - 1 : start])
        if closer and (close := text.rfind(closer, begin)) >= 0:
            end = close
        begin = after_wrappers(text, begin)
        body = error_body(text[:end], begin, marked=False)
        if body is not None:
            message, begin, end, _ = body
            return unwrapped(found["name"], message, row, start, [row.span(begin, end)])
        return unwrapped(found["name"], text[begin:end], row, start, [row.span(begin, end)])
    return None
