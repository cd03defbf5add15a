"""What a record's message pattern may be: one that RE2 runs within bounded cost and that
tells one message from another.

Checked before a pattern is stored (app.records.validation) and before it is indexed
(app.matching.index); its shape is read by the partial matcher and the site keys too. Only
RE2 (to compile and measure a pattern) and Python's regex parser (for its shape, never run)
are needed here, not the multi-pattern engines of the index, so the records' validation does
not load them. Below every service: the records and matching both read it.
"""

import re
import re._constants as sre_constants
import re._parser as sre_parser
import warnings
from functools import lru_cache
from typing import Any

import re2

# The opcodes of Python's parse tree that the readers of a pattern's shape compare against
# (app.matching.partial, app.records.locations): read here, the one place that imports the
# parser's private modules.
LITERAL, AT, SUBPATTERN = sre_constants.LITERAL, sre_constants.AT, sre_constants.SUBPATTERN
MAX_PROGRAM_SIZE = 1000
"""Most RE2 instructions a pattern may compile to. RE2's slowest path (its NFA, taken when the
DFA runs out of memory or groups must be extracted) costs in proportion to bytes times
instructions; the largest harvested patterns stay under it (`bench/bench_hostile.py --sections
patterns` prints the largest program of each release)."""

MAX_GROUPS = 32
"""Most capturing groups a pattern may have: extracting them costs per group too
(`bench/bench_hostile.py --sections pastes`; docs/benchmarks.md, "Hostile input and
hardening"). Harvested patterns have at most 12."""

ANY_LINE_PROBES = ("x", "0", " ", "-", "\u00e9", "\t")
"""One-character lines that share nothing: a pattern that matches each of them would claim
every line of every paste (``.``, ``(?s:.+?)``, ``\\D|\\d``)."""

MIN_LITERAL_CHARS = 4
"""Fewest characters, other than whitespace, that every match of a record's pattern holds
literally (outside classes, wildcards and optional parts). A pattern with fewer (``\\n.+``,
``[^x]+``, ``\\d+``) claims nearly any paste and tops it, and many such patterns make every
match slow (docs/benchmarks.md, "Hostile input and hardening"); every harvested pattern
matched by its text holds at least 4 (vLLM 0.33.0, SGLang 0.5.23: ``TODO``, ``top-k ...``)."""

_REFUSED_GROUPS = (
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?>", "atomic group (?>...)"),
    ("(?(", "conditional (?(...)...)"),
    ("(?P=", "named backreference (?P=name)"),
)
_ANY_BYTE = "any byte \\C"
_WHY_REFUSED = {_ANY_BYTE: "a match could end inside a character"}
_COUNTED_REPEAT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
_BACKREFERENCE_DIGITS = frozenset("123456789")


class PatternError(ValueError):
    """A pattern the linear-time engines cannot run, naming the construct so its author can
    rewrite it."""

    def __init__(self, construct: str, detail: str) -> None:
        super().__init__(f"{construct}: {detail}")
        self.construct = construct
        self.detail = detail


def program_fits(pattern: str) -> bool:
    """Whether RE2 compiles the pattern within MAX_PROGRAM_SIZE; one it cannot compile at all
    fits here, since check_pattern says what is wrong with it."""
    try:
        return re2.compile(pattern, re2_options(never_nl=False)).programsize <= MAX_PROGRAM_SIZE
    except re2.error:
        return True


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` unless RE2 (and so this index) can run ``pattern`` within
    the limits above and it tells one message from another.

    Constructs that need backtracking are named before RE2 is asked, because RE2's own message
    ("invalid perl operator: (?<") does not say what to rewrite.
    """
    refused = _refused_construct(pattern)
    if refused:
        construct, at = refused
        why = _WHY_REFUSED.get(construct, "linear-time engines cannot run it")
        raise PatternError(construct, f"at offset {at}; {why}")
    try:
        regex = re2.compile(pattern, re2_options(never_nl=False))
    except re2.error as error:
        detail = error.args[0] if error.args else ""
        raise PatternError(
            "RE2 syntax", detail.decode() if isinstance(detail, bytes) else str(detail)
        ) from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            "program size",
            f"compiles to {regex.programsize} RE2 instructions; the limit is {MAX_PROGRAM_SIZE}",
        )
    if regex.groups > MAX_GROUPS:
        raise PatternError(
            "capturing groups", f"has {regex.groups} groups; the limit is {MAX_GROUPS}"
        )
    if _matches_empty(pattern, regex):
        raise PatternError("empty match", "matches the empty string, so it would claim any text")
    if all(regex.search(line) for line in ANY_LINE_PROBES):
        raise PatternError("catch-all", "matches any line, so it would claim every paste")


def check_literal_text(pattern: str) -> None:
    """Raise :class:`PatternError` when every match of ``pattern`` need not hold
    MIN_LITERAL_CHARS literal characters; a pattern Python cannot parse (RE2-only syntax) is
    left to check_pattern."""
    tree = parsed(pattern)
    if tree is None:
        return
    found = _literal_chars(tree)
    if found < MIN_LITERAL_CHARS:
        raise PatternError(
            "too little literal text",
            f"every match holds {found} literal characters (outside classes, wildcards and "
            f"optional parts, whitespace not counted); at least {MIN_LITERAL_CHARS} are "
            "needed, or the pattern claims nearly any paste",
        )


def _literal_chars(items: Any) -> int:
    """The literal characters, other than whitespace, that every match of a parsed pattern
    holds: a repeat counts its minimum, an alternation its poorest branch."""
    total = 0
    for op, value in items:
        if op is sre_constants.LITERAL:
            total += not chr(value).isspace()
        elif op is sre_constants.SUBPATTERN:
            total += _literal_chars(value[-1])
        elif op is sre_constants.BRANCH:
            total += min(_literal_chars(branch) for branch in value[1])
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, _, repeated = value
            total += min(low, MIN_LITERAL_CHARS) * _literal_chars(repeated)
        if total >= MIN_LITERAL_CHARS:
            return total
    return total


def _matches_empty(pattern: str, regex: Any) -> bool:
    """Whether the pattern can match zero characters somewhere (``^``, ``(?:)``, ``x*``,
    ``\\b``): Python's parse tree gives the shortest match; RE2-only syntax it cannot parse is
    tried on sample lines instead."""
    tree = parsed(pattern)
    if tree is not None:
        return tree.getwidth()[0] == 0
    for line in ("", *ANY_LINE_PROBES):
        found = regex.search(line)
        if found is not None and found.start() == found.end():
            return True
    return False


@lru_cache(maxsize=64)
def parsed(pattern: str) -> Any:
    """Python's parse tree of the pattern (shape only, never run), or None when Python cannot
    parse it; cached because checking and indexing a pattern both read it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and the like
            return sre_parser.parse(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None


def most_chars(tree: Any, op: Any, arg: Any) -> int:
    """The most characters one top-level part `(op, arg)` of a parsed pattern can match."""
    return sre_parser.SubPattern(tree.state, [(op, arg)]).getwidth()[1]


def _refused_construct(pattern: str) -> tuple[str, int] | None:
    """The first backtracking construct outside character classes, with its offset."""
    at, in_class, after_repeat = 0, False, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            if not in_class and pattern[at + 1 : at + 2] in _BACKREFERENCE_DIGITS:
                return "backreference \\N", at
            if pattern[at + 1 : at + 2] == "C":
                return _ANY_BYTE, at
            at, after_repeat = at + 2, False
        elif in_class:
            in_class, at = char != "]", at + 1
        elif char == "[":
            at, in_class, after_repeat = at + 1, True, False
            at += pattern.startswith("^", at)
            at += pattern.startswith("]", at)  # a leading "]" is a member, not the end
        elif char == "(":
            for opener, construct in _REFUSED_GROUPS:
                if pattern.startswith(opener, at):
                    return construct, at
            at, after_repeat = at + (2 if pattern.startswith("(?", at) else 1), False
        elif char in "*+?" or (repeat := _COUNTED_REPEAT.match(pattern, at)):
            if after_repeat and char == "+":
                return "possessive quantifier (*+, ++, ?+, {m,n}+)", at
            # a "?" after a repeat makes it lazy; anything else starts a new repeat
            after_repeat = not after_repeat
            at = repeat.end() if char not in "*+?" and repeat else at + 1
        else:
            at, after_repeat = at + 1, False
    return None


def re2_options(*, never_nl: bool) -> re2.Options:
    """RE2 options that keep errors out of stderr; `never_nl` keeps a match in one line."""
    options = re2.Options()
    options.log_errors = False
    options.never_nl = never_nl
    return options
