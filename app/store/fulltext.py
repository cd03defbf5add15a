"""The full-text index, declared once: which fields of a record are searched, how much each
weighs, and the queries both engines answer alike.

SQLite keeps the index in FTS5 tables (migration 0002), PostgreSQL in weighted tsvector
columns of `record_search` (migration 0008); both keep `record_search`, one row per record
with its key in the index and the facts that related records need (filters are conditions on
the records table: app.store.base.restricted). What differs
between the engines is how words are matched and ranked (app.store.base.Backend).

Keys: reviewed records get keys above REVIEWED_KEYS, drafts below, each newer record a higher
key, so ordering by (score, key) puts reviewed records before drafts on equal scores, and
newer drafts before older ones, without a join per match.
"""

import unicodedata
from dataclasses import dataclass
from enum import Enum

from sqlalchemy import BigInteger, Column, MetaData, Table, Text

REVIEWED_KEYS = 1 << 40

NORMAL_TEXT_SQL = "errkb_normal_text"
"""The SQL function (SQLite: registered on every connection, app.store.engine) that gives
the text the index holds of a field: normal_text."""
APOSTROPHES = "\u02b9\u02bb\u02bc\u02c8\u2018\u2019"
"""Letters and marks that read as an apostrophe (modifier letters: FTS5 took `doesn` U+02BC
`t` as one word; PostgreSQL's unaccent turns them into an apostrophe, which splits it)."""
_APOSTROPHE_MAP = str.maketrans(dict.fromkeys(APOSTROPHES, "'"))


def normal_text(text: str | None) -> str | None:
    """Text as the full-text index holds it and a query looks for it, alike on both engines:
    NFKC (ValueError in full-width letters is ValueError, a ligature its letters) and each
    apostrophe-like letter an apostrophe (APOSTROPHES). Both engines then split words and
    fold case and accents their own, equivalent, ways."""
    if text is None:
        return None
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHE_MAP)


@dataclass(frozen=True, slots=True)
class Field:
    """One searched field: its FTS5 column, its key in the record document, its BM25 weight
    (SQLite), and its tsvector weight label (PostgreSQL); list fields name how items join."""

    column: str
    key: str
    weight: float
    label: str
    joiner: str | None = None


# The short fields ("head"): ranking over them alone never reads the long prose of common
# words (app.search, tier "summary"). Column order is that of migration 0002's FTS5 tables.
HEAD_FIELDS = (
    Field("error_message", "errorMessage", 10.0, "A"),
    Field("error_class", "errorClass", 6.0, "B"),
    Field("tags", "tags", 3.0, "C", " "),
    Field("file_path", "filePath", 3.0, "C"),
    Field("repo", "repo", 2.0, "C"),
)
BODY_FIELDS = (
    Field("documentation", "documentation", 2.0, "D"),
    Field("trigger_scenarios", "triggerScenarios", 1.5, "D"),
    Field("common_situations", "commonSituations", 1.5, "D"),
    Field("solutions", "solutions", 1.5, "D", "\n"),
    Field("prevention_tips", "preventionTips", 1.0, "D", "\n"),
)
FULL_FIELDS = HEAD_FIELDS + BODY_FIELDS
HEAD_WEIGHTS = tuple(field.weight for field in HEAD_FIELDS)
FULL_WEIGHTS = tuple(field.weight for field in FULL_FIELDS)

# PostgreSQL has four weight labels, so fields share them: each label weighs what the main
# field under it weighs in FTS5 (message 10, class 6, tags and file 3, prose 1.5), and a
# field never outweighs one that FTS5 weighs more (tests/test_store_fulltext.py).
LABEL_WEIGHTS = {"A": 10.0, "B": 6.0, "C": 3.0, "D": 1.5}


def rank_weights() -> tuple[float, float, float, float]:
    """ts_rank's weight array, in its order {D, C, B, A}, scaled so that A is 1."""
    top = LABEL_WEIGHTS["A"]
    return tuple(LABEL_WEIGHTS[label] / top for label in "DCBA")  # type: ignore[return-value]


record_search = Table(
    "record_search",
    MetaData(),
    Column("fts_rowid", BigInteger, primary_key=True),
    Column("record_id", Text, nullable=False, unique=True),
    Column("repo", Text, nullable=False),
    Column("error_class", Text, nullable=False),
    Column("background_tag", Text),
    Column("file_path", Text),
)
"""The facts table both engines keep (migrations 0002 and 0008); their index columns differ."""


@dataclass(frozen=True, slots=True)
class TextQuery:
    """What to look for: phrases of words (letters and digits only, as app.search splits a
    query), all of them or any one, the last word a prefix or not. Each engine turns it into
    its own syntax; user text never reaches the engine any other way."""

    phrases: tuple[tuple[str, ...], ...]
    any_word: bool = False
    prefix: bool = False


class Scope(Enum):
    """Which records a ranking looks at, and over which fields."""

    REVIEWED = "reviewed records, all fields"
    HEAD = "every record, the short fields"
    BODY_ONLY = "every record, all fields, those the short fields do not hold"


@dataclass(frozen=True, slots=True)
class Scored:
    """A record's place in one ranking: its key in the index and its score (higher first)."""

    key: int
    record_id: str
    score: float
