"""`make lint` installs the dev extra only: everything mypy reads of `app/` must come with it.

mypy follows every import of `app/` into its packages; a package that only the test or
reproducers extra installs makes `make lint` fail on a fresh clone while `make test`, which
installs those extras first, passes. The closure is computed from the installed packages'
own metadata, as pip would resolve it.
"""

import ast
import re
import sys
import tomllib
from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement

from app.config import PROJECT_ROOT

# A virtual environment has pip; nothing installs it.
IN_EVERY_VENV = {"pip"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_imports() -> dict[str, str]:
    """Each third-party top-level module `app/` imports, with one file importing it."""
    found: dict[str, str] = {}
    for path in sorted((PROJECT_ROOT / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "app" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(PROJECT_ROOT)))
    return found


def _closure(requirements: list[str], extras: frozenset[str] = frozenset()) -> set[str]:
    """The distributions these requirements install, read from the installed metadata."""
    environment = {str(key): str(value) for key, value in default_environment().items()}
    wanted, seen = [(Requirement(r), extras) for r in requirements], set()
    while wanted:
        requirement, asked = wanted.pop()
        if requirement.marker and not any(
            requirement.marker.evaluate({**environment, "extra": extra})
            for extra in (asked or {""})
        ):
            continue
        name = _normal(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        wanted.extend(
            (Requirement(r), frozenset(requirement.extras))
            for r in metadata.requires(requirement.name) or []
        )
    return {name for name, _ in seen}


def test_the_dev_extra_installs_every_package_mypy_reads_in_app() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    installed = _closure([*project["dependencies"], *project["optional-dependencies"]["dev"]])
    providers = metadata.packages_distributions()
    missing = {
        module: where
        for module, where in _top_level_imports().items()
        if module not in IN_EVERY_VENV
        and not installed & {_normal(name) for name in providers.get(module, [module])}
    }
    assert not missing, f"imported by app/ but not installed by `make lint`: {missing}"
