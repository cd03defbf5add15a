"""Exception lines and class names: where the class and the message sit in a line, and whether
a name found outside a traceback is an exception's."""

import builtins
import re
from dataclasses import dataclass

from app.matching.tracebacks.rows import Row

_EXCEPTION_LINE = re.compile(
    r"(?P<name>[^\W\d]\w{0,127}(?:\.[^\W\d]\w{0,127}){0,15}(?:\([\w.]{1,256}\))?)"
    r"(?P<colon>:(?: (?P<message>.*))?)?"
)
_MODULE = re.compile(r"[a-z_][a-z0-9_]{0,127}")

# A bare line is only taken for an exception when its class name says so.
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt")
_TOO_GENERIC = frozenset({"Error", "Warning", "Exit", "Interrupt"})
_BUILTIN_EXCEPTIONS = (
    frozenset(
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    )
    - _TOO_GENERIC
)


@dataclass(frozen=True, slots=True)
class Head:
    """Where the class name and the message sit in an exception line (row coordinates)."""

    name: str
    name_start: int
    name_end: int
    message_start: int | None


def exception_head(row: Row, lenient: bool, start: int | None = None) -> Head | None:
    """Parse ``Class: message`` or a lone ``Class`` (at ``start``, else at the indent).

    Right after a traceback's frames any dotted name is an exception class; elsewhere
    (``lenient`` false) the name must look like one, or ordinary log lines such as
    ``Note: ...`` would be taken for exceptions. A lone name on a line the end of the paste
    cut (``eng`` of ``engine``) must look like one too.
    """
    indent = row.indent if start is None else start
    match = _EXCEPTION_LINE.fullmatch(row.text, indent)
    if match is None:
        return None
    lenient = lenient and not (row.cut and match["colon"] is None)
    if not (lenient or looks_like_exception(match["name"])):
        return None
    if match["colon"] is None:
        message_start = None
    elif match["message"] is None:
        message_start = match.end("colon")
    else:
        message_start = match.start("message")
    return Head(match["name"], indent, match.end("name"), message_start)


def looks_like_exception(name: str) -> bool:
    """Whether a class name found outside a traceback is an exception's.

    Builtins, names ending in Error/Exception/Warning/Exit/Interrupt, and module-qualified
    CapWords names (``torch.OutOfMemoryError``, ``vllm.v1.engine.exceptions.EngineDeadError``).
    """
    modules, _, short = name.partition("(")[0].rpartition(".")
    if short in _BUILTIN_EXCEPTIONS:
        return True
    if short[:1].isupper() and short.endswith(_EXCEPTION_SUFFIXES) and short not in _TOO_GENERIC:
        return True
    return (
        bool(modules)
        and short[:1].isupper()
        and all(_MODULE.fullmatch(part) for part in modules.split("."))
    )
