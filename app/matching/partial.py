"""A message that no template matches in full -> the templates it is a cut or near copy of.

People paste what they have: the end of a paste cuts the last message short, a
terminal wraps it at its width, a log collector changes quotes or spacing, and an older or
newer release words it slightly differently. A pattern must match a whole message to count
as a full match, so these find nothing there. This second chance runs only for exceptions
with no full match, and only on the patterns whose longest or leading literal the message
shows (`PatternIndex.near_keys`), so a paste that matches in full pays nothing for it.

* **Cut**: the message agrees with the template's literal text from its start up to where
  the message ends (inside a literal, or inside a variable part); the share of the
  template's literal text it covers says how much is known.
* **Near**: word by word, the message differs from the template's literal words in at most
  ``MAX_NEAR_WORDS`` words, besides whitespace, quoting and punctuation.
* **Wrapped**: the message's lines, joined again as a terminal broke them, match in full.

Comparison is on normalised text: runs of whitespace (a wrapped line's break too) are one
space, and typographic quotes and backticks are one quote. Captures are the message's own
text in each variable part, never text from elsewhere in the paste.
"""

import ast
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any, Protocol

from app.matching import deadline
from app.matching.index import Captures
from app.matching.line_hit import LineHit
from app.matching.tracebacks.model import ParsedException
from app.patterns import AT, LITERAL, SUBPATTERN, most_chars, parsed

MAX_CANDIDATES = 32
"""Patterns tried per message, those with the longest literal found first."""

MAX_NEAR_WORDS = 2
"""Most literal words a near match may differ in; more, and it is another message."""

MIN_COVERED_CHARS = 12
"""Literal characters a cut message must show of a template: fewer identify nothing."""

MIN_NEAR_SHARE = 0.6
"""Share of the template's literal words a near match must have in the message."""

MIN_NEAR_WORDS = 3
"""Literal words a near match must have in common with the template, at the least."""

MAX_BOUNDED_CHARS = 64
"""A variable part that matches at most this many characters (an optional quote) keeps its
bound: a cut message is not read as running on inside it."""

MIN_WRAPPED_CHARS = 20
"""A wrapped message's lines but the last are at least this long: the terminal's width."""

MAX_MESSAGE_CHARS = 4000
"""Messages are compared up to this length: a longer one is a log, not a message."""

_QUOTES = str.maketrans(dict.fromkeys('"`\u2018\u2019\u201c\u201d\u00b4', "'"))
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


class Templates(Protocol):
    """What the second chance reads of the pattern index (`PatternIndex` is one): which
    patterns a text shows literals of, each one's pattern and specificity, and a match."""

    def near_keys(self, text: str) -> dict[str, int]: ...

    def pattern(self, key: str) -> str: ...

    def specificity(self, key: str) -> int: ...

    def match(self, key: str, subject: str, full: bool = False) -> Captures | None: ...


@dataclass(frozen=True, slots=True)
class Piece:
    """A literal run of a pattern (``name`` None), or a variable part and its group name."""

    text: str
    name: str | None = None
    variable: bool = False
    width: int | None = None  # the most characters a variable part holds; None: no bound


@dataclass(frozen=True, slots=True)
class Partial:
    """How a message agrees with a template it does not fully match.

    ``kind`` is "cut", "near" or "wrapped" (its lines joined again match in full); ``share``
    is the part of the template's literal text the message shows; ``differences`` pairs what
    the template says with what the message says.
    """

    kind: str
    share: float
    covered: int
    cut_after: int
    differences: tuple[tuple[str, str], ...] = ()
    captures: dict[str, str] = field(default_factory=dict)
    changed: int = 0  # literal words that differ (near)

    def reason(self) -> str:
        """The named reason a match carries, with the numbers a reader checks it by."""
        if self.kind == "wrapped":
            return "message wrapped at a fixed width: joined again, it matches the whole template"
        if self.kind == "cut":
            return (
                f"message cut after {self.cut_after} characters: it shows {self.share:.0%} "
                "of the template's text, and all of it agrees"
            )
        if not self.differences:
            return "near match: only whitespace, quoting or punctuation differ from the template"
        shown = "; ".join(
            f"{found!r} where the template has {said!r}" for said, found in self.differences
        )
        return f"near match: {shown}"


@lru_cache(maxsize=4096)
def pieces(pattern: str) -> tuple[Piece, ...]:
    """The top-level literal runs and variable parts of a pattern, in order.

    Read off Python's parse tree like the index's literals; a pattern it cannot parse has
    no pieces, and so no partial match.
    """
    tree = parsed(pattern)
    if tree is None:
        return ()
    names = {number: name for name, number in tree.state.groupdict.items()}
    out: list[Piece] = []
    literal: list[str] = []
    for op, arg in tree:
        if op is LITERAL:
            literal.append(chr(arg))
            continue
        if op is AT:
            continue
        if literal:
            out.append(Piece(_normal("".join(literal), strip=False)))
            literal.clear()
        name = names.get(arg[0]) if op is SUBPATTERN else None
        width = _most_chars(tree, op, arg)
        if out and out[-1].variable:  # two variable parts in a row read as one
            before = out.pop()
            both = None if before.width is None or width is None else before.width + width
            out.append(replace(before, width=both))
        else:
            out.append(Piece("", name, variable=True, width=width))
    if literal:
        out.append(Piece(_normal("".join(literal), strip=False)))
    return tuple(out)


def _most_chars(tree: Any, op: Any, arg: Any) -> int | None:
    """The most characters one top-level part of a pattern matches (`[`']?`: 1), None when
    it has no bound worth keeping (`.+?`)."""
    most = most_chars(tree, op, arg)
    return most if most <= MAX_BOUNDED_CHARS else None


def _normal(text: str, strip: bool = True) -> str:
    """Whitespace runs as one space, every kind of quote as ``'``."""
    text = _SPACES.sub(" ", text.translate(_QUOTES))
    return text.strip() if strip else text


def unwrapped(message: str) -> list[str]:
    """A message wrapped at a fixed width, its lines joined again; [] when it
    does not look wrapped. Lines come without trailing spaces, so a line one short of the
    width lost the space it broke at; the first line, behind the class name, has no known
    width, so both joins are tried there."""
    lines = message.split("\n")
    if len(lines) < 2 or any(len(line) < MIN_WRAPPED_CHARS for line in lines[:-1]):
        return []
    middle = lines[1:-1]
    width = max(map(len, middle), default=0)
    if any(len(line) < width - 1 for line in middle):
        return []
    tail = lines[1]
    for line, following in zip(middle, lines[2:], strict=True):
        tail += ("" if len(line) == width else " ") + following
    return [lines[0] + tail, lines[0] + " " + tail]


def cut_match(template: tuple[Piece, ...], message: str) -> Partial | None:
    """The message as the start of the template: each literal run in order, the message
    ending inside one of them or inside a variable part. None when a literal disagrees."""
    text = _normal(message[:MAX_MESSAGE_CHARS])
    total = sum(len(piece.text) for piece in template if not piece.variable)
    position, covered = 0, 0
    opened: tuple[str | None, int] | None = None  # the variable part being read
    captures: dict[str, str] = {}
    width: int | None = None  # the most characters the open variable part holds
    for piece in template:
        if piece.variable:
            opened, width = (piece.name, position), piece.width
            continue
        if opened is not None:
            found = text.find(piece.text, position)
        else:
            found = position if text.startswith(piece.text, position) else -1
        end = found
        if found < 0:
            shown = _cut_inside(piece.text, text, position, opened is not None)
            if shown is None:
                return None
            end = len(text) - shown
            covered += shown
        if opened is not None and width is not None and end - opened[1] > width:
            return None  # more text than the variable part holds: another message
        if opened is not None and opened[0]:
            captures[opened[0]] = text[opened[1] : end]
        if found < 0:
            break
        covered += len(piece.text)
        position, opened = found + len(piece.text), None
    else:
        return None  # the whole template is there: a full match, not a cut one
    if covered < MIN_COVERED_CHARS or total == 0:
        return None
    return Partial("cut", covered / total, covered, len(message), captures=captures)


def _cut_inside(literal: str, text: str, position: int, after_variable: bool) -> int | None:
    """How many characters of ``literal`` the text ends with, from ``position`` on: the
    message was cut inside it (or, after a variable part, inside that part: 0). None when
    it disagrees: a literal that does not go on as the text does, or, after a variable
    part, a text that shows the literal's start and then goes on otherwise (`... in model's
    config.json). This` against `... in model's config.json). To allow ...`): the value
    did not run on to the cut, another message's words follow it."""
    rest = text[position:]
    if not after_variable:
        return len(rest) if literal.startswith(rest) else None
    for shown in range(min(len(literal), len(rest)), 0, -1):
        if text.endswith(literal[:shown]):
            return shown
    if len(literal) >= MIN_COVERED_CHARS and literal[:MIN_COVERED_CHARS] in rest:
        return None
    return 0


class MessageWords:
    """A message's words, ready to be compared with many templates: difflib learns its
    second sequence once and keeps what it learned (a message is compared with the
    MAX_CANDIDATES templates that share most of its literals: learned once a template, that
    would be most of the costliest real pastes' matches, `bench/profile_match.py`)."""

    def __init__(self, message: str) -> None:
        self.length = len(message)
        self.words = _WORD.findall(_normal(message[:MAX_MESSAGE_CHARS]))
        self.counts = Counter(self.words)
        self.matcher = SequenceMatcher(None, [], self.words, autojunk=False)


@lru_cache(maxsize=4096)
def _literal_words(template: tuple[Piece, ...]) -> tuple[list[str], Counter[str]]:
    """The template's literal words, in order and counted (a template of the store, never a
    paste: kept across matches)."""
    words = [w for piece in template if not piece.variable for w in _WORD.findall(piece.text)]
    return words, Counter(words)


def near_match(template: tuple[Piece, ...], message: str | MessageWords) -> Partial | None:
    """The message as the template with at most ``MAX_NEAR_WORDS`` of its literal words
    changed or left out. Only words count: whitespace, quoting and punctuation do not, and
    words the message adds are taken for variable values when the template has any.

    The words the two have in common, counted, bound any alignment of them: the words
    that agree are at most those, and the template's words changed or left out at least
    the rest. Most templates a message shares a literal with fail that bound, and are
    spared the alignment, a large share of the costliest real pastes' matches
    (docs/benchmarks.md, "Costs behind the code's choices")."""
    compared = message if isinstance(message, MessageWords) else MessageWords(message)
    if not may_be_near(template, compared):
        return None
    return _aligned(template, compared)


def may_be_near(template: tuple[Piece, ...], compared: MessageWords) -> bool:
    """Whether the words the template and the message have in common, counted, leave room
    for a near match (near_match's bound)."""
    words, counts = _literal_words(template)
    common = (counts & compared.counts).total()
    return (
        bool(words)
        and len(words) - common <= MAX_NEAR_WORDS
        and common >= _needed_words(len(words))
    )


def _aligned(template: tuple[Piece, ...], compared: MessageWords) -> Partial | None:
    """near_match by aligning the message's words with the template's literal words."""
    words, _ = _literal_words(template)
    if not words:
        return None
    has_variables = any(piece.variable for piece in template)
    found = compared.words
    matcher = compared.matcher
    matcher.set_seq1(words)
    differences: list[tuple[str, str]] = []
    changed = 0
    for op, t1, t2, f1, f2 in matcher.get_opcodes():
        if op == "equal" or (op == "insert" and has_variables):
            continue
        changed += max(t2 - t1, 0 if has_variables else f2 - f1)
        differences.append((" ".join(words[t1:t2]), " ".join(found[f1:f2])))
    agreeing = sum(block.size for block in matcher.get_matching_blocks())
    if changed > MAX_NEAR_WORDS or agreeing < _needed_words(len(words)):
        return None
    covered = sum(len(word) for word in words) * agreeing // len(words)
    return Partial(
        "near",
        agreeing / len(words),
        covered,
        compared.length,
        tuple(differences),
        changed=changed,
    )


def _needed_words(literal_words: int) -> float:
    """Words a near match must have in common with a template of this many literal words."""
    return max(MIN_NEAR_WORDS, MIN_NEAR_SHARE * literal_words)


def second_chance(
    index: Templates,
    exceptions: Sequence[ParsedException],
    hits: Sequence[LineHit],
    paste_end: int,
    elsewhere: Callable[[str, ParsedException], bool] | None = None,
) -> list[tuple[str, int, Partial]]:
    """(record id, exception index, how it agrees) for every exception whose message no hit
    matches in full. A cut match needs the message to end the paste (``paste_end``: the
    offset after its last non-blank character): only there can a paste have cut it.

    A full hit of a record that the exception's frames say it was not raised at
    (``elsewhere``: a copy of the message in another file) explains nothing: the site the
    frames are in may raise a near copy (an older release's `bitsandbytes>=0.44.0` where the
    harvested one says `>=0.45.0`), which is looked for too."""
    # Records of many releases share one template (an unchanged message): how a message
    # agrees with it is worked out once, and is each record's.
    whole: dict[tuple[str, int], bool] = {}
    full = set()
    for key, exception_index, _, on_message in hits:
        if not on_message or exception_index is None:
            continue
        exception = exceptions[exception_index]
        known = (index.pattern(key), exception_index)
        if known not in whole:
            whole[known] = _matches_whole(index, key, exception)
        if whole[known] and not (elsewhere and elsewhere(key, exception)):
            full.add(exception_index)
    found: list[tuple[str, int, Partial]] = []
    for exception in exceptions:
        deadline.check()  # each exception may be compared with MAX_CANDIDATES templates
        if exception.index in full or not exception.message.strip():
            continue
        at_end = exception.message_span[1] >= paste_end
        best: dict[str, Partial] = {}
        joined = unwrapped(exception.message)
        for text in [exception.message, *joined]:
            near = index.near_keys(text)
            if not near:  # most messages of a flood: no template shares their literals
                continue
            words = MessageWords(text)
            agreements: dict[str, Partial | None] = {}
            for key in sorted(near, key=lambda k: (-near[k], k))[:MAX_CANDIDATES]:
                template = index.pattern(key)
                if template not in agreements:
                    agreements[template] = _agreement(
                        index, key, text, words, text in joined, at_end
                    )
                partial = agreements[template]
                if partial is not None and (key not in best or _rank(partial) > _rank(best[key])):
                    best[key] = partial
        found.extend((key, exception.index, partial) for key, partial in best.items())
    return found


def unquoted(message: str) -> str | None:
    """The string a message is the repr of, as KeyError prints its argument, else None."""
    if len(message) < 2 or message[0] != message[-1] or message[0] not in "'\"":
        return None
    try:
        value = ast.literal_eval(message)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _matches_whole(index: Templates, key: str, exception: ParsedException) -> bool:
    """Whether the pattern matches the whole message and its literal text is at least half
    of it: a generic `{x} must be {y}` matching everything explains nothing."""
    if index.specificity(key) * 2 < len(exception.message):
        return False
    inner = unquoted(exception.message)
    messages = [exception.message] if inner is None else [exception.message, inner]
    return any(index.match(key, message, full=True) is not None for message in messages)


def _agreement(
    index: Templates, key: str, text: str, words: MessageWords, joined: bool, at_end: bool
) -> Partial | None:
    """How ``text`` (whose words are ``words``) agrees with ``key``'s template: in full once
    joined, cut, or near."""
    if joined:
        captured = index.match(key, text, full=True)
        if captured is not None:
            values = {k: v for k, v in captured.named.items() if v is not None}
            return Partial("wrapped", 1.0, index.specificity(key), len(text), captures=values)
    template = pieces(index.pattern(key))
    cut = cut_match(template, text) if at_end else None
    return cut or near_match(template, words)


def _rank(partial: Partial) -> tuple[int, float]:
    return (partial.kind == "wrapped", partial.share)
