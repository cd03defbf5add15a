"""How a raise site is reached: the public entry points (`LLM(...)`, `vllm serve`,
`SamplingParams(...)`, `torch.optim.sgd.SGD(...)`) that lead to it within a few calls.

The callers graph is walked upwards by name, as `app.harvest.context` finds direct callers:
every `name(` in the release's sources is a call of every function of that name, so a chain
is what the code makes possible, not a proof that it runs. Names called from too many places
(`get`, `forward`) are not followed: a chain through them would say nothing. A project names
its entry points (`UpstreamProject.entry_points`) or, for a library called directly (torch),
counts any public function of a public module as one.
"""

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from app.harvest.context import CallSite, find_call_sites, github_link
from app.harvest.sites import Draft, ModuleFacts
from app.upstreams.base import UpstreamProject

MAX_DEPTH = 5  # calls between an entry point and the raising function
MAX_FOLLOWED_CALLERS = 25  # a name called from more places is too common to follow
MAX_ENTRY_POINTS = 3
_CLASS_LINE = re.compile(r"^class (\w+)", re.MULTILINE)
_TOP_LEVEL_LINE = re.compile(r"^[^\s#)\]}]", re.MULTILINE)  # not a bracket closing a header
_CONSTRUCTORS = ("__init__", "__post_init__")  # run by calling the class


@dataclass(frozen=True, slots=True)
class Function:
    """A function of the release: its file, its class (top-level classes only) and name."""

    file_path: str
    owner: str | None
    name: str

    @property
    def called_as(self) -> str:
        """The name a call of it is spelled with: a class's for its `__init__` (and a
        dataclass's `__post_init__`)."""
        return self.owner if self.name in _CONSTRUCTORS and self.owner else self.name

    @property
    def qualname(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner else self.name


@dataclass(frozen=True, slots=True)
class _Edge:
    caller: Function
    site: CallSite


class _Classes:
    """The top-level class around each line of one module, read from its source by
    indentation: a class runs from `class X` to the next line that starts at column 0."""

    def __init__(self, source: str) -> None:
        breaks = [found.start() for found in re.finditer("\n", source)]

        def line_at(offset: int) -> int:
            return bisect_left(breaks, offset) + 1

        tops = [line_at(found.start()) for found in _TOP_LEVEL_LINE.finditer(source)]
        self.spans = []
        for found in _CLASS_LINE.finditer(source):
            first = line_at(found.start())
            after = bisect_right(tops, first)
            last = tops[after] - 1 if after < len(tops) else len(breaks) + 1
            self.spans.append((first, last, found[1]))

    def around(self, line: int) -> str | None:
        return next((name for first, last, name in self.spans if first <= line <= last), None)


def _public(function: Function, package: str) -> bool:
    """A function its users call: no part of its module path, class or name is private."""
    parts = function.file_path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = [*parts, function.owner or "", function.name if function.name != "__init__" else ""]
    return parts[0] == package and not any(part.startswith("_") for part in names if part)


def _label(function: Function, project: UpstreamProject) -> str | None:
    """What the user calls to get there, when this function is an entry point."""
    for entry in project.entry_points:
        if entry.qualname == function.qualname and entry.file.search(function.file_path):
            return entry.label
    if project.public_api_entry_points and _public(function, project.package):
        module = function.file_path.removesuffix(".py").removesuffix("/__init__")
        dotted = ".".join([*module.split("/"), *([function.owner] if function.owner else [])])
        if function.name == "__init__":
            return f"{dotted}(...)" if function.owner else None
        return f"{dotted}.{function.name}(...)"
    return None


def _callers(
    function: Function, calls: list[CallSite], at: Callable[[CallSite], Function]
) -> list[tuple[CallSite, Function]]:
    """The calls of a function to follow: a method's calls from its own class always (a
    `self.name(` there is its own), the others only when the name is rare enough."""
    calls = [site for site in calls if site.function is not None]
    if len(calls) > MAX_FOLLOWED_CALLERS:
        if function.owner is None:
            return []
        calls = [s for s in calls if s.attribute and s.file_path == function.file_path]
        return [(s, caller) for s in calls if (caller := at(s)).owner == function.owner]
    return [(site, at(site)) for site in calls]


def _callers_graph(
    modules: Sequence[ModuleFacts], starts: Iterable[Function]
) -> dict[Function, list[_Edge]]:
    """Each function's callers, MAX_DEPTH levels up from the starting ones: one search of
    the release's sources per level."""
    classes: dict[str, _Classes] = {}
    sources = {facts.file_path: facts.source for facts in modules}
    lookups: dict[str, Any] = {}

    def at(site: CallSite) -> Function:
        if site.file_path not in classes:
            classes[site.file_path] = _Classes(sources[site.file_path])
        owner = classes[site.file_path].around(site.line)
        return Function(site.file_path, owner, site.function or "")

    graph: dict[Function, list[_Edge]] = defaultdict(list)
    frontier = set(starts)
    seen = set(frontier)
    for _ in range(MAX_DEPTH):
        names = {f.called_as for f in frontier if not f.called_as.startswith("__")}
        sites = find_call_sites(modules, names, lookups)
        following = set()
        for function in frontier:
            for site, caller in _callers(function, sites.get(function.called_as, []), at):
                if caller == function:
                    continue
                graph[function].append(_Edge(caller, site))
                if caller not in seen:
                    seen.add(caller)
                    following.add(caller)
        frontier = following
    return graph


class _Reach:
    """The nearest entry points above each raising function, searched once per function."""

    def __init__(
        self, graph: dict[Function, list[_Edge]], project: UpstreamProject, repo: str, ref: str
    ) -> None:
        self.graph, self.project, self.repo, self.ref = graph, project, repo, ref
        self.labels: dict[Function, str | None] = {}
        self.found: dict[Function, list[tuple[str, list[str], tuple[str, int] | None]]] = {}

    def label(self, function: Function) -> str | None:
        if function not in self.labels:
            self.labels[function] = _label(function, self.project)
        return self.labels[function]

    def above(self, start: Function) -> list[tuple[str, list[str], tuple[str, int] | None]]:
        """(label, chain of calls from it down to `start`, the call that leaves it: None
        when `start` is the entry point itself), breadth first."""
        if start in self.found:
            return self.found[start]
        found: list[tuple[str, list[str], tuple[str, int] | None]] = []
        level: list[tuple[Function, list[str], tuple[str, int] | None]] = [
            (start, [start.qualname], None)
        ]
        visited = {start}
        for depth in range(MAX_DEPTH + 1):
            following: list[tuple[Function, list[str], tuple[str, int] | None]] = []
            for function, chain, place in level:
                label = self.label(function)
                if label is not None and all(label != seen for seen, _, _ in found):
                    found.append((label, chain, place))
                if depth == MAX_DEPTH or len(found) >= MAX_ENTRY_POINTS:
                    continue
                for edge in self.graph.get(function, []):
                    if edge.caller not in visited:
                        visited.add(edge.caller)
                        call = (edge.site.file_path, edge.site.line)
                        following.append((edge.caller, [edge.caller.qualname, *chain], call))
            level = following
        self.found[start] = found[:MAX_ENTRY_POINTS]
        return self.found[start]

    def documents(self, start: Function, raised_at: tuple[str, int]) -> list[dict[str, Any]]:
        """The entry points of one raise site as its explanation stores them."""
        return [
            {
                "label": label,
                "calls": chain,
                "source": {
                    "ref": self.ref,
                    "filePath": (place or raised_at)[0],
                    "lineNumber": (place or raised_at)[1],
                    "githubUrl": github_link(self.repo, self.ref, *(place or raised_at)),
                },
            }
            for label, chain, place in self.above(start)
        ]


def add_entry_points(
    drafts: Sequence[Draft],
    modules: Sequence[ModuleFacts],
    project: UpstreamProject,
    repo: str,
    ref: str,
) -> None:
    """Put the entry points that reach each draft's raising function into its explanation."""
    if not project.entry_points and not project.public_api_entry_points:
        return
    starts = {
        id(draft): Function(draft.record["filePath"], draft.class_name, draft.function)
        for draft in drafts
        if draft.function and "explanation" in draft.context
    }
    reach = _Reach(_callers_graph(modules, set(starts.values())), project, repo, ref)
    for draft in drafts:
        start = starts.get(id(draft))
        if start is not None:
            raised_at = (draft.record["filePath"], draft.record.get("lineNumber") or 0)
            draft.context["explanation"]["entryPoints"] = reach.documents(start, raised_at)
