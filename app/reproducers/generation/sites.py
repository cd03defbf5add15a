"""What the reproducer generator takes and what it answers: a draft's raise site, the script
made for it, or the reason there is none (`Reason`).

Below every other module of the generator: each step raises `Unsupported` with its reason,
and `reproducer.generate` turns it into a `Skipped` the bulk run counts.
"""

from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Why a site gets no generated script."""

    NO_SOURCE = "the source file is not in the release"
    NOT_INSTALLED = (
        "raised in an older release of a project run as installed (torch), not in the one"
        " installed here"
    )
    MODULE_LEVEL = "raised at module level, outside a function"
    NESTED = "raised in a nested function or class"
    NOT_A_RAISE = (
        "not a raise or assert statement (a check call, a raising helper or an error response)"
    )
    IN_BLOCK = "raised inside a loop, try, with or match block"
    NO_GUARD = "no condition guards the raise"
    GUARD_SHAPE = "the guard is not a comparison, membership, None or truth test of values"
    COMPUTED = "the guard reads a local computed in the function, or another object"
    TOO_MANY = "the guard reads more values than the search chooses at once"
    UNSOLVED = "no candidate values make the guard true, or false again"
    NO_VALUE_READ = (
        "a condition on the way reads an attribute the script's argument lacks (a None"
        " placeholder, or a stand-in object without it)"
    )
    ONE_LINE = "the guard and the raise share one line"
    UNSET_STATE = (
        "the method reads, before its guard, an attribute its class's __init__ computes from"
        " its arguments (the script's object is made without __init__)"
    )
    UNREACHABLE = "the function cannot be called from outside (closure, class method state)"


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """A draft's raise site: where it is, what it raises, and in which release."""

    record_id: str
    error_class: str
    package: str
    version: str
    module: str  # dotted import name of the file
    line: int
    function: str | None


@dataclass(frozen=True, slots=True)
class Generated:
    """A generated reproducer: its script and the two calls it makes."""

    record_id: str
    package: str
    version: str
    module: str
    trigger_call: str
    fix_call: str
    direct_state: bool
    script: str
    devices: tuple[str, ...] = ("cpu",)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A site the generator cannot handle, and why."""

    record_id: str
    reason: Reason


class Unsupported(Exception):
    """A step of the generator met a site it cannot handle: the site gets no script, and
    `reproducer.generate` answers the reason as a `Skipped`."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


def module_name(file_path: str, prefix: str = "") -> str:
    """`vllm/config/cache.py` -> `vllm.config.cache` (a package's `__init__` is the package)."""
    path = file_path.removeprefix(prefix).removesuffix(".py")
    parts = path.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)
