"""The statements an engine sends while a block runs, for the tests that count them (one
statement for a kept reply, the same count on a small and a large store) or explain them."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event

_SKIPPED = re.compile(r"^\s*(INSERT|PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|SHOW)\b")


@contextmanager
def captured(engine: Engine, everything: bool = False) -> Iterator[list[tuple[str, Any]]]:
    """The statements (and their parameters) the engine sends while the block runs: those
    a plan tells something of, or `everything`."""
    statements: list[tuple[str, Any]] = []

    def keep(_conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, many: bool):
        if everything or (not many and not _SKIPPED.match(statement)):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", keep)
