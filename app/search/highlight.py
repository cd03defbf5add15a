"""Marking what a query matched: the message's matched words and the best prose passage.

Pages mark matches in Python, alike for both engines: the FTS5 tables are
contentless, and FTS5's highlight() or PostgreSQL's ts_headline would evaluate the whole
query again for each record of the page.
"""

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from app.records.model import ErrorRecord
from app.search.query import MIN_PREFIX_CHARS, WORD

SNIPPET_TOKENS = 24
SNIPPET_CONTEXT_TOKENS = 4  # words shown before the first match


@dataclass(frozen=True, slots=True)
class Marked:
    """A text and the (start, end) spans of it that the query matched."""

    text: str
    marks: tuple[tuple[int, int], ...] = ()

    def parts(self) -> list[tuple[str, bool]]:
        """The text cut into (piece, matched) runs, for a page to wrap the matched ones."""
        pieces, at = [], 0
        for start, end in self.marks:
            if start > at:
                pieces.append((self.text[at:start], False))
            pieces.append((self.text[start:end], True))
            at = end
        if at < len(self.text):
            pieces.append((self.text[at:], False))
        return pieces


class Terms:
    """The query's phrases as the index compares words: folded, the last word maybe a prefix.

    Pages mark matches in Python, alike for both engines: the FTS5 tables are contentless,
    and FTS5's highlight() or PostgreSQL's ts_headline would evaluate the whole query again
    for each record of the page. ASCII text (nearly all of it) is searched with str.find,
    the rest word by word, folded like the tokenizer.
    """

    def __init__(self, phrases: list[list[str]], prefix: bool) -> None:
        self.phrases = [[_fold(word) for word in words] for words in phrases]
        self.prefix = prefix and len(self.phrases[-1][-1]) >= MIN_PREFIX_CHARS
        self._rest = []  # each phrase after its first word's start, as an anchored regex
        for number, words in enumerate(self.phrases):
            parts = [re.escape(word) for word in words]
            if self._is_prefixed(number):
                parts[-1] += r"[^\W_]*"
            self._rest.append(re.compile(r"[\W_]+".join(parts) + r"(?![^\W_])"))

    def _is_prefixed(self, number: int) -> bool:
        return self.prefix and number == len(self.phrases) - 1

    def find(
        self, value: str, start: int = 0, end: int | None = None
    ) -> list[tuple[int, int, int]]:
        """(start, end, phrase number) of each place in value[start:end] a phrase matches."""
        end = len(value) if end is None else end
        if not value.isascii():
            return [found for found in self._find_folded(value) if start <= found[0] < end]
        lowered = value.lower()
        found = sorted(
            (at, stop, number)
            for number in range(len(self.phrases))
            for at, stop in self._ascii_matches(lowered, number, start, end)
        )
        kept: list[tuple[int, int, int]] = []
        for match in found:
            if not kept or match[0] >= kept[-1][1]:
                kept.append(match)
        return kept

    def first(self, value: str) -> int:
        """Where the first match in `value` starts (there must be one)."""
        return self.find(value)[0][0]

    def distinct(self, value: str) -> int:
        """How many of the phrases `value` holds."""
        if not value.isascii():
            return len({number for _, _, number in self._find_folded(value)})
        lowered = value.lower()
        return sum(
            next(self._ascii_matches(lowered, number, 0, len(lowered)), None) is not None
            for number in range(len(self.phrases))
        )

    def _ascii_matches(
        self, lowered: str, number: int, start: int, end: int
    ) -> Iterator[tuple[int, int]]:
        first_word = self.phrases[number][0]
        at = lowered.find(first_word, start, end)
        while at != -1:
            if at == 0 or not lowered[at - 1].isalnum():
                match = self._rest[number].match(lowered, at, end)
                if match:
                    yield at, match.end()
            at = lowered.find(first_word, at + 1, end)

    def _find_folded(self, value: str) -> list[tuple[int, int, int]]:
        """find() for text beyond ASCII, word by word, folded like the tokenizer folds."""
        tokens = [(m.start(), m.end(), _fold(m.group())) for m in WORD.finditer(value)]
        words = [word for _, _, word in tokens]
        found = []
        for at in range(len(words)):
            for number, phrase in enumerate(self.phrases):
                window = words[at : at + len(phrase)]
                if window == phrase or (
                    self._is_prefixed(number)
                    and len(window) == len(phrase)
                    and window[:-1] == phrase[:-1]
                    and window[-1].startswith(phrase[-1])
                ):
                    found.append((tokens[at][0], tokens[at + len(phrase) - 1][1], number))
                    break
        return found


def _fold(word: str) -> str:
    """A word as the unicode61 tokenizer (remove_diacritics 2) indexes it."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


_PASSAGE_FIELDS = (
    "documentation",
    "trigger_scenarios",
    "common_situations",
    "solutions",
    "prevention_tips",
)


def _field_text(record: ErrorRecord, field_name: str) -> str:
    value = getattr(record, field_name)
    return "\n".join(value) if isinstance(value, list) else value or ""


def passage(record: ErrorRecord, terms: Terms) -> Marked | None:
    """The prose field holding the most query words, cut to SNIPPET_TOKENS words around them."""
    best, best_count = "", 0
    for field_name in _PASSAGE_FIELDS:
        value = _field_text(record, field_name)
        count = terms.distinct(value) if value else 0
        if count > best_count:
            best, best_count = value, count
            if count == len(terms.phrases):
                break  # no later field can hold more
    if not best_count:
        return None
    first_match = terms.first(best)
    spans = [m.span() for m in WORD.finditer(best)]
    first = next(i for i, span in enumerate(spans) if span[0] == first_match)
    start_token = max(0, first - SNIPPET_CONTEXT_TOKENS)
    end_token = min(len(spans), start_token + SNIPPET_TOKENS) - 1
    start = 0 if start_token == 0 else spans[start_token][0]
    end = len(best) if end_token == len(spans) - 1 else spans[end_token][1]
    lead = "" if start == 0 else "…"
    shift = len(lead) - start
    marks = tuple((s + shift, e + shift) for s, e, _ in terms.find(best, start, end) if e <= end)
    return Marked(lead + best[start:end] + ("" if end == len(best) else "…"), marks)
