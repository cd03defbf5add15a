"""What a raise site is known by, read from its record alone, and how releases are ordered.

A raise site is known by its key: the repository, the file, the exception class (its last
dotted name) and the message template compared structurally, so that `(.+?)`,
`(?P<control_offset>(?s:.+?))` and `{control_offset}` are the same variable part. Keys that
differ (a renamed file, a changed message, another class) stay apart, so a curated record is
never merged into the wrong site (app.records.locations). The function around a site and
the helper it calls are read from the record's source excerpt, for claiming a site and for
ranking a traceback's frames.
"""

import hashlib
import keyword
import re
from typing import Any

from app.patterns import AT, LITERAL, parsed
from app.records.model import ErrorRecord

SITE_KEY_HEX = 32
LOCATED_PATTERN = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>\(\?s:\.\+\?\)\)")
VARIABLE = "\x00"  # one variable part of a template, whatever its spelling
_TEMPLATE_FIELD = re.compile(r"\{[^{}]*\}")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)")
# A statement that calls a function (`raise_error_or_warn(`, `self._fail(`, `x = check(`).
_CALL = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\(")
_VERSION_PART = re.compile(r"(\d+)")


def short_class(name: str) -> str:
    """`torch.OutOfMemoryError` -> `OutOfMemoryError`."""
    return name.rsplit(".", 1)[-1]


def message_template(pattern: str | None, message: str) -> str:
    """The literal text of a message with each variable part as one VARIABLE.

    Read from the pattern (a capture group, a class, a repeat: all variable), so that the
    regex spellings of one template agree; a pattern Python cannot parse (RE2-only syntax)
    falls back to the message's `{placeholders}`.
    """
    tree = parsed(pattern) if pattern is not None else None
    if tree is None:
        return _TEMPLATE_FIELD.sub(VARIABLE, message)
    out: list[str] = []
    for op, value in tree:
        if op is LITERAL:
            out.append(chr(value))
        elif op is not AT and (not out or out[-1] != VARIABLE):
            out.append(VARIABLE)
    return "".join(out)


def matched_by_location(pattern: str) -> bool:
    """Whether a pattern is harvest's spelling of a message built at run time: one named
    variable part, `(?P<msg>(?s:.+?))`, and nothing else. Such a record is found by where it
    raises (the innermost frame), never by its text, and its pattern stays out of the message
    index. Any other pattern that matches every line is refused."""
    return LOCATED_PATTERN.fullmatch(pattern) is not None


def site_key(record: ErrorRecord) -> str | None:
    """The key of the raise site a record describes; None when it names no file."""
    if not record.file_path:
        return None
    parts = (
        record.repo,
        record.file_path,
        short_class(record.error_class),
        message_template(record.message_pattern, record.error_message),
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:SITE_KEY_HEX]


def raising_function(record: ErrorRecord) -> str | None:
    """The function around the record's raise line, read from its source excerpt."""
    source, line, start = record.source_code, record.line_number, record.source_code_start
    if source is None or line is None or start is None:
        return None
    for text in reversed(source.split("\n")[: line - start + 1]):
        found = _DEF.match(text)
        if found:
            return found.group(1)
    return None


def called_helper(record: ErrorRecord) -> str | None:
    """The function the record's raise line calls, when the site is a call of a raising
    helper (SGLang's `raise_error_or_warn(self, strict, counter, message)`) rather than a
    `raise` or an `assert`: the helper raises the message in its own file, so the innermost
    frame of a traceback is the helper's, not the record's."""
    source, line, start = record.source_code, record.line_number, record.source_code_start
    if source is None or line is None or start is None:
        return None
    lines = source.split("\n")
    if not 0 <= line - start < len(lines):
        return None
    found = _CALL.match(lines[line - start])
    return found.group(1) if found and not keyword.iskeyword(found.group(1)) else None


def release_order(release: str) -> tuple[Any, ...]:
    """Sort key of release labels with numbers compared as numbers (0.9 before 0.10)."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in _VERSION_PART.split(release)
    )
