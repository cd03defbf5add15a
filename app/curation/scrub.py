"""What of an unexplained error may be kept and shown: its class and the public words of its
message.

An unmatched paste is counted toward a template that anyone can read on /curate, /stats and
/api/curation/queue, so the template must never hold a value from the paste. Rules that look
for known value shapes (paths, numbers) always miss a shape someone did not think of, and
rules that keep what looks like prose keep a user name, a host called
`mirabelle-workstation` or a password made of dictionary words (`password is hunter for
admin`); a leaked secret cannot be taken back. So a word of the message stays only when
errkb could have written it without the paste: when some record's message template or
error class has it (app.records.vocabulary: upstream code's own words), when the
exception's class names it, or when it is one of a short list of common English words.
Every other word becomes `<value>`, and every token that is not a word a placeholder
saying what it looked like (`<num>`, `<path>`, `<url>`...). Before that, detect-secrets'
maintained rules (cloud keys, tokens, `password=...` assignments, URL credentials) mark
what they know as `<secret>`.

The same filter runs when a template is stored and when it is shown, so templates stored
by an earlier, weaker scrubbing are shown clean too.
"""

import hashlib
import re
from collections.abc import Callable, Iterator
from functools import lru_cache, partial

from app.records.vocabulary import WORD, Vocabulary, normal_word, words_of

MAX_TEMPLATE_CHARS = 300
MAX_SCRUBBED_CHARS = 4 * MAX_TEMPLATE_CHARS
"""How much of a message's first line is read: enough for a full template, and a megabyte
line costs the secret rules no more than a short one."""
MAX_WORD_RUN = 20
"""Longest run of letters kept in a class name (a CamelCase hump, or a word of a module):
longer ones are rare in names and common in tokens."""
MAX_UPPER_RUN = 10
"""Longest all-capital word kept (CUDA, NCCL, HTTP), shorter than a key in capitals."""
ANY_CASE_RUN = 4
"""A run this short is kept in any case (GiB, MiB, dB): too short to carry a secret."""
MAX_CONSONANTS = 5
"""Most consonants in a row kept (strengths): random letters run longer."""
MAX_HUMPS = 6
MIN_MEAN_HUMP = 3.0
"""A CamelCase name (ConnectionRefusedError) has few humps of several letters; `AbCdEfGh`
does not."""
MIN_SECRET_CHARS = 3
"""Shorter findings of the secret rules are left to the allow-list: replacing every `ab`
would only garble the prose around it."""

PLACEHOLDERS = ("str", "path", "hex", "num", "url", "host", "email", "ip", "secret", "value")
_PLACEHOLDER = re.compile("<(?:" + "|".join(PLACEHOLDERS) + ")>")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
_OPENERS = "([{<\"'`"
_CLOSERS = ")]}>\"'`,.;:!?"
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
_VALUE_RUN = re.compile(r"<value>(?: <value>)+")

COMMON_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can cannot could did do does doing done down
    during each either else enough ever every few for from further had has have having he
    her here him his how however i if in into is it its itself just least less like many
    may me might more most much must my neither no nor not now of off on once one only or
    other our out over own per please same she should since so some still such than that
    the their them then there these they this those though through to too two under until
    up upon us very via was we were what when where whether which while who whom whose why
    will with within without would yet you your""".split()
)
"""Words too common to carry a secret, kept in any message: function words of English."""


TEMPLATES_KEPT = 4096
"""Templates of messages seen lately kept, by a digest of the message (never the message:
it may hold a secret): an unexplained error is pasted again and again, and scrubbing its
message costs more than matching it (`bench/bench_scrub.py`; docs/benchmarks.md, "Hits and
the scrub of templates")."""


class _Kept:
    """Templates made under one vocabulary, by key, up to TEMPLATES_KEPT; all forgotten
    when a template is asked for under another (a write changed the store's words)."""

    def __init__(self) -> None:
        self._state: tuple[Vocabulary | None, dict[object, str]] = (None, {})

    def get(self, vocabulary: Vocabulary, key: object, make: Callable[[], str]) -> str:
        under, values = self._state
        if under is not vocabulary:
            values = {}
            self._state = (vocabulary, values)
        template = values.get(key)
        if template is None:
            if len(values) >= TEMPLATES_KEPT:
                values.clear()  # the errors pasted most come back first
            template = values[key] = make()
        return template

    def __len__(self) -> int:
        return len(self._state[1])

    def __iter__(self) -> Iterator[object]:
        return iter(list(self._state[1]))

    def values(self) -> list[str]:
        return list(self._state[1].values())


_kept = _Kept()  # pastes' templates, by a digest of the message
_shown = _Kept()  # stored templates as shown, by the stored template


def template_key(error_class: str, message: str, vocabulary: Vocabulary) -> str:
    """The template kept for an error: `Class: first line`, every word no template of the
    store (`vocabulary`), the class or common English has replaced by `<value>` and every
    other token that is not a word by a placeholder (`<path>`, `<secret>`...), at most
    MAX_TEMPLATE_CHARS."""
    line = _first_line(message)
    said = f"{len(error_class)}:{error_class}{line}".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(said, digest_size=16).digest()
    return _kept.get(vocabulary, digest, lambda: _template(error_class, line, vocabulary))


def _first_line(message: str) -> str:
    return message.strip()[:MAX_SCRUBBED_CHARS].split("\n", 1)[0]


def _template(error_class: str, line: str, vocabulary: Vocabulary) -> str:
    kept = _class_name(error_class, vocabulary)
    class_words = words_of(kept.replace("<value>", " "))

    def known(word: str) -> bool:
        normal = normal_word(word)
        return any(
            form in COMMON_WORDS or form in class_words or form in vocabulary
            for form in _forms(normal)
        )

    words: list[str] = []
    size = len(kept) + 2
    for token in scrub_message(line, known).split():
        size += len(token) + 1
        if size > MAX_TEMPLATE_CHARS + 1:
            break
        words.append(token)
    return f"{kept}: {' '.join(words)}" if words else kept


INFLECTIONS = ("s", "es", "ed", "ing")
MIN_STEM = 4


def _forms(word: str) -> list[str]:
    """The word, and the stems it may be an inflection of (`connecting` of `connect`,
    `tensors` of `tensor`): a template's `connect` vouches for a paste's `connecting`."""
    forms = [word]
    for ending in INFLECTIONS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            forms.append(word[: -len(ending)])
    return forms


def shown_template(template: str, vocabulary: Vocabulary) -> str:
    """A stored template as it may be shown: filtered again with the store's words, so one
    kept by an older, weaker scrubbing never shows the values it let through. Kept until
    the words change: a listing shows the same templates again and again."""
    error_class, _, message = template.partition(": ")
    return _shown.get(
        vocabulary, template, lambda: _template(error_class, _first_line(message), vocabulary)
    )


def scrub_message(text: str, known: Callable[[str], bool]) -> str:
    """The text with quoted strings, the secrets detect-secrets knows, every word that is
    not `known` and every token that is not a word replaced by placeholders; whitespace
    collapsed to single spaces, and a run of `<value>`s to one."""
    text = _QUOTED.sub("<str>", text)
    for secret in sorted(_secrets(text), key=len, reverse=True):
        text = text.replace(secret, "<secret>")
    return _VALUE_RUN.sub("<value>", " ".join(_token(token, known) for token in text.split()))


def _class_name(error_class: str, vocabulary: Vocabulary) -> str:
    """A dotted class name keeps its name when it is shaped like one (a paste may name its
    error anything, and the class is what a curator needs), and each module before it that
    is shaped like one and a word of the store or common English; any other part becomes
    `<value>` (a module may be someone's project: `mirabelle_tools.ConfigError`)."""
    *modules, name = error_class.strip().split(".")
    kept = [
        part
        if _is_identifier(part)
        and (normal_word(part) in vocabulary or normal_word(part) in COMMON_WORDS)
        else "<value>"
        for part in modules
    ]
    return ".".join([*kept, name if _is_identifier(name) else "<value>"])


def _token(token: str, known: Callable[[str], bool]) -> str:
    """One whitespace-separated token: its surrounding punctuation kept, its core judged."""
    if _PLACEHOLDER.fullmatch(token):
        return token
    start, end = 0, len(token)
    while start < end and token[start] in _OPENERS and not _PLACEHOLDER.match(token, start):
        start += 1
    while end > start and token[end - 1] in _CLOSERS and not _ends_in_placeholder(token, end):
        end -= 1
    core = token[start:end]
    return token[:start] + (_core(core, known) if core else "") + token[end:]


def _ends_in_placeholder(token: str, end: int) -> bool:
    return any(token.endswith(f"<{name}>", 0, end) for name in PLACEHOLDERS)


def _core(core: str, known: Callable[[str], bool]) -> str:
    """What stays of a token without its surrounding punctuation."""
    if _PLACEHOLDER.fullmatch(core):
        return core
    if WORD.fullmatch(core):
        return core if known(core) else "<value>"
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
            part if _SEPARATORS.fullmatch(part) or not part else _core(part, known)
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


def _is_identifier(core: str) -> bool:
    """snake_case or CamelCase of words (max_model_len, OutOfMemoryError), no digits."""
    return _IDENTIFIER.fullmatch(core) is not None and all(
        _word_shaped(run) for run in core.strip("_").split("_")
    )


def _word_shaped(run: str) -> bool:
    """Whether a run of letters reads like a word: lower case, capitalised, a short word in
    capitals, or CamelCase of a few humps of several letters; never too long (a CamelCase
    name by each hump: ConnectionRefusedError is three words)."""
    if not run or _CONSONANTS.search(run):
        return False
    if len(run) <= ANY_CASE_RUN or run.islower() or (run[0].isupper() and run[1:].islower()):
        return len(run) <= MAX_WORD_RUN
    if run.isupper():
        return len(run) <= MAX_UPPER_RUN
    humps = _HUMP.findall(run)
    return (
        "".join(humps) == run
        and len(humps) <= MAX_HUMPS
        and len(run) / len(humps) >= MIN_MEAN_HUMP
        and all(len(hump) <= MAX_WORD_RUN for hump in humps)
    )


KEY_WORD_PIECES = ("key", "pass", "pwd", "secret", "contrase")
"""A piece of each key word of detect-secrets' keyword rules (`api_?key`, `password`,
`contraseña`...): every expression of those rules needs one of its key words, in any case."""


def _secrets(text: str) -> set[str]:
    """Every string detect-secrets' rules flag in the text. The keyword rules only read a
    text holding a piece of a key word: run on every text they would be most of scrubbing
    a message (docs/benchmarks.md, "Costs behind the code's choices"), and most messages
    name no password or key."""
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
