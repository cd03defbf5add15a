"""A message expression of the source -> its pieces -> a `{name}` template and a pattern.

Message forms understood: a literal (implicitly concatenated or not), an f-string, a literal's
`.format(...)`, a literal `% args`, `+` concatenation of these (an operand of another kind
becomes a placeholder, since `str + x` only works when `x` is a str), `sep.join(pieces)` of a
list of pieces, and a name whose pieces the caller knows (a local variable, a module-level
constant, a factory's parameter). The template has `{name}` for each interpolated value; the
pattern fullmatches the real message and compiles in RE2 and in `re`. A message too long for
a pattern keeps its first line or its start.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Mapping
from dataclasses import replace

from app.harvest.message_pieces import Field, Item, Joined, ListMark, Maybe, Part, Parts
from app.harvest.sites import Message, SkipReason
from app.patterns import program_fits
from app.records.model import max_chars

MIN_LITERAL_ALNUM = 4  # fewer literal letters/digits than this cannot identify an error
MAX_MESSAGE_CHARS = max_chars("errorMessage")
MAX_PATTERN_CHARS = max_chars("messagePattern")
MAX_FULL_PATTERN_CHARS = 900  # a longer pattern may outgrow RE2's program limit
MIN_HEAD_CHARS = 80  # the least of a cut message's start worth a pattern
PLACEHOLDER_TEMPLATE_CHARS = 8  # what a `{name}` counts for when a message is cut
MAX_PLACEHOLDER_CHARS = 32
# Values (tensor reprs, lists) may span lines; a scoped flag, unlike a leading `(?s)`, keeps
# patterns composable into one alternation. Lazy, yet fullmatch still takes the whole value.
PLACEHOLDER_REGEX = "(?s:.+?)"
PERCENT_SPEC = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?"
    r"(?P<conversion>[diouxXeEfFgGcrsa%])"
)
FIELD_ATTRIBUTE_OR_INDEX = re.compile(r"[.\[]")  # `{0.name}`, `{key[1]}`
REGEX_SPECIAL = re.compile(r"[\\.^$|?*+()\[\]{}]|[\x00-\x1f\x7f]")
CONTROL_ESCAPES = {"\n": r"\n", "\r": r"\r", "\t": r"\t"}


def is_list(value: Parts) -> bool:
    """Whether a name's value is a list of message pieces rather than a message."""
    return bool(value) and isinstance(value[0], ListMark)


def _joined(sep: str, value: Parts) -> Parts | None:
    """`sep.join(pieces)` of a list of message pieces; None when no piece is known.

    When the first piece is always there, the message is exact: each later piece follows a
    separator, optional (or repeated) where a condition (or a loop) appended it. When every
    piece is conditional, any of them may come first: a `Joined` of them all."""
    elements: list[tuple[Parts, bool]] = []  # each piece and whether it may be missing

    def collect(parts: Parts, optional: bool, repeats: bool) -> None:
        for part in parts:
            if isinstance(part, Item):
                elements.append((part.parts, optional))
            elif isinstance(part, Maybe):
                collect(part.parts, True, repeats or part.repeats)

    collect(value[1:], False, False)
    if not elements:
        return None
    if not elements[0][1]:
        joined: list[Part] = list(elements[0][0])
        for parts, optional in elements[1:]:
            if optional:
                joined.append(Maybe((sep, *parts), repeats=False))
            else:
                joined.extend((sep, *parts))
        return tuple(joined)
    items = tuple(dict.fromkeys(parts for parts, _ in elements))
    nonempty = isinstance(value[0], ListMark) and value[0].nonempty
    shown = min(_literal_alnum(item) for item in items) if nonempty else 0
    return (Joined(items, sep, not nonempty, shown),)


def tailed_message(
    parts: Parts | None, tail: Maybe | None
) -> tuple[Message | None, SkipReason | None]:
    """The message of these parts with an optional tail the exception class appends to it
    (vLLM's ` (parameter=..., value=...)`): the pattern takes the tail, the record's id
    (`Message.identity`) does not, so a release that added the tail keeps the site's record
    and its history."""
    message, skip = parts_message(parts)
    if message is None or not parts or tail is None:
        return message, skip
    tailed, _ = parts_message((*parts, tail))
    return (replace(tailed, identity=message.template), None) if tailed else (message, None)


def parts_message(parts: Parts | None) -> tuple[Message | None, SkipReason | None]:
    if parts is None:
        return None, SkipReason.DYNAMIC_MESSAGE
    join = next((i for i, part in enumerate(parts) if isinstance(part, Joined)), None)
    if join is not None:
        return _pieces_message(parts, join)
    if _literal_alnum(parts) < MIN_LITERAL_ALNUM:
        return None, SkipReason.NO_LITERAL_TEXT
    message = message_of(parts)
    if len(message.pattern) > MAX_FULL_PATTERN_CHARS and (head := _first_line(parts)):
        message = message_of(head)
    while len(message.pattern) > MAX_FULL_PATTERN_CHARS and not program_fits(message.pattern):
        head = _head(parts, len(message.template) * 3 // 4)
        if head is None:
            return None, SkipReason.MESSAGE_TOO_LONG
        message = message_of(head)
    if len(message.template) > MAX_MESSAGE_CHARS or len(message.pattern) > MAX_PATTERN_CHARS:
        return None, SkipReason.MESSAGE_TOO_LONG
    return message, None


def _pieces_message(parts: Parts, join: int) -> tuple[Message | None, SkipReason | None]:
    """A message joined from pieces, as one message per piece (`others` holds the rest): a
    pattern of all of them has no text every message shows, so it would name nothing, and
    most messages show one piece. Pieces with too little text of their own are left out."""
    joined = parts[join]
    assert isinstance(joined, Joined)
    found: list[Message] = []
    skip: SkipReason | None = SkipReason.NO_LITERAL_TEXT
    for item in joined.items:
        message, why = parts_message((*parts[:join], *item, *parts[join + 1 :]))
        if message is None:
            skip = why if skip == SkipReason.NO_LITERAL_TEXT else skip
        elif message not in found:
            found.append(message)
    if not found:
        return None, skip
    return replace(found[0], others=tuple(found[1:])), None


def _literal_alnum(parts: Parts) -> int:
    """Letters and digits of the text every message of the template shows: its literal
    parts, and the least of the pieces a join must show one of."""
    count = sum(char.isalnum() for part in parts if isinstance(part, str) for char in part)
    return count + sum(part.shown for part in parts if isinstance(part, Joined))


def _head(parts: Parts, max_chars: int) -> Parts | None:
    """A long one-line message as its first `max_chars` characters, cut after a word, and the
    rest captured as `{details}`: the whole would compile to more RE2 instructions than the
    index runs, and the start names the error. None when too little is left."""
    head: list[Part] = []
    used = 0
    for part in parts:
        size = len(part) if isinstance(part, str) else PLACEHOLDER_TEMPLATE_CHARS
        if used + size > max_chars or isinstance(part, Maybe | Joined):
            if isinstance(part, str):
                kept = part[: max_chars - used].rpartition(" ")[0]
                if kept:
                    head.append(part[: len(kept) + 1])
                    used += len(kept)
            break
        head.append(part)
        used += size
    if used < MIN_HEAD_CHARS:
        return None
    return (*head, Field("details"))


def _first_line(parts: Parts) -> Parts | None:
    """A long multi-line message as its first line and the rest captured as `{details}`:
    the first line names the error, and a whole page of text would outgrow the pattern
    limits. None for a message of one line."""
    head: list[Part] = []
    for part in parts:
        if isinstance(part, str) and "\n" in part:
            head.append(part[: part.index("\n") + 1])
            return (*head, Field("details"))
        head.append(part)
    return None


def parts_of(node: ast.expr, env: Mapping[str, Parts]) -> Parts | None:
    """The literal pieces and interpolated values of a string expression; None if dynamic."""
    if isinstance(node, ast.Constant):
        return (node.value,) if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts: list[Part] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))  # an f-string's literal pieces are str
            elif isinstance(value, ast.FormattedValue):
                inner = value.value
                plain = value.conversion == -1 and value.format_spec is None
                if _plain_name(value) and isinstance(inner, ast.Name) and inner.id in env:
                    named = env[inner.id]
                    parts.extend((Field(inner.id),) if is_list(named) else named)
                elif plain and (join := _join_call(inner, env)) is not None:
                    parts.extend(join)
                else:
                    parts.append(Field(ast.unparse(inner)))
        return tuple(parts)
    if isinstance(node, ast.Name):
        bound = env.get(node.id)
        return None if bound is None or is_list(bound) else bound
    if (join := _join_call(node, env)) is not None:
        return join
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = parts_of(node.left, env), parts_of(node.right, env)
        if left is None and right is None:
            return None
        return (left or (Field(ast.unparse(node.left)),)) + (
            right or (Field(ast.unparse(node.right)),)
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = _literal(node.left, env)
        return None if template is None else percent_parts(template, node.right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        template = _literal(node.func.value, env)
        return None if template is None else _format_parts(template, node)
    return None


def _join_call(node: ast.expr, env: Mapping[str, Parts]) -> Parts | None:
    """`"sep".join(pieces)` where `pieces` is a list of message pieces built before."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    ):
        return None
    value = env.get(node.args[0].id)
    return _joined(node.func.value.value, value) if value and is_list(value) else None


def _plain_name(value: ast.expr) -> bool:
    """An f-string field that is a bare name with no conversion or format: `{msg}`."""
    return (
        isinstance(value, ast.FormattedValue)
        and isinstance(value.value, ast.Name)
        and value.conversion == -1
        and value.format_spec is None
    )


def _literal(node: ast.expr, env: Mapping[str, Parts]) -> str | None:
    """The text of an expression that is a plain string with no interpolation."""
    parts = parts_of(node, env)
    if parts is None or not all(isinstance(part, str) for part in parts):
        return None
    return "".join(part for part in parts if isinstance(part, str))


def percent_parts(template: str, args: ast.expr) -> Parts | None:
    """`template % args`: positional specs take their names from a tuple's items."""
    specs = list(PERCENT_SPEC.finditer(template))
    if any(spec["width"] == "*" or spec["precision"] == "*" for spec in specs):
        return None
    values = [spec for spec in specs if spec["conversion"] != "%" and spec["key"] is None]
    if not isinstance(args, ast.Tuple):  # one value, or a tuple held in a variable
        hints = iter([ast.unparse(args)] * len(values))
    elif len(args.elts) == len(values) and not any(
        isinstance(item, ast.Starred) for item in args.elts
    ):
        hints = iter([ast.unparse(item) for item in args.elts])
    else:
        return None
    parts: list[Part] = []
    position = 0
    for spec in [*specs, None]:
        gap = template[position : spec.start() if spec else None]
        if "%" in gap:
            return None  # not a conversion spec: the real call would fail
        if gap:
            parts.append(gap)
        if spec is None:
            break
        if spec["conversion"] == "%":
            parts.append("%")
        else:
            parts.append(Field(spec["key"] if spec["key"] is not None else next(hints)))
        position = spec.end()
    return tuple(parts)


def _format_parts(template: str, call: ast.Call) -> Parts | None:
    """`template.format(...)`: positional fields are named after their argument."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    parts: list[Part] = []
    auto_index = 0
    for literal, field_name, _spec, _conversion in fields:
        if literal:
            parts.append(literal)
        if field_name is None:
            continue
        base = FIELD_ATTRIBUTE_OR_INDEX.split(field_name, maxsplit=1)[0]
        rest = field_name[len(base) :]
        if base and not base.isdigit():
            parts.append(Field(field_name))
            continue
        index = int(base) if base else auto_index
        auto_index += not base
        args = call.args
        if index < len(args) and not any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
            parts.append(Field(ast.unparse(args[index]) + rest))
        else:
            parts.append(Field(f"arg{index}{rest}"))
    return tuple(parts)


def message_of(parts: Parts) -> Message:
    """Template and pattern with one uniquely named group per interpolated value."""
    template: list[str] = []
    pattern: list[str] = []
    names: list[str] = []
    _render(parts, template, pattern, names)
    return Message("".join(template), "".join(pattern), tuple(names))


def _render(parts: Parts, template: list[str], pattern: list[str], names: list[str]) -> None:
    """Append the parts' template and pattern text. An optional tail is written out in the
    template (the message as it reads when the tail is there) and optional in the pattern;
    a join is written out with every piece, and in the pattern is one or more of them."""
    for part in parts:
        if isinstance(part, str):
            template.append(part)
            pattern.append(REGEX_SPECIAL.sub(_escape_char, part))
        elif isinstance(part, Maybe):
            pattern.append("(?:")
            _render(part.parts, template, pattern, names)
            pattern.append(")*" if part.repeats else ")?")
        elif isinstance(part, Joined):
            _render_join(part, template, pattern, names)
        elif isinstance(part, ListMark | Item):
            continue  # a list is never a message; `parts_of` never puts one in
        else:
            name = base = _placeholder_name(part.hint)
            suffix = 1
            while name in names:
                suffix += 1
                name = f"{base}_{suffix}"
            names.append(name)
            template.append(f"{{{name}}}")
            pattern.append(f"(?P<{name}>{PLACEHOLDER_REGEX})")


def _render_join(join: Joined, template: list[str], pattern: list[str], names: list[str]) -> None:
    """`(?:(?:A|B)(?:SEP)?)+`: the pieces in any order and number, as conditions decide. One
    copy of each piece keeps the pattern within the engine's program limit; it also takes
    pieces written without their separator, which no real message has."""
    alternatives = []
    for item in join.items:
        written: list[str] = []
        alternative: list[str] = []
        _render(item, written, alternative, names)
        alternatives.append("".join(alternative))
        template.append(join.sep if len(alternatives) > 1 else "")
        template.extend(written)
    sep = REGEX_SPECIAL.sub(_escape_char, join.sep)
    repeat = "*" if join.optional else "+"
    pattern.append(f"(?:(?:{'|'.join(alternatives)})(?:{sep})?){repeat}")


def _escape_char(match: re.Match[str]) -> str:
    """Escape a regex metacharacter; spell control characters as escapes RE2 and re share."""
    char = match[0]
    if char in CONTROL_ESCAPES:
        return CONTROL_ESCAPES[char]
    if ord(char) < 0x20 or char == "\x7f":
        return f"\\x{ord(char):02x}"
    return "\\" + char


def _placeholder_name(hint: str) -> str:
    """`x` -> x, `self.x` -> x, `len(buffers)` -> len_buffers, `shape[0]` -> shape_0."""
    if hint.isidentifier() and hint.isascii():
        return hint
    name = re.sub(r"[^0-9A-Za-z]+", "_", hint).strip("_")
    name = re.sub(r"^(?:self|cls)_(?=[A-Za-z_])", "", name)[:MAX_PLACEHOLDER_CHARS].rstrip("_")
    if not name:
        return "value"
    return f"v{name}" if name[0].isdigit() else name
