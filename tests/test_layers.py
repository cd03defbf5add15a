"""Imports point one way, down the floors of FLOORS, with no cycle; docs/architecture.md
draws them.

A module imports modules of its own floor or of the floors below, never above. On a floor
other than the ground, one package imports another of its floor only along an edge of
ALLOWED, each with its reason: the services stand in one row, and what more than one of them
needs lives on a floor below them (the records, the store, the ground), not inside one that
the others reach sideways into. The ground floor is shared knowledge that imports nothing
above it; its modules use each other freely.

Read from the source with ast, so a violation fails here before it becomes a cycle or a
slow import somewhere else.

What counts as an import for the floors: every import, at a module's top, inside a function
or under `if TYPE_CHECKING:` (a type named is knowledge used). What counts for the cycle
check: every import that runs, at a module's top or inside a function. An import moved into
a function still ties the two modules together (it only hides the cycle until the function
runs), so it counts. Imports under `if TYPE_CHECKING:` never run and name types only: they
are left out. Importing a submodule runs its package's `__init__` first; that implied edge
is left out too (a package's `__init__` only re-exports), but `from app.harvest import X`
is an import of the package.
"""

import ast
import re
from pathlib import Path

from app.config import PROJECT_ROOT

APP = PROJECT_ROOT / "app"
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # app.client runs in other people's programs (the hook, the pytest plugin): an entry point.
    ("entry points", ("app.main", "app.cli", "app.client")),
    ("presentation", ("app.api", "app.web")),
    ("serving", ("app.serving", "app.lifecycle")),
    (
        "services",
        ("app.matching", "app.search", "app.harvest", "app.reproducers", "app.curation", "app.ops"),
    ),
    ("domain", ("app.records", "app.exception_classes")),
    ("store", ("app.store",)),
    (
        "ground",
        (
            "app.records.model",
            "app.config",
            "app.upstreams",
            "app.patterns",
            "app.app_error",
            "app.cursor",
            "app.jsontext",
            "app.wire",
        ),
    ),
)
"""Top to bottom. A package's module sits on the floor of the longest name that holds it:
the typed record (app/records/model.py, generated from the schema, with no logic) is the
vocabulary every floor shares, the store's tables included, so it stands on the ground."""
GROUND = "ground"

ALLOWED: dict[tuple[str, str], str] = {
    ("app.cli.serve", "app.main"): "errkb serve runs the application that create_app builds",
    ("app.cli.answering", "app.client"): "errkb match|search|show answer as the client does",
    ("app.search.service", "app.matching"): "a query that is an error line is matched first",
    ("app.reproducers.harness", "app.matching"): "a reproducer's error must match its record",
    ("app.curation.scaffold", "app.harvest.drafts"): "a draft's origin names its release",
    ("app.curation.stats", "app.reproducers"): "the overview shows reproducer runs and drift",
    ("app.serving.services", "app.lifecycle.readiness"): "/readyz reads what start-up sets",
}
"""(importer, imported) -> why: the only imports from one package into another of its floor
(above the ground). Either side is a module or a package, which holds its modules."""


def _module(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in sorted(APP.rglob("*.py"))}


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _module_of(name: str) -> str | None:
    """The app module an imported name lives in: the name itself, or the nearest parent."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, *, types: bool = True) -> set[str]:
    """The app modules this file imports, those under `if TYPE_CHECKING:` only with `types`:
    see the module docstring."""
    found = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if not types and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in MODULES
                else node.module
                for alias in node.names
            )
        pending.extend(ast.iter_child_nodes(node))
    return {module for name in found if (module := _module_of(name))}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    pending = list(graph.get(start, ()))
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(graph.get(module, ()))
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others."""
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {
        tuple(sorted(other for other in reach[module] if module in reach[other]))
        for module in graph
        if module in reach[module]
    }
    return sorted(list(group) for group in groups)


def _names(path: Path) -> set[str]:
    """The names a file uses or imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


def _floor(module: str) -> tuple[int, str]:
    """The floor a module stands on (0 the top) and the package of FLOORS that holds it."""
    held = [
        (len(package), number, package)
        for number, (_, packages) in enumerate(FLOORS)
        for package in packages
        if _within(module, (package,))
    ]
    assert held, f"{module} stands on no floor: name its package in FLOORS"
    _, number, package = max(held)
    return number, package


def _edges() -> set[tuple[str, str]]:
    """(importer, imported) for every import of one app module by another, see the module
    docstring; the root package `app` (a docstring) is left out."""
    return {
        (module, imported)
        for module, path in MODULES.items()
        if module != "app"
        for imported in _imports(path)
        if imported not in ("app", module)
    }


def _allowed(importer: str, imported: str) -> str | None:
    return next(
        (
            why
            for (source, target), why in ALLOWED.items()
            if _within(importer, (source,)) and _within(imported, (target,))
        ),
        None,
    )


def _short(name: str) -> str:
    """A name as docs/architecture.md writes it."""
    return name.removeprefix("app.")


def test_the_cycle_finder_finds_a_cycle_through_other_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"], ["e"]]


def test_no_import_cycle_among_app_modules() -> None:
    graph = {module: _imports(path, types=False) - {module} for module, path in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cli_and_the_client_do_not_import_the_api() -> None:
    """They call the services and print the shapes of app/wire, as the API answers them."""
    found = [
        f"{importer} imports {imported}"
        for importer, imported in _edges()
        if _within(importer, ("app.cli", "app.client")) and _within(imported, ("app.api",))
    ]
    assert found == []


def test_every_module_stands_on_one_floor() -> None:
    packages = [package for _, floor in FLOORS for package in floor]
    assert len(packages) == len(set(packages))
    for module in MODULES:
        if module != "app":
            _floor(module)


def test_no_module_imports_a_higher_floor() -> None:
    upward = sorted(
        f"{importer} ({FLOORS[_floor(importer)[0]][0]}) imports {imported} "
        f"({FLOORS[_floor(imported)[0]][0]})"
        for importer, imported in _edges()
        if _floor(imported)[0] < _floor(importer)[0]
    )
    assert upward == []


def test_packages_of_one_floor_import_each_other_only_as_allowed() -> None:
    """The services stand in one row: one reaches into another only along an edge of
    ALLOWED; so do the entry points, the API and the pages, serving and the lifecycle."""
    sideways = sorted(
        f"{importer} imports {imported}"
        for importer, imported in _edges()
        if (floor := _floor(importer))[0] == (other := _floor(imported))[0]
        and FLOORS[floor[0]][0] != GROUND
        and floor[1] != other[1]
        and _allowed(importer, imported) is None
    )
    assert sideways == []


def test_every_allowed_edge_is_still_used() -> None:
    edges = _edges()
    stale = [
        edge
        for edge in ALLOWED
        if not any(_within(i, (edge[0],)) and _within(t, (edge[1],)) for i, t in edges)
    ]
    assert stale == []


def test_every_allowed_edge_joins_two_packages_of_one_floor() -> None:
    """An edge that points down needs no leave; one that points up gets none."""
    odd = [
        edge
        for edge in ALLOWED
        if _floor(edge[0])[0] != _floor(edge[1])[0] or _floor(edge[0])[1] == _floor(edge[1])[1]
    ]
    assert odd == []


def test_the_architecture_page_draws_the_floors_and_the_allowed_edges() -> None:
    """Each floor one line of its packages, each allowed edge named, and no other."""
    page = (PROJECT_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    lines = page.splitlines()
    drawn = [f"{name:<15}" + "  ".join(map(_short, packages)) for name, packages in FLOORS]
    assert [line for line in drawn if line not in lines] == []
    named = set(re.findall(r"`([a-z_.]+) -> ([a-z_.]+)`", page))
    assert named == {(_short(source), _short(target)) for source, target in ALLOWED}


def test_settings_are_read_at_the_entry_points_only() -> None:
    """create_app, the CLI (and migrations/env.py) read the settings; below them they are
    handed down."""
    readers = sorted(
        module
        for module, path in MODULES.items()
        if module not in ("app.config", "app.main", "app.cli") and "get_settings" in _names(path)
    )
    assert readers == []


def test_no_module_writes_the_environment() -> None:
    """Settings are handed down, never passed through the environment; the one exception
    is the Python hook, whose job is to reach the child processes of the program it hooks,
    through the variable Python itself reads at start (PYTHONPATH)."""
    writers = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ":
                    writers.append((module, ast.unparse(target.slice)))
    assert writers == [("app.client.hook", "'PYTHONPATH'")]


def test_the_upstream_projects_import_nothing_of_the_app() -> None:
    """app/upstreams is plain knowledge below everything, the settings included: stricter
    than the ground floor, whose other modules may use each other."""
    found = sorted(
        f"{importer} imports {imported}"
        for importer, imported in _edges()
        if _within(importer, ("app.upstreams",)) and not _within(imported, ("app.upstreams",))
    )
    assert found == []
