"""Messages built elsewhere, as one module's walk meets them: a call that may be a raising
helper's (kept until the release says), and the factory a call names, seen from where it is
made. The walk (app/harvest/collect.py) records the module's factories, `__init__`s and
raising helpers; app/harvest/resolve.py resolves them over the whole release.
"""

from __future__ import annotations

import ast
from typing import TypeVar

from app.harvest.message_pieces import Env

_Found = TypeVar("_Found")  # what `scoped_factory` looks up by the name a call uses


def may_raise_for_caller(call: ast.Call, env: Env) -> bool:
    """Whether a call statement might be a raising helper's: a function or a method of the
    same class, given an argument that reads as a message. Decided cheaply, since every call
    statement of a release passes here."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if not isinstance(func.value, ast.Name) or func.value.id not in ("self", "cls"):
            return False
    elif not isinstance(func, ast.Name):
        return False
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    return any(
        isinstance(value, ast.JoinedStr | ast.BinOp)
        or (isinstance(value, ast.Constant) and isinstance(value.value, str))
        or (isinstance(value, ast.Name) and value.id in env)
        for value in values
    )


def scoped_factory(factories: dict[str, _Found], callee: str, scope: str | None) -> _Found | None:
    """The factory a call names, seen from the function `scope`: a function nested in it or
    in an enclosing one, a method of the enclosing class (`self.name`), or the module's."""
    owner, _, name = callee.rpartition(".")
    if owner not in ("", "self", "cls"):
        return None
    prefixes = []
    parts = scope.split(".") if scope else []
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if not prefix.endswith("<locals>"):
            prefixes += [f"{prefix}.<locals>.{name}", f"{prefix}.{name}"]
    for qualname in [*prefixes, name]:
        if qualname in factories:
            return factories[qualname]
    return None
