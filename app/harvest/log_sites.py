"""Log sites: the calls that log a message at WARNING level or above (`logger.warning("x %s",
v)`, `logging.error(f"...")`) and `warnings.warn("...", FutureWarning)`: users paste those
lines as often as exceptions; and the warning a `@deprecated("...")` decorator issues at every
call of what it decorates. Debug and info calls are left out: a release has several times
as many, and people paste the warning or error a problem prints, not the progress around it.
"""

from __future__ import annotations

import ast
import re

from app.harvest.message_pieces import Env, Parts
from app.harvest.messages import parts_of, percent_parts
from app.harvest.raise_sites import CLASS_NAME, call_argument, callee_name

# Logger methods worth a record, and the level a pasted line shows for each (vLLM's
# `warning_once` logs at WARNING); the level is the record's class, as a paste shows it.
LOG_LEVELS = {
    "warning": "WARNING",
    "warn": "WARNING",
    "warning_once": "WARNING",
    "error": "ERROR",
    "exception": "ERROR",
    "error_once": "ERROR",
    "critical": "CRITICAL",
    "fatal": "CRITICAL",
}
# A logger is a name (or attribute) that says so: `logger`, `logging`, `self._log`, `LOG`.
LOGGER_NAME = re.compile(r"(?i)log")
DEFAULT_WARNING = "UserWarning"  # what warnings.warn issues when given no category
DEFAULT_DEPRECATION = "DeprecationWarning"  # what `@deprecated` issues when given none


def log_call(call: ast.Call) -> tuple[str, str, str] | None:
    """(kind, class, level) of a call that logs or warns with a message: `log` and the level
    name for a logger's WARNING-or-above method, `warning` and its category for
    `warnings.warn`; None for any other call. Decided cheaply, since every call statement
    of a release passes here."""
    if call_is_warning(call):
        category = call_argument(call, 1, "category")
        name = DEFAULT_WARNING if category is None else ast.unparse(category).rpartition(".")[2]
        found = "warning", name if CLASS_NAME.fullmatch(name) else DEFAULT_WARNING, "WARNING"
    elif isinstance(call.func, ast.Attribute) and call.func.attr in LOG_LEVELS:
        owner = call.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if not LOGGER_NAME.search(name):
            return None
        found = "log", LOG_LEVELS[call.func.attr], LOG_LEVELS[call.func.attr]
    else:
        return None
    return found if logged_message(call) is not None else None


def deprecation(decorator: ast.expr) -> tuple[str, ast.expr] | None:
    """(category, message) of a `@deprecated("...", category=FutureWarning)` decorator
    (typing_extensions', or warnings' since Python 3.13): what every call of the function or
    class it decorates warns with; torch marks its old APIs so (`torch.cuda.amp.autocast`).
    None for any other decorator, and for `category=None`, which warns at no call."""
    if not isinstance(decorator, ast.Call) or not decorator.args:
        return None
    if callee_name(decorator) != "deprecated":
        return None
    category = next((k.value for k in decorator.keywords if k.arg == "category"), None)
    if isinstance(category, ast.Constant):
        return None
    named = DEFAULT_DEPRECATION if category is None else ast.unparse(category).rpartition(".")[2]
    return named if CLASS_NAME.fullmatch(named) else DEFAULT_DEPRECATION, decorator.args[0]


def logged_message(call: ast.Call) -> ast.expr | None:
    """The message argument of a logger's call or of warnings.warn."""
    return call_argument(call, 0, "message" if call_is_warning(call) else "msg")


def log_parts(call: ast.Call, env: Env) -> Parts | None:
    """The parts of a logged message, formatted with the arguments after it where it has
    %-style specs, as `logging` does (`logger.warning("x %s y", v)`)."""
    first = logged_message(call)
    args = call.args[1:]
    if first is None or not args or call_is_warning(call):
        return None if first is None else parts_of(first, env)
    template = parts_of(first, env)
    if template is None or not all(isinstance(part, str) for part in template):
        return template
    text = "".join(part for part in template if isinstance(part, str))
    values = args[0] if len(args) == 1 else ast.Tuple(list(args), ast.Load())
    return percent_parts(text, values)


def call_is_warning(call: ast.Call) -> bool:
    """`warnings.warn(message, category, stacklevel)`: its other arguments format nothing."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return (
            func.attr == "warn" and isinstance(func.value, ast.Name) and func.value.id == "warnings"
        )
    return isinstance(func, ast.Name) and func.id == "warn"
