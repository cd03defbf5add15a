"""Opaque paging cursors: one codec for record listings and search rankings.

A cursor is URL-safe base64 of a short ASCII text, without padding. What the text holds is
the caller's business (a record id, a position); the caller checks it and refuses a cursor
it did not make, and so does `decode_cursor` for text that is not even base64 of ASCII. Either
way the answer is the same 400.
"""

import base64
import binascii
from collections.abc import Callable

from app.app_error import AppError

INVALID_CURSOR = "cursor must be a value returned as nextCursor"


def encode_cursor(value: str) -> str:
    """The cursor that carries `value`."""
    return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, valid: Callable[[str], bool]) -> str:
    """The value a cursor carries, when `valid` accepts it; otherwise a 400."""
    try:
        value = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        value = ""
    if not valid(value):
        raise AppError(400, "Invalid cursor", INVALID_CURSOR)
    return value
