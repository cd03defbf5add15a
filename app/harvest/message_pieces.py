"""The pieces a message is rebuilt from while the harvest reads a module: literal text,
interpolated values, tails a nested block may add, lists of pieces joined into one message.

Below every other harvest module: the raise sites and factories hold them, the collector and the
message rebuilding make them, rendering turns them into templates and patterns.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """An interpolated value; `hint` is the expression (or field name) it is named after."""

    hint: str


@dataclass(frozen=True)
class Maybe:
    """A tail that a nested block may add to a message: `if x: msg += "..."` adds it zero
    times or once, a loop's `msg += "..."` any number of times."""

    parts: Parts
    repeats: bool = False


@dataclass(frozen=True)
class ListMark:
    """Heads the value of a list of message pieces (`errors = []`, then `errors.append(...)`)
    until `sep.join(errors)` makes it a message; `nonempty` once an `if errors:` around the
    use says it holds at least one piece."""

    nonempty: bool = False


@dataclass(frozen=True)
class Item:
    """One piece appended to a list of message pieces."""

    parts: Parts


@dataclass(frozen=True)
class Joined:
    """`sep.join(pieces)`: one or more of the pieces (each appended under its own condition,
    so any of them may be missing), separated by `sep`; none at all when `optional`."""

    items: tuple[Parts, ...]
    sep: str
    optional: bool
    shown: int = 0  # letters and digits every message shows: its always-appended pieces'


Part = str | Field | Maybe | Joined | ListMark | Item
Parts = tuple[Part, ...]
# Local name -> message parts it was last assigned, in front of the module's constants. A
# constant a function shadows by assigning the same name is rare enough to be ignored.
Env = ChainMap[str, Parts]


def child_env(env: Env) -> Env:
    """A copy for a nested block: its own locals, the same constants behind them."""
    return ChainMap(dict(env.maps[0]), *env.maps[1:])
