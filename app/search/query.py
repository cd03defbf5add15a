"""Search queries made safe: user text -> words and phrases the store looks for.

User text never reaches the engine as syntax: it is split into words, each run of words
between spaces becomes one phrase (app.store.fulltext.TextQuery), and the last word is a
prefix; each engine quotes those words itself. Quotes, operators, column filters, parentheses
and NEAR are thereby plain words or nothing, and never an error. A query that starts like an
error line (`SomeError: message`) is also given to the matcher (app.search.service).
"""

import re
from collections.abc import Sequence

from app.store.fulltext import TextQuery, normal_text

MAX_QUERY_LENGTH = 500
MAX_QUERY_TERMS = 32
MIN_PREFIX_CHARS = 2  # a one-letter prefix would expand to most of the vocabulary
MAX_ERROR_LINE_CHARS = 300  # how much of a text is looked at to tell an error line

WORD = re.compile(r"[^\W_]+")
_ERROR_LINE = re.compile(
    r"\s{0,40}(?:[A-Za-z_]\w{0,127}\.){0,16}[A-Za-z_]\w{0,127}"
    r"(?:Error|Exception|Warning|Exit|Interrupt)(?::|\s*$)"
)
_TRACEBACK_HEADER = "Traceback (most recent call last)"


def query_phrases(query: str) -> list[list[str]]:
    """The words of a query, grouped by the spaces the user typed, at most MAX_QUERY_TERMS.

    `free_buf()` is one group (free, buf), so it must match as a phrase, the way the
    tokenizer split the indexed text; everything that is not a letter or digit is dropped.
    The query is normalised as the indexed text is (app.store.fulltext.normal_text), so
    full-width letters and apostrophe-like ones find the same records on both engines.
    """
    phrases = [WORD.findall(chunk) for chunk in (normal_text(query) or "").split()]
    return [words for words in phrases if words][:MAX_QUERY_TERMS]


def text_query(
    phrases: Sequence[Sequence[str]], *, any_word: bool = False, prefix: bool = True
) -> TextQuery:
    """The query the store looks for: the phrases, all (or any) of them, the last word a
    prefix when asked and long enough to be one."""
    return TextQuery(
        tuple(tuple(words) for words in phrases),
        any_word,
        prefix and len(phrases[-1][-1]) >= MIN_PREFIX_CHARS,
    )


def looks_like_error_line(query: str) -> bool:
    """Whether a query starts like `SomeError: message`, so the matcher should see it."""
    return _ERROR_LINE.match(query[:MAX_ERROR_LINE_CHARS]) is not None


def looks_like_paste(query: str) -> bool:
    """Whether text from the one box of the home page is a traceback or log (-> match)."""
    stripped = query.strip()
    return "\n" in stripped or _TRACEBACK_HEADER in stripped or looks_like_error_line(stripped)
