"""A pattern's RE2 programs, compiled when first needed and kept for the next paste.

The same pattern is compiled as written (for the captures of an exception's message), with
line anchors (to confirm a prefilter's hit in a paste), and with its groups made
non-capturing (RE2 then finds a span with its DFA alone).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import re2

from app.patterns import re2_options

MAX_COMPILED = 4096
"""RE2 programs kept compiled. Patterns are compiled when first needed, so start-up does not
pay for 100k of them and memory stays bounded."""

_CAPTURING_OPENER = re.compile(r"\((?:\?P?<[A-Za-z_][A-Za-z0-9_]*>)?(?!\?)")


def _without_groups(pattern: str) -> str:
    """The pattern with each capturing group made non-capturing: RE2 then finds a match's span
    with its DFA alone, where groups would need its NFA (much slower on long lines)."""
    out, at, in_class = [], 0, False
    while at < len(pattern):
        char = pattern[at]
        if pattern.startswith("\\Q", at):  # literal text up to \E: nothing to change there
            end = pattern.find("\\E", at)
            end = len(pattern) if end < 0 else end + 2
            out.append(pattern[at:end])
            at = end
            continue
        if char == "\\":
            out.append(pattern[at : at + 2])
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            start = at + 1 + pattern.startswith("^", at + 1)
            start += pattern.startswith("]", start)  # a leading "]" is a member
            out.append(pattern[at:start])
            at = start
            continue
        elif opener := _CAPTURING_OPENER.match(pattern, at):
            out.append("(?:")
            at = opener.end()
            continue
        out.append(char)
        at += 1
    return "".join(out)


@lru_cache(maxsize=MAX_COMPILED)
def re2_program(
    pattern: str, *, in_lines: bool, spans_lines: bool = False, groups: bool = True
) -> Any:
    """The RE2 program for ``match`` (as written) or for candidates (line anchors, and no
    newline crossed unless the pattern names one); without ``groups``, the same program with
    its groups made non-capturing, for finding spans fast (or as written, should that fail)."""
    if not groups:
        regex = re2_program(pattern, in_lines=in_lines, spans_lines=spans_lines)
        if regex.groups == 0:
            return regex
        try:
            bare = re2_program(_without_groups(pattern), in_lines=in_lines, spans_lines=spans_lines)
        except re2.error:
            return regex
        return bare if bare.groups == 0 else regex
    if not in_lines:
        return re2.compile(pattern, re2_options(never_nl=False))
    return re2.compile(f"(?m){pattern}", re2_options(never_nl=not spans_lines))
