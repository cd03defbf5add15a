"""What `Upstream.load_module` puts in place of upstream code it must not run: parent packages
whose `__init__` runs only when a name is asked of them, and stubs for names the tested
classes never use."""

import ast
import functools
import importlib.machinery
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from app.upstreams.release_errors import StubUsedError


class Stub:
    """Stands in for an upstream name that the tested classes never use.

    Calling it or reading one of its attributes raises, so a stub can never make a check
    pass silently.
    """

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __call__(self, *_args: object, **_kwargs: object) -> None:
        raise StubUsedError(f"{self._qualname} is stubbed by errkb and must not be called")

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise StubUsedError(f"{self._qualname}.{attr} is stubbed by errkb and must not be used")


def _empty_package(qualname: str, folder: Path) -> ModuleType:
    """A package module whose __init__ runs only when a name is asked of it, searched in
    `folder` for submodules.

    Importing a submodule never runs the package's __init__ (vLLM's imports the whole serving
    stack); a target that imports a name from its package (`from vllm.config import
    ModelConfig`) gets it from the real __init__, run then, once, in the package's namespace.
    """
    spec = importlib.machinery.ModuleSpec(qualname, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    module = importlib.util.module_from_spec(spec)
    init = folder / "__init__.py"

    def run_init_for(attr: str) -> object:
        namespace = module.__dict__
        literals = _literal_dunders(init)
        if attr in literals:  # `__version__ = "5.24.0"`: read, not run (its imports cycle)
            namespace[attr] = literals[attr]
            return literals[attr]
        if (attr.startswith("__") and attr not in _bound_names(init)) or namespace.get(
            "__getattr__"
        ) is not run_init_for:
            raise AttributeError(f"module {qualname!r} has no attribute {attr!r}")
        del namespace["__getattr__"]  # once: the __init__ may define its own
        if init.is_file():
            namespace["__file__"] = str(init)
            exec(compile(init.read_text(encoding="utf-8"), str(init), "exec"), namespace)
        if attr in namespace:
            return namespace[attr]
        if callable(namespace.get("__getattr__")):
            return namespace["__getattr__"](attr)
        raise AttributeError(f"module {qualname!r} has no attribute {attr!r}")

    module.__dict__["__getattr__"] = run_init_for
    sys.modules[qualname] = module
    parent, _, child = qualname.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


@functools.lru_cache(maxsize=64)
def _init_statements(init: Path) -> tuple[ast.stmt, ...]:
    """The top-level statements of a package's `__init__`, parsed once for the questions an
    emptied package asks of it on every attribute; none when it cannot be read."""
    try:
        return tuple(ast.parse(init.read_text(encoding="utf-8")).body)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()


@functools.lru_cache(maxsize=64)
def _bound_names(init: Path) -> frozenset[str]:
    """The names a package's `__init__` binds at its top level (`__version__`, imported
    ones): a dunder asked of an emptied package runs the `__init__` only when it is one of
    these (transformers' modules import `__version__` from theirs), never for what the
    import system and `inspect` probe (`__file__`, `__wrapped__`)."""
    names: set[str] = set()
    for statement in _init_statements(init):
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in statement.names)
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _literal_dunders(init: Path) -> Mapping[str, Any]:
    """The dunders a package's `__init__` sets to a literal at its top level (transformers'
    `__version__`): their value, read from the source. Running that `__init__` for one of
    them, from a submodule its own imports reach, would meet that submodule half loaded."""
    found: dict[str, Any] = {}
    for statement in _init_statements(init):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("__"):
                try:
                    found[target.id] = ast.literal_eval(statement.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
    return found


def _stub_module(qualname: str) -> ModuleType:
    spec = importlib.machinery.ModuleSpec(qualname, None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualname] = module
    return module
