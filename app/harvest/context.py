"""What the code around a raise site tells a user: the function and its docstring,
the condition that leads to the raise (`guard`, from extract), who calls the function in the
same release (`callers`), which `except` clauses around those calls catch the error
(`handlers`), and the other sites that raise the same message (`sameMessageAt`).

Callers are found by name: every `name(` in the release's sources, as a bare call or an
attribute (`self.free_buffer(`), from each module's calls read once by one regular
expression (the entry points ask again for each level of callers); an `__init__` is called
through its class's name. Name lookup cannot tell two functions of one
name apart, so callers in the raise's own file and class come first.
"""

import builtins
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.harvest.sites import Draft, ModuleFacts, TryBlock

MAX_CALLERS = 10
MAX_HANDLERS = 10
MAX_SAME_MESSAGE = 10
MAX_CALL_SITES_PER_NAME = 2000  # a very common name (`get`) stops being collected here
_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\(")


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call of a function by name: where, in which function, with which try around it."""

    file_path: str
    line: int
    function: str | None
    attribute: bool  # `x.name(`, not `name(`
    handlers: tuple[TryBlock, ...]


class _Module:
    """Line and scope lookups of one module's source."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.starts = [0]
        at = facts.source.find("\n")
        while at != -1:
            self.starts.append(at + 1)
            at = facts.source.find("\n", at + 1)
        # The innermost function of each line: outer functions first, inner ones overwrite.
        self.functions: list[str | None] = [None] * (len(self.starts) + 2)
        for first, last, name in sorted(self.facts.functions):
            self.functions[first + 1 : last + 1] = [name] * (last - first)
        self._calls: dict[str, list[int]] | None = None

    def calls(self) -> dict[str, list[int]]:
        """Where each name is called (`name(` not inside a longer name), in file order."""
        if self._calls is None:
            self._calls = defaultdict(list)
            source = self.facts.source
            for call in _CALL.finditer(source):
                start = call.start()
                if not start or source[start - 1] not in _IDENTIFIER_CHARS:
                    self._calls[call.group()[:-1]].append(start)
        return self._calls

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def function_at(self, line: int) -> str | None:
        """The innermost function whose body holds this line."""
        return self.functions[line] if line < len(self.functions) else None

    def handlers_at(self, line: int) -> tuple[TryBlock, ...]:
        """The except clauses whose try body holds this line, innermost first."""
        around = [block for block in self.facts.tries if block.first <= line <= block.last]
        return tuple(sorted(around, key=lambda block: -block.first))


def _callee_names(drafts: Sequence[Draft]) -> set[str]:
    """The names through which each raising function is called."""
    names = set()
    for draft in drafts:
        if draft.function == "__init__" and draft.class_name:
            names.add(draft.class_name)
        elif draft.function and not draft.function.startswith("__"):
            names.add(draft.function)
    return names


def find_call_sites(
    modules: Sequence[ModuleFacts], names: set[str], lookups: dict[str, _Module] | None = None
) -> dict[str, list[CallSite]]:
    """Every `name(` of these names in the modules, by name, in file order; `lookups`
    keeps each module's line tables and calls for the next search of the same release."""
    lookups = {} if lookups is None else lookups
    found: dict[str, list[CallSite]] = defaultdict(list)
    if not names:
        return found
    for facts in modules:
        module = lookups.get(facts.file_path)
        if module is None:
            module = lookups[facts.file_path] = _Module(facts)
        source = facts.source
        calls = module.calls()
        for name in [called for called in calls if called in names]:
            sites = found[name]
            for start in calls[name]:
                if len(sites) >= MAX_CALL_SITES_PER_NAME:
                    break
                line_start = source.rfind("\n", 0, start) + 1
                prefix = source[line_start:start].strip()
                if prefix.endswith(("def", "class")) or prefix.startswith("#"):
                    continue
                line = module.line_of(start)
                sites.append(
                    CallSite(
                        facts.file_path,
                        line,
                        module.function_at(line),
                        start > 0 and source[start - 1] == ".",
                        module.handlers_at(line),
                    )
                )
    return found


def _catchers(error_class: str, bases: dict[str, tuple[str, ...]]) -> set[str]:
    """The short class names an `except` may name to catch this class: itself and its
    ancestors, from the release's classes and then Python's built-in hierarchy."""
    names, pending = set(), [error_class.rpartition(".")[2]]
    while pending:
        name = pending.pop()
        if name in names:
            continue
        names.add(name)
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            names.update(cls.__name__ for cls in builtin.__mro__ if cls is not object)
        pending.extend(bases.get(name, ()))
    return names | {"Exception", "BaseException"}


def github_link(repo: str, ref: str, file_path: str, line: int) -> str:
    """A line of a release's file on GitHub, pinned to the release's ref."""
    return f"https://github.com/{repo}/blob/{ref}/{file_path}#L{line}"


def _rank_callers(file_path: str, sites: list[CallSite]) -> list[CallSite]:
    """Same file first (a method called on self), then the nearest folders."""
    here = file_path.split("/")

    def closeness(site: CallSite) -> tuple[int, int, str, int]:
        there = site.file_path.split("/")
        shared = next((i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b), 0)
        return (site.file_path != file_path, -shared, site.file_path, site.line)

    return sorted(sites, key=closeness)


def add_context(
    drafts: Sequence[Draft],
    modules: Sequence[ModuleFacts],
    bases: dict[str, tuple[str, ...]],
    repo: str,
    ref: str,
) -> None:
    """Fill in each draft's `context`: function, docstring, guard, callers, handlers and
    the other sites of its message."""
    calls = find_call_sites(modules, _callee_names(drafts))
    same_message: dict[tuple[str, str], list[Draft]] = defaultdict(list)
    for draft in drafts:
        if not draft.located:
            same_message[(draft.record["errorClass"], draft.record["errorMessage"])].append(draft)
    ranked: dict[tuple[str, str], list[CallSite]] = {}  # drafts of one function share it
    for draft in drafts:
        site = draft.site
        record = draft.record
        name = draft.class_name if draft.function == "__init__" else draft.function
        key = (name or "", record["filePath"])
        if key not in ranked:
            ranked[key] = _rank_callers(record["filePath"], calls.get(name or "", []))
        callers = [c for c in ranked[key] if c.line != record["lineNumber"]]
        catchers = _catchers(record["errorClass"], bases)
        handlers: dict[tuple[str, int], tuple[CallSite, TryBlock]] = {}
        for caller in callers:
            block = next((b for b in caller.handlers if catchers & set(b.catches)), None)
            if block is not None:
                handlers.setdefault((caller.file_path, block.line), (caller, block))
        others = [
            other
            for other in same_message.get((record["errorClass"], record["errorMessage"]), [])
            if other is not draft
        ]
        draft.context = {
            "function": draft.function,
            "className": draft.class_name,
            "docstring": site.docstring if site else None,
            "guard": site.guard if site else None,
            "translates": list(site.translates) if site else [],
            "callers": [
                _place(repo, ref, c.file_path, c.line, c.function) for c in callers[:MAX_CALLERS]
            ],
            "handlers": [
                _place(repo, ref, caller.file_path, block.line, caller.function)
                | {"catches": list(block.catches), "callLine": caller.line}
                for caller, block in list(handlers.values())[:MAX_HANDLERS]
            ],
            "sameMessageAt": [
                _place(repo, ref, o.record["filePath"], o.record["lineNumber"], o.function)
                for o in others[:MAX_SAME_MESSAGE]
            ],
        }


def _place(repo: str, ref: str, file_path: str, line: int, function: str | None) -> dict[str, Any]:
    return {
        "filePath": file_path,
        "lineNumber": line,
        "function": function,
        "githubUrl": github_link(repo, ref, file_path, line),
    }
