"""JSON text from outside (request bodies, record files) -> a value, or the reason it is none.

`json.loads` raises more than `JSONDecodeError` on hostile text: `RecursionError` for deep
nesting (`'[' * 1000`) and `ValueError` for an integer of more than 4,300 digits, which
would escape as 500s and tracebacks. Here each becomes a `JsonTextError`, and values
nested deeper than `MAX_JSON_DEPTH` are refused too, so nothing downstream (schema
validation, error messages that repr a value) recurses into them.

A string holding a NUL or a lone surrogate (`"\\ud800"`, valid JSON) is refused as well:
no reply can encode a lone surrogate as UTF-8 and PostgreSQL cannot store a NUL, so either
would fail later, after the request was counted, instead of being refused where it entered.
"""

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_JSON_DEPTH = 32
"""Most nested arrays and objects accepted; a record nests two deep, a match body two."""
_UNFIT_CHAR = re.compile("[\x00\ud800-\udfff]")
NO_NUL = "^[^\\x00]*$"
"""A string from outside as OpenAPI describes it (a JSON Schema pattern): no NUL, which is
refused here anywhere in a body and in every text parameter: PostgreSQL cannot store or
even compare one."""


@dataclass
class JsonTextError(ValueError):
    """Why a text is not acceptable JSON; `line` and `column` (1-based) where known."""

    reason: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f" at line {self.line} column {self.column}" if self.line is not None else ""
        return f"{self.reason}{where}"


def parse_json(text: str) -> Any:
    """The value of a JSON text; raises JsonTextError naming what is wrong and where."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise JsonTextError(error.msg, error.lineno, error.colno) from None
    except RecursionError:
        raise JsonTextError(f"arrays or objects nested deeper than {MAX_JSON_DEPTH}") from None
    except ValueError:  # the only other one: int() refusing a number's digits
        limit = sys.get_int_max_str_digits()
        raise JsonTextError(f"a number has more than {limit} digits") from None
    if _too_deep(value):
        raise JsonTextError(f"arrays or objects nested deeper than {MAX_JSON_DEPTH}")
    reason = next(filter(None, map(unfit_text, _strings(value))), None)
    if reason:
        raise JsonTextError(f"a string holds {reason}")
    return value


def unfit_text(text: str) -> str | None:
    """Why text from outside cannot be taken (a NUL or a lone surrogate), or None.

    Most texts have neither: that is asked of the string's own flag (ASCII) or of its
    encoding, both in C, before the regex seeks where (docs/benchmarks.md, "Costs behind
    the code's choices")."""
    if "\x00" not in text:
        if text.isascii():
            return None
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: the regex below says where
        else:
            return None
    found = _UNFIT_CHAR.search(text)
    if found is None:
        return None
    what = "a NUL character" if found.group() == "\x00" else "a lone surrogate"
    return f"{what} (U+{ord(found.group()):04X}) at offset {found.start()}"


def _strings(value: Any) -> Iterator[str]:
    """Every string of a parsed value, object keys included; iterative, like _too_deep."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _too_deep(value: Any) -> bool:
    """Whether containers nest deeper than MAX_JSON_DEPTH; iterative, so it cannot recurse."""
    if not isinstance(value, dict | list):
        return False
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                if depth == MAX_JSON_DEPTH:
                    return True
                pending.append((child, depth + 1))
    return False
