"""What the harvest finds and returns: raise sites, messages, draft records, the facts of one
module and why a site has no message.

A module of its own, below the steps that make these (reading modules, resolving messages,
rendering drafts) and the ones that add to them (context, explanations), so that none of them
imports another to know its data.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.harvest.message_pieces import Env, Parts

UNKNOWN_CLASS = "Exception"  # what a draft names when only run time decides the class
LOG_KINDS = frozenset({"log", "warning"})  # sites that log or warn rather than raise
ProgressCallback = Callable[[int, int, str], None]
"""Called after each file with (files done, files in all, filePath)."""


class SkipReason(StrEnum):
    """Why a raise site, or a whole file, has no message to match (see `located`)."""

    RERAISE = "re-raise"
    RERAISE_VARIABLE = "re-raise variable"
    NO_MESSAGE = "no message"
    DYNAMIC_CLASS = "dynamic exception class"
    DYNAMIC_MESSAGE = "dynamic message"
    NO_LITERAL_TEXT = "no literal text"
    MESSAGE_TOO_LONG = "message too long"
    BARE_ASSERT = "assert without a message"
    UNPARSABLE_FILE = "unparsable file"


# Sites skipped for these reasons still get a draft, matched by where they raise;
# one whose class is decided at run time names UNKNOWN_CLASS.
LOCATED_REASONS = frozenset(
    {
        SkipReason.DYNAMIC_MESSAGE,
        SkipReason.NO_LITERAL_TEXT,
        SkipReason.MESSAGE_TOO_LONG,
        SkipReason.DYNAMIC_CLASS,
        SkipReason.BARE_ASSERT,
    }
)


@dataclass(frozen=True)
class Message:
    """A message as the seeds write it: a `{name}` template and its fullmatch pattern."""

    template: str
    pattern: str
    placeholders: tuple[str, ...]
    others: tuple[Message, ...] = ()  # the other pieces a join of pieces may raise alone
    # The template the record's id comes from, where it differs: without an optional tail
    # the exception class appends, so that the site keeps its record across releases.
    identity: str | None = None


@dataclass(frozen=True)
class RaiseSite:
    """One raise site: where it is, what it raises, its message or why none, and what the
    code checks to get there (`guard`, and the exceptions an `except` around it catches)."""

    line: int
    qualname: str | None  # Python's __qualname__ of the enclosing def/class; None: module level
    function: str | None  # innermost enclosing function
    class_name: str | None  # innermost enclosing class
    error_class: str | None  # as written, e.g. "torch.OutOfMemoryError"; None for bare raise
    message: Message | None
    skip: SkipReason | None  # set exactly when message is None
    kind: str = "raise"  # raise | assert | check | call (of a raising helper) | response
    # | log (a logger's call) | warning (warnings.warn)
    level: str | None = None  # a log or warning site's level: WARNING, ERROR, CRITICAL
    http_status: int | None = None  # the status an error response answers
    guard: str | None = None
    translates: tuple[str, ...] = ()
    docstring: str | None = None  # first paragraph of the enclosing function's docstring
    macro: str | None = None  # a native site's check macro (`TORCH_CHECK_VALUE`)
    hint_node: ast.expr | None = field(default=None, compare=False, repr=False)
    call: ast.Call | None = field(default=None, compare=False, repr=False)
    env: Env | None = field(default=None, compare=False, repr=False)


@dataclass
class Draft:
    """A draft record plus what the record schema has no field for."""

    record: dict[str, Any]
    function: str | None
    class_name: str | None
    qualname: str | None
    located: bool = False  # the message is fully dynamic: matched by where it raises
    site: RaiseSite | None = field(default=None, repr=False)
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class HarvestResult:
    """Drafts of one source tree and the counts that say how complete they are."""

    drafts: list[Draft] = field(default_factory=list)
    files: int = 0  # Python files parsed
    raise_sites: int = 0  # raise sites in them, drafted or skipped
    log_sites: int = 0  # log and warning sites with a message template, all drafted
    skipped: Counter[str] = field(default_factory=Counter)  # SkipReason -> sites (or files)
    located: int = 0  # drafts of dynamic messages, matched by their raise site
    native_files: int = 0  # C++/CUDA files read with a check macro in them
    native_sites: int = 0  # native sites drafted in them
    library_sites: int = 0  # message literals drafted from compiled libraries
    nvidia_errors: int = 0  # error codes of the CUDA runtime and NCCL, drafted where reported
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> base names


@dataclass(frozen=True)
class Factory:
    """A message built elsewhere: a function's `return X(...)`, a class's `__init__`
    passing a message to its base, or a raising helper's `raise X(message)` where `message`
    is its parameter. Its parameters become the caller's arguments."""

    params: tuple[str, ...]
    call: ast.Call  # the returned call; for an __init__, the base __init__ call
    env: Env
    message_arg: int = 0  # which argument of `call` is the message
    qualname: str | None = None  # where the returned call is made, to resolve its callee


@dataclass(frozen=True)
class TryBlock:
    """An `except` clause and the lines of the `try` body it covers."""

    first: int
    last: int
    catches: tuple[str, ...]  # short class names; bare `except:` is BaseException
    line: int


@dataclass
class ModuleFacts:
    """What one module tells the release-wide passes: its raise sites and what resolves
    them, and where its functions and try blocks are (for callers and handlers)."""

    file_path: str
    source: str
    sites: list[RaiseSite] = field(default_factory=list)
    factories: dict[str, Factory] = field(default_factory=dict)  # qualname -> factory
    init_messages: dict[str, Factory] = field(default_factory=dict)  # class -> its __init__
    raisers: dict[str, Factory] = field(default_factory=dict)  # qualname -> what it raises
    helper_calls: list[RaiseSite] = field(default_factory=list)  # calls that may be raisers'
    bare_asserts: list[RaiseSite] = field(default_factory=list)  # `assert cond` alone
    log_sites: list[RaiseSite] = field(default_factory=list)  # logger and warnings calls
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> base names
    # module-level messages by name (`ERR = "..."`), and a dict's by `NAME['key']`
    constants: dict[str, Parts] = field(default_factory=dict)
    functions: list[tuple[int, int, str]] = field(default_factory=list)  # first, last, name
    tries: list[TryBlock] = field(default_factory=list)
