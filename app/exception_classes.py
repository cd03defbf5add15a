"""Exception classes across harvested releases: which pasted class is related to a record's.

A class renamed or refined between releases keeps its message: vLLM raised `ValueError`
where later releases raise `VLLMValidationError`, first a `ValueError` subclass, later one
of its own `VLLMClientError`. Harvest stores each release's exception classes with the names
of their bases (`exception_classes`), and matching reads them as one graph over all
releases plus Python's builtin exceptions, so a paste from either side of the rename still
agrees in part with the record. Names are the last dotted part, as pasted class
names are compared.
"""

import builtins
import json
from collections.abc import Iterable, Mapping

from sqlalchemy import delete, insert, select
from sqlmodel import Session, col

from app import store, upstreams
from app.store.tables import ExceptionClass

MAX_DEPTH = 12  # base-class chains longer than this are cut (and cycles with them)

ClassGraph = Mapping[str, frozenset[str]]
"""Class name -> the names of its bases, in any harvested release or among the builtins."""

_BUILTIN_BASES: dict[str, frozenset[str]] = {
    name: frozenset(base.__name__ for base in value.__bases__)
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def exception_classes(bases: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The classes of ``bases`` (one release's name -> base names) that are exceptions:
    a builtin exception is among their ancestors."""
    known: dict[str, bool] = dict.fromkeys(_BUILTIN_BASES, True)

    def is_exception(name: str, depth: int) -> bool:
        if name in known:
            return known[name]
        known[name] = False  # a cycle, or too deep: not shown to be an exception
        if depth < MAX_DEPTH:
            known[name] = any(is_exception(base, depth + 1) for base in bases.get(name, ()))
        return known[name]

    return {name: tuple(parents) for name, parents in bases.items() if is_exception(name, 0)}


def replace_release(session: Session, release: str, classes: Mapping[str, tuple[str, ...]]) -> None:
    """Make these the exception classes of ``release``."""
    session.execute(delete(ExceptionClass).where(col(ExceptionClass.release) == release))
    rows = [
        {"release": release, "name": name, "bases": json.dumps(list(parents))}
        for name, parents in sorted(classes.items())
    ]
    for start in range(0, len(rows), store.SQL_CHUNK):
        session.execute(insert(ExceptionClass), rows[start : start + store.SQL_CHUNK])


def class_graph(session: Session) -> ClassGraph:
    """Every stored release's classes merged (a class's bases in any release), with the
    builtin exceptions."""
    rows = session.execute(select(col(ExceptionClass.name), col(ExceptionClass.bases)))
    return class_graph_of((name, json.loads(parents)) for name, parents in rows)


def class_graph_of(rows: Iterable[tuple[str, Iterable[str]]]) -> ClassGraph:
    """The graph of these (class, base names) rows, the builtin exceptions and the classes
    the upstream projects define in compiled code (torch's `AcceleratorError`)."""
    graph: dict[str, set[str]] = {name: set(parents) for name, parents in _BUILTIN_BASES.items()}
    for name, bases in upstreams.native_exceptions().items():
        graph.setdefault(name, set()).update(bases)
    for name, parents in rows:
        graph.setdefault(name, set()).update(parents)
    return {name: frozenset(parents - {name}) for name, parents in graph.items()}


def ancestors(name: str, graph: ClassGraph) -> set[str]:
    """Every base of ``name``, and their bases, up to ``MAX_DEPTH`` levels."""
    found: set[str] = set()
    layer = set(graph.get(name, ()))
    for _ in range(MAX_DEPTH):
        layer -= found
        if not layer:
            break
        found |= layer
        layer = {parent for base in layer for parent in graph.get(base, ())}
    return found


def relation(pasted: str, recorded: str, graph: ClassGraph) -> str | None:
    """ "subclass" when the pasted class derives from the record's, "superclass" when the
    record's derives from the pasted one, else None. The roots (`Exception`,
    `BaseException`, `object`) relate everything and so tell nothing."""
    if recorded in _ROOTS or pasted in _ROOTS:
        return None
    if recorded in ancestors(pasted, graph):
        return "subclass"
    if pasted in ancestors(recorded, graph):
        return "superclass"
    return None


_ROOTS = frozenset({"BaseException", "Exception", "object"})
BUILTIN_GRAPH = class_graph_of(())
"""The builtin exceptions alone: what ranking knows when no harvest says more."""
