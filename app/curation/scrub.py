"""What of an unexplained error may be kept and shown: its class and its message's prose.

An unmatched paste is counted toward a template that anyone can read on /curate, /stats and
/api/curation/queue, so the template must never hold a value from the paste. Rules that look
for known value shapes (paths, numbers) always miss a shape someone did not think of, and a
leaked password or token cannot be taken back; so the message is kept word by word on an
allow-list: a word stays only when it is plainly prose (letters, a reasonable length, the
case shape of a word or an identifier), and every other token becomes a placeholder saying
what it looked like. Before that, detect-secrets' maintained rules (cloud keys, tokens,
`password=...` assignments, URL credentials) mark what they know as `<secret>`, which also
catches a secret made of letters only when it is assigned to a key word.

The same filter runs when a template is stored and when it is shown, so templates stored
by an earlier, weaker scrubbing are shown clean too.
"""

import hashlib
import re
from collections.abc import Callable, Iterator
from functools import lru_cache, partial

MAX_TEMPLATE_CHARS = 300
MAX_SCRUBBED_CHARS = 4 * MAX_TEMPLATE_CHARS
"""How much of a message's first line is read: enough for a full template, and a megabyte
line costs the secret rules no more than a short one."""
MAX_WORD_RUN = 20
"""Longest run of letters kept: longer ones are rare in prose and common in tokens."""
MAX_UPPER_RUN = 10
"""Longest all-capital word kept (CUDA, NCCL, HTTP), shorter than a key in capitals."""
ANY_CASE_RUN = 4
"""A run this short is kept in any case (GiB, MiB, dB): too short to carry a secret."""
MAX_CONSONANTS = 5
"""Most consonants in a row kept (strengths): random letters run longer."""
MAX_HUMPS = 6
MIN_MEAN_HUMP = 3.0
"""A CamelCase word (OutOfMemory) has few humps of several letters; `AbCdEfGh` does not."""
MIN_SECRET_CHARS = 3
"""Shorter findings of the secret rules are left to the allow-list: replacing every `ab`
would only garble the prose around it."""

PLACEHOLDERS = ("str", "path", "hex", "num", "url", "host", "email", "ip", "secret", "value")
_PLACEHOLDER = re.compile("<(?:" + "|".join(PLACEHOLDERS) + ")>")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
_OPENERS = "([{<\"'`"
_CLOSERS = ")]}>\"'`,.;:!?"
_LETTERS = r"[^\W\d_]+"
_WORD = re.compile(rf"{_LETTERS}(?:['\u2019-]{_LETTERS})*")
_IDENTIFIER = re.compile(r"_*[^\W\d_]+(?:_[^\W\d_]+)*_*")
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_URL = re.compile(r"[A-Za-z][\w+.-]*://")
_EMAIL = re.compile(r"[^@\s]+@[\w-]+(?:\.[\w-]+)+")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\d+)?")
_IPV6 = re.compile(r"\[?[0-9A-Fa-f]*:[0-9A-Fa-f:]*:[0-9A-Fa-f.]*\]?(?::\d+)?(?:/\d+)?")
_NUMBER = re.compile(r"[-+]?(?:\d[\d_]*)?\.?\d+(?:[eE][-+]?\d+)?%?")
_HEX = re.compile(
    r"0[xX][0-9a-fA-F]+|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
    r"|(?=[a-fA-F]*\d)[0-9a-fA-F]{8,}"
)
_HOST = re.compile(r"[\w-]+(?:\.[\w-]+)+\.?(?::\d+)?")
_CONSONANTS = re.compile(rf"[b-df-hj-np-tv-xz]{{{MAX_CONSONANTS + 1}}}", re.IGNORECASE)
_SEPARATORS = re.compile(r"([=:,;|])")


TEMPLATES_KEPT = 4096
"""Templates of messages seen lately kept, by a digest of the message (never the message:
it may hold a secret): an unmatched error is pasted again and again, and scrubbing its
message costs more than matching it (about 160 us for a real paste's message)."""
_kept: dict[bytes, str] = {}


def template_key(error_class: str, message: str) -> str:
    """The template kept for an error: `Class: first line`, every token that is not plainly
    prose replaced by a placeholder (`<path>`, `<secret>`...), at most MAX_TEMPLATE_CHARS."""
    line = _first_line(message)
    said = f"{len(error_class)}:{error_class}{line}".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(said, digest_size=16).digest()
    template = _kept.get(digest)
    if template is None:
        if len(_kept) >= TEMPLATES_KEPT:
            _kept.clear()  # the errors pasted most come back first
        template = _kept[digest] = _template(error_class, line)
    return template


def _first_line(message: str) -> str:
    return message.strip()[:MAX_SCRUBBED_CHARS].split("\n", 1)[0]


def _template(error_class: str, line: str) -> str:
    kept = _class_name(error_class)
    words: list[str] = []
    size = len(kept) + 2
    for token in scrub_message(line).split():
        size += len(token) + 1
        if size > MAX_TEMPLATE_CHARS + 1:
            break
        words.append(token)
    return f"{kept}: {' '.join(words)}" if words else kept


@lru_cache(maxsize=4096)
def shown_template(template: str) -> str:
    """A stored template as it may be shown: filtered again, so one kept by an older,
    weaker scrubbing never shows the values it let through. Cached: a listing shows the
    same templates again and again."""
    error_class, _, message = template.partition(": ")
    return _template(error_class, _first_line(message))  # its own cache, not pastes' memo


def scrub_message(text: str) -> str:
    """The text with quoted strings, the secrets detect-secrets knows, and every token that
    is not prose replaced by placeholders; whitespace collapsed to single spaces."""
    text = _QUOTED.sub("<str>", text)
    for secret in sorted(_secrets(text), key=len, reverse=True):
        text = text.replace(secret, "<secret>")
    return " ".join(_token(token) for token in text.split())


def _class_name(error_class: str) -> str:
    """A dotted class name keeps each part that is an identifier of prose; any other part
    becomes `<value>` (a paste may name its error anything)."""
    parts = error_class.strip().split(".")
    return ".".join(part if _is_identifier(part) else "<value>" for part in parts)


def _token(token: str) -> str:
    """One whitespace-separated token: its surrounding punctuation kept, its core judged."""
    if _PLACEHOLDER.fullmatch(token):
        return token
    start, end = 0, len(token)
    while start < end and token[start] in _OPENERS and not _PLACEHOLDER.match(token, start):
        start += 1
    while end > start and token[end - 1] in _CLOSERS and not _ends_in_placeholder(token, end):
        end -= 1
    core = token[start:end]
    return token[:start] + (_core(core) if core else "") + token[end:]


def _ends_in_placeholder(token: str, end: int) -> bool:
    return any(token.endswith(f"<{name}>", 0, end) for name in PLACEHOLDERS)


def _core(core: str) -> str:
    """What stays of a token without its surrounding punctuation."""
    if _PLACEHOLDER.fullmatch(core) or _is_word(core) or _is_identifier(core):
        return core
    for pattern, placeholder in _WHOLE_TOKEN_SHAPES:
        if pattern.fullmatch(core) if placeholder != "<url>" else pattern.match(core):
            return placeholder
    if "@" in core:
        return "<secret>"  # user:password@host without a scheme, or the like
    if "/" in core or "\\" in core:
        return "<path>"
    if _HOST.fullmatch(core):
        return "<host>"
    if _SEPARATORS.search(core):  # key=value, cuda:0, a,b: each part judged
        return "".join(
            part if _SEPARATORS.fullmatch(part) or not part else _core(part)
            for part in _SEPARATORS.split(core)
        )
    return "<secret>" if _looks_like_key(core) else "<value>"


_WHOLE_TOKEN_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_URL, "<url>"),
    (_EMAIL, "<email>"),
    (_IPV4, "<ip>"),
    (_IPV6, "<ip>"),
    (_HEX, "<hex>"),
    (_NUMBER, "<num>"),
)


def _looks_like_key(core: str) -> bool:
    """A long token mixing letters with digits or case, the shape of keys and tokens."""
    has_digit = any(char.isdigit() for char in core)
    has_letter = any(char.isalpha() for char in core)
    return len(core) >= 12 and has_letter and (has_digit or not core.islower())


def _is_word(core: str) -> bool:
    """Letters only (joined by an apostrophe or hyphen), each run shaped like a word."""
    return _WORD.fullmatch(core) is not None and all(
        _word_shaped(run) for run in re.split(r"['\u2019-]", core)
    )


def _is_identifier(core: str) -> bool:
    """snake_case or CamelCase of words (max_model_len, OutOfMemoryError), no digits."""
    return _IDENTIFIER.fullmatch(core) is not None and all(
        _word_shaped(run) for run in core.strip("_").split("_")
    )


def _word_shaped(run: str) -> bool:
    """Whether a run of letters reads like a word: lower case, capitalised, a short word in
    capitals, or CamelCase of a few humps of several letters; never too long."""
    if not run or len(run) > MAX_WORD_RUN or _CONSONANTS.search(run):
        return False
    if len(run) <= ANY_CASE_RUN or run.islower() or (run[0].isupper() and run[1:].islower()):
        return True
    if run.isupper():
        return len(run) <= MAX_UPPER_RUN
    humps = _HUMP.findall(run)
    return (
        "".join(humps) == run and len(humps) <= MAX_HUMPS and len(run) / len(humps) >= MIN_MEAN_HUMP
    )


KEY_WORD_PIECES = ("key", "pass", "pwd", "secret", "contrase")
"""A piece of each key word of detect-secrets' keyword rules (`api_?key`, `password`,
`contraseña`...): every expression of those rules needs one of its key words, in any case."""


def _secrets(text: str) -> set[str]:
    """Every string detect-secrets' rules flag in the text. The keyword rules only read a
    text holding a piece of a key word: they were nine tenths of scrubbing a message
    (250 of 290 us), and most messages name no password or key."""
    shapes, keywords = _detectors()
    folded = text.casefold()  # as `re.IGNORECASE` compares: the long s and the Kelvin sign too
    rules = shapes + keywords if any(piece in folded for piece in KEY_WORD_PIECES) else shapes
    return {
        found
        for analyze in rules
        for found in analyze(text)
        if isinstance(found, str) and len(found) >= MIN_SECRET_CHARS
    }


Rule = Callable[[str], Iterator[str]]


@lru_cache(maxsize=1)
def _detectors() -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    """detect-secrets' regex rules (each provider's key and token shapes, URL credentials,
    JWTs, private keys), and its keyword rules for `password: ...` assignments, loaded once.
    The entropy rules are left out: the allow-list already drops high-entropy tokens."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.base import RegexBasedDetector

    get_mapping_from_secret_type_to_class()  # imports every plugin of the rule set
    shapes = tuple(plugin().analyze_string for plugin in RegexBasedDetector.__subclasses__())
    words = keyword.KeywordDetector()
    keywords = tuple(
        partial(words.analyze_string, denylist_regex_to_group=rules)
        for rules in (
            keyword.CONFIG_DENYLIST_REGEX_TO_GROUP,
            keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        )
    )
    return shapes, keywords
