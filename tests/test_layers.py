"""Imports point one way: api | web | cli -> services -> store -> config, with no cycle.

Read from the source with ast, so a violation fails here before it becomes a cycle or a
slow import somewhere else.

What counts as an import for the cycle check: every import that runs, at a module's top or
inside a function. An import moved into a function still ties the two modules together (it
only hides the cycle until the function runs), so it counts. Imports under
`if TYPE_CHECKING:` never run and name types only: they are left out. Importing a submodule
runs its package's `__init__` first; that implied edge is left out too (a package's
`__init__` only re-exports), but `from app.harvest import X` is an import of the package.
"""

import ast
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT

APP = PROJECT_ROOT / "app"
# app.client runs in other people's programs (the hook, the pytest plugin): an entry point.
ENTRY_POINTS = ("app.api", "app.web", "app.cli", "app.main", "app.client")
SERVICES = (
    "app.records",
    "app.matching",
    "app.search",
    "app.harvest",
    "app.reproducers",
    "app.curation",
    "app.ops",
)
RECORD_MODEL = "app.records.model"


def _module(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(path): path for path in sorted(APP.rglob("*.py"))}


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _imports(path: Path) -> set[str]:
    """Every app module this file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "app" or name.startswith("app.")}


def _module_of(name: str) -> str | None:
    """The app module an imported name lives in: the name itself, or the nearest parent."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_imports(path: Path) -> set[str]:
    """The app modules this file imports when it runs: see the module docstring."""
    found = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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


def _importing(targets: tuple[str, ...], among: tuple[str, ...] = ("app",)) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, path in MODULES.items()
        if _within(module, among) and not _within(module, targets)
        for name in _imports(path)
        if _within(name, targets)
    )


def test_nothing_below_the_entry_points_imports_them() -> None:
    below = tuple(m for m in MODULES if not _within(m, ENTRY_POINTS))
    assert _importing(ENTRY_POINTS, below) == []


def test_the_cycle_finder_finds_a_cycle_through_other_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"], ["e"]]


def test_no_import_cycle_among_app_modules() -> None:
    graph = {module: _runtime_imports(path) - {module} for module, path in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cli_and_the_client_do_not_import_the_api() -> None:
    """They call the services and print the shapes of app/wire, as the API answers them."""
    assert _importing(("app.api",), ("app.cli", "app.client")) == []


def test_the_wire_imports_no_service_and_nothing_above() -> None:
    """The JSON shapes sit below the services, so that every layer may import them; like
    the store, they may name the typed record (shared vocabulary)."""
    found = _importing((*SERVICES, *ENTRY_POINTS, "app.serving"), ("app.wire",))
    assert [line for line in found if not line.split(" imports ")[1].startswith(RECORD_MODEL)] == []


def test_the_api_and_the_pages_do_not_import_each_other() -> None:
    """What both need lives below both, in app/serving."""
    assert _importing(("app.web",), ("app.api",)) == []
    assert _importing(("app.api",), ("app.web",)) == []


def test_no_service_imports_what_serves_requests() -> None:
    assert _importing(("app.serving",), (*SERVICES, "app.store", "app.upstreams")) == []


def test_the_store_imports_no_service() -> None:
    """The typed record (generated from the schema, with no logic) is the vocabulary every
    layer shares, the store's tables included: not a service."""
    found = _importing(SERVICES, ("app.store",))
    assert [line for line in found if not line.split(" imports ")[1].startswith(RECORD_MODEL)] == []


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        # matching must not pull in the reproducer runner (and pip) through API shapes
        ("app.matching", ("app.reproducers", "app.search", "app.harvest")),
        # what a pattern may be lives below both (app/patterns.py): records import no matching
        ("app.records", ("app.matching", "app.search")),
    ],
)
def test_services_do_not_reach_sideways(package: str, forbidden: tuple[str, ...]) -> None:
    assert _importing(forbidden, (package,)) == []


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
    """app/upstreams is plain knowledge below everything, the settings included."""
    found = _importing(("app",), ("app.upstreams",))
    assert [
        line for line in found if not line.split(" imports ")[1].startswith("app.upstreams")
    ] == []
