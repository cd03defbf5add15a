"""What encloses a site inside its function: the tests it runs under (its guard) and the
`except` clauses around it (the classes it translates).

A site's guard is the `if` tests around it, the negated tests of the early exits before it
(`if x: return`) and an assert's or a check's own condition, negated, joined with `and` as
source text.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_GUARD_CHARS = 1000
_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


@dataclass(frozen=True)
class Context:
    """What encloses a statement inside its function: `if` tests, `except` clauses."""

    conditions: tuple[ast.expr, ...] = ()
    translates: tuple[str, ...] = ()


def add_condition(ctx: Context, condition: ast.expr) -> Context:
    return Context((*ctx.conditions, condition), ctx.translates)


def negated(test: ast.expr) -> ast.expr:
    """`not test`, simplified only where exact: `not not x` -> x, `a >= b` -> `a < b`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        return ast.Compare(test.left, [_FLIPPED[type(test.ops[0])]()], test.comparators)
    return ast.UnaryOp(ast.Not(), test)


def guard_text(conditions: tuple[ast.expr, ...]) -> str | None:
    """The conditions joined with `and`, as source text."""
    if not conditions:
        return None
    node = conditions[0] if len(conditions) == 1 else ast.BoolOp(ast.And(), list(conditions))
    text = ast.unparse(node)
    return text if len(text) <= MAX_GUARD_CHARS else text[: MAX_GUARD_CHARS - 1] + "…"


def early_exit(node: ast.stmt) -> ast.expr | None:
    """The test of `if test: return` (or continue, break, raise): later siblings run only
    when it is false."""
    if isinstance(node, ast.If) and not node.orelse and isinstance(node.body[-1], EXITS):
        return node.test
    return None


def caught(handler: ast.ExceptHandler) -> tuple[str, ...]:
    """The short class names an `except` clause catches."""
    if handler.type is None:
        return ("BaseException",)
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return tuple(ast.unparse(t).rpartition(".")[2] for t in types)
