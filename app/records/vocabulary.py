"""The words of the store's message templates and error classes: what is public already.

An unexplained paste counts toward a template that anyone can read (app.curation.scrub).
A word of a paste's message is only safe to keep there when errkb could have written it
without the paste: when some record's message template or error class has it, it comes
from the released upstream code (or a curator), not from someone's machine. A user name,
a host called `mirabelle-workstation` or a password made of dictionary words is in no
template, so it never shows.

Reading them is a scan of the records table and a pass of one expression over its two
short columns, too much to repeat at every write (`bench/bench_scrub.py`; docs/benchmarks.md,
"Hits and the scrub of templates"). So the match index, which follows the store's writes
anyway (app.matching.matcher), reads them once when it loads and then adds the words of
each record it takes in: a match on the event loop never reads the store for them. A
record deleted since leaves its words behind until the process restarts: they were
public when it was written.
"""

import re
from collections.abc import Iterable

from sqlalchemy import select
from sqlmodel import Session, col

from app.store.fulltext import APOSTROPHES, normal_text
from app.store.tables import Record

WORD = re.compile(r"[^\W\d]+(?:['-][^\W\d]+)*")
"""A word as the scrubbing reads it: letters and underscores, joined by an apostrophe or a
hyphen (`doesn't`, `non-contiguous`, `max_model_len`)."""
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_A-Za-z]+")
"""The parts of a word: CamelCase humps, and runs of other letters."""
_APOSTROPHE = re.compile(f"[{APOSTROPHES}]")


class Vocabulary:
    """A set of normalised words (normal_word). Hashed and compared by identity: a cache
    keyed by a vocabulary is kept for as long as its words stay the same, at no cost."""

    __slots__ = ("words",)

    def __init__(self, words: Iterable[str] = ()) -> None:
        self.words = frozenset(words)

    def __contains__(self, word: object) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)


def normal_word(word: str) -> str:
    """A word as vocabularies hold it: as the full-text index does (NFKC, one apostrophe:
    app.store.fulltext.normal_text), case folded."""
    return (normal_text(word) or "").casefold()


def words_of(text: str) -> set[str]:
    """Every word of the text, normalised, whole and in its parts: `max_model_len` gives
    it and `max`, `model`, `len`; `OutOfMemoryError` gives it and `out`, `of`, `memory`,
    `error`. Each distinct word is split once: a store's templates repeat most words."""
    found: set[str] = set()
    for word in set(WORD.findall(_APOSTROPHE.sub("'", text))):
        if word.isascii():
            _add(found, word)
        else:  # full-width letters, ligatures: NFKC may make several words of one
            for normal in WORD.findall(normal_text(word) or ""):
                _add(found, normal)
    return found


def _add(found: set[str], word: str) -> None:
    found.add(word.casefold())
    if word.isalpha() and (word.islower() or word[1:].islower()):
        return  # one part: itself
    for piece in re.split(r"['_-]", word):
        found.update(part.casefold() for part in _PARTS.findall(piece))
        if piece:
            found.add(piece.casefold())


def store_words(session: Session) -> set[str]:
    """The words of every record's message template and error class."""
    rows = session.execute(select(col(Record.error_message), col(Record.error_class)))
    texts = {text for row in rows for text in row}  # no DISTINCT: the scan is the cost
    return words_of("\n".join(texts))  # one pass: most words recur in many templates
