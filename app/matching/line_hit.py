"""A record's pattern found on one line of a paste, placed: in which exception, if any, and
whether on its message.

The service places every hit of the index (app.matching.index.Hit, a position in the scanned
text) this way; second chances (app.matching.partial) and ranking (app.matching.rank) read
them. A NamedTuple: a flooded paste makes thousands, and it costs what a plain tuple costs to
make and to unpack (`bench/bench_match.py`).
"""

from typing import NamedTuple


class LineHit(NamedTuple):
    """`record_id`'s pattern found on `line` (the clean line, or the string a quoted message
    holds); `exception_index` is None for a line outside any exception (a log line), and
    `on_message` says whether the line is a message line of that exception."""

    record_id: str
    exception_index: int | None
    line: str
    on_message: bool
