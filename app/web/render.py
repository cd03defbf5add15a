"""Presentation helpers of the web pages: code highlighting, marked pastes, search links.

Everything here returns either plain data that templates escape, or Markup built only from
escaped text (Pygments escapes the code it highlights), so nothing a user or a record
supplies reaches a page unescaped.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from app.search.service import SearchHit

PYGMENTS_STYLE = "xcode"  # every token colour meets WCAG AA (4.5:1) on white and on hl
CODE_CSS_CLASS = "highlight"
MAX_FACET_LINKS = 12


def _lexer() -> PythonLexer:
    # stripnl=False: a source excerpt may start with a blank line, and line numbers must hold.
    return PythonLexer(stripnl=False, ensurenl=False)


def python_code(code: str) -> Markup:
    """A code block (records' fixes, validation, try/except) highlighted as Python."""
    formatter = HtmlFormatter(cssclass=CODE_CSS_CLASS, wrapcode=True)
    return Markup(highlight(code, _lexer(), formatter))


def source_excerpt(code: str, first_line: int, raising_line: int | None) -> Markup:
    """The upstream excerpt with its real line numbers and the raising line highlighted."""
    last_line = first_line + code.count("\n")
    marked = []
    if raising_line is not None and first_line <= raising_line <= last_line:
        marked = [raising_line - first_line + 1]  # Pygments counts from the excerpt's start
    formatter = HtmlFormatter(
        cssclass=CODE_CSS_CLASS,
        wrapcode=True,
        linenos="inline",
        linenostart=first_line,
        hl_lines=marked,
    )
    return Markup(highlight(code, _lexer(), formatter))


def stylesheet() -> str:
    """The Pygments CSS served as static/pygments.css (regenerate: python -m app.web.render)."""
    return HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(f".{CODE_CSS_CLASS}") + "\n"


@dataclass(frozen=True, slots=True)
class PastePiece:
    """A run of the pasted text; `exception` is the index of the exception line it is part
    of, `anchor` is set on the first piece of each exception (the target of its links)."""

    text: str
    exception: int | None = None
    matched: bool = False
    anchor: str | None = None


def paste_pieces(
    paste: str, exception_spans: Mapping[int, Sequence[tuple[int, int]]], matched: set[int]
) -> list[PastePiece]:
    """The paste cut into runs, the lines of each exception (its message lines) set apart.

    A message span starts after `SomeError: `; the piece starts at its line's beginning,
    so the whole exception line stands out.
    """
    spans = sorted(
        (paste.rfind("\n", 0, start) + 1, end, index)
        for index, ranges in exception_spans.items()
        for start, end in ranges
        if 0 <= start < end <= len(paste)
    )
    pieces, at, anchored = [], 0, set()
    for start, end, index in spans:
        if start < at:
            continue  # overlapping spans: the first one wins
        if start > at:
            pieces.append(PastePiece(paste[at:start]))
        anchor = None if index in anchored else f"exception-{index}"
        anchored.add(index)
        pieces.append(PastePiece(paste[start:end], index, index in matched, anchor))
        at = end
    if at < len(paste):
        pieces.append(PastePiece(paste[at:]))
    return pieces


def page_facets(hits: Sequence[SearchHit]) -> dict[str, list[tuple[str, int]]]:
    """The classes and tags of a page's hits, most frequent first: links that narrow it."""
    counts: dict[str, Counter[str]] = {"errorClass": Counter(), "tag": Counter()}
    for hit in hits:
        record = hit.record.record
        counts["errorClass"][record.error_class] += 1
        counts["tag"].update(record.tags)
    return {
        name: sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:MAX_FACET_LINKS]
        for name, counter in counts.items()
    }


def search_url(params: Mapping[str, str | None], **changes: str | None) -> str:
    """/search with these parameters, some changed or (None) dropped; for filter links."""
    merged = {**params, **changes}
    query = urlencode({key: value for key, value in merged.items() if value})
    return f"/search?{query}" if query else "/search"


if __name__ == "__main__":
    from pathlib import Path

    target = Path(__file__).parent / "static" / "pygments.css"
    target.write_text(stylesheet(), encoding="utf-8")
    print(f"wrote {target}")
