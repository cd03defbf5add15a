"""The raise sites a statement makes, and the scope that names their function and class.

Raise sites are `raise X(...)` statements, `assert cond, "message"` (AssertionError),
`torch._check*(cond, lambda: "message")` calls, and the calls a server makes to answer an
HTTP error response with a message (`create_error_response("...", err_type="NotFoundError")`):
users paste that JSON body as they paste a traceback.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from app import upstreams
from app.harvest.message_pieces import Env, Field, Maybe, child_env
from app.harvest.messages import parts_message, parts_of, tailed_message
from app.harvest.sites import Message, RaiseSite, SkipReason

MAX_DOCSTRING_CHARS = 600
CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# Check functions (torch._check*): the exception each raises when its condition is false.
CHECKS = upstreams.checks()
CHECK_NAMES = frozenset(name.rpartition(".")[2] for name in CHECKS)
# Functions that answer an HTTP error response; the class and status they answer by default.
RESPONSES = upstreams.error_responses()
RESPONSE_CLASS, RESPONSE_STATUS = "BadRequestError", HTTPStatus.BAD_REQUEST.value


@dataclass(frozen=True)
class Scope:
    """Where a statement sits: enough to name the enclosing function and class."""

    qualname: str | None = None
    function: str | None = None
    class_name: str | None = None
    in_function: bool = False
    docstring: str | None = None

    def enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Scope:
        if self.qualname is None:
            qualname = node.name
        else:
            locals_marker = ".<locals>" if self.in_function else ""
            qualname = f"{self.qualname}{locals_marker}.{node.name}"
        if isinstance(node, ast.ClassDef):
            return Scope(qualname, self.function, node.name, False, self.docstring)
        return Scope(qualname, node.name, self.class_name, True, _first_paragraph(node))


def _first_paragraph(node: ast.AST) -> str | None:
    """The first paragraph of a function's docstring, on one line."""
    try:
        doc = ast.get_docstring(node)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not doc:
        return None
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return paragraph[:MAX_DOCSTRING_CHARS] or None


def raise_site(node: ast.Raise, env: Env, scope: Scope) -> RaiseSite:
    exc = node.exc
    error_class: str | None = None
    message: Message | None = None
    call: ast.Call | None = None
    hint: ast.expr | None = None
    if exc is None:
        skip: SkipReason | None = SkipReason.RERAISE
    elif not isinstance(exc, ast.Call):
        error_class = ast.unparse(exc)
        # A capitalised name is a class raised without arguments; anything else an instance.
        raised_class = error_class.rpartition(".")[2][:1].isupper()
        skip = SkipReason.NO_MESSAGE if raised_class else SkipReason.RERAISE_VARIABLE
    else:
        error_class = ast.unparse(exc.func)
        hint = exc.args[0] if exc.args else None
        if CLASS_NAME.fullmatch(error_class):
            message, skip = _call_message(exc, env)
            call = exc
        else:  # `raise errors[kind](...)`: no class name a record could hold
            skip = SkipReason.DYNAMIC_CLASS
    env_then = child_env(env) if call is not None else None
    return site_at(node, scope, error_class, message, skip, hint_node=hint, call=call, env=env_then)


def callee_name(call: ast.Call) -> str | None:
    """The name a call's function goes by (`f` of `f(...)` and of `self.f(...)`)."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def call_argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    """A call's argument, by keyword or by position."""
    named = next((k.value for k in call.keywords if k.arg == keyword), None)
    if named is not None or len(call.args) <= position:
        return named
    argument = call.args[position]
    return None if isinstance(argument, ast.Starred) else argument


def response_class(call: ast.Call) -> str:
    """The error type an error response names: its `err_type` literal, else the default."""
    named = call_argument(call, 1, "err_type")
    literal = named.value if isinstance(named, ast.Constant) else None
    return literal if isinstance(literal, str) and CLASS_NAME.fullmatch(literal) else RESPONSE_CLASS


def response_status(node: ast.expr | None) -> int | None:
    """The HTTP status an error response answers: an integer, `HTTPStatus.NAME`, the
    default when none is given, None when it is computed."""
    if node is None:
        return RESPONSE_STATUS
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value if 100 <= node.value <= 599 else None
    if isinstance(node, ast.Attribute) and node.attr in HTTPStatus.__members__:
        return HTTPStatus[node.attr].value
    return None


def message_site(
    node: ast.stmt, error_class: str, expr: ast.expr, env: Env, scope: Scope, kind: str
) -> RaiseSite:
    """An assert's or a torch check's site: its class is fixed, its message an expression."""
    message, skip = parts_message(parts_of(expr, env))
    return site_at(node, scope, error_class, message, skip, kind=kind, hint_node=expr)


def site_at(
    node: ast.stmt,
    scope: Scope,
    error_class: str | None,
    message: Message | None,
    skip: SkipReason | None,
    **found: Any,
) -> RaiseSite:
    """A raise site at this statement, in this scope."""
    return RaiseSite(
        node.lineno,
        scope.qualname,
        scope.function,
        scope.class_name,
        error_class,
        message,
        skip,
        docstring=scope.docstring,
        **found,
    )


def _call_message(call: ast.Call, env: Env) -> tuple[Message | None, SkipReason | None]:
    """The message of `X(first_arg, ...)`, or why it has none we can match."""
    if not call.args:  # `X(msg=...)`: the class builds its message, out of our sight
        return None, SkipReason.DYNAMIC_MESSAGE if call.keywords else SkipReason.NO_MESSAGE
    return tailed_message(parts_of(call.args[0], env), keyword_suffix(call))


def keyword_suffix(call: ast.Call) -> Maybe | None:
    """` (parameter=..., value=...)`, which vLLM's VLLMValidationError appends to its message
    for the keywords given (a None value leaves its part out), optional: a server's answer
    shows the message without it."""
    name = ast.unparse(call.func).rsplit(".", 1)[-1]
    keywords = upstreams.keyword_suffixes().get(name, ())
    given = [k.arg for k in call.keywords if k.arg in keywords]
    if not given:
        return None
    inner: list[Any] = [f"{given[0]}=", Field(given[0])]
    for keyword in given[1:]:
        inner.append(Maybe((f", {keyword}=", Field(keyword))))
    return Maybe((" (", *inner, ")"))
