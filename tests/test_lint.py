"""`make lint` installs the dev extra only: everything mypy reads of `app/` must come with it,
or be one mypy is told may be missing (torch, which only the reproducers extra installs).

mypy follows every import of `app/` into its packages; a package that only the test or
reproducers extra installs makes `make lint` fail on a fresh clone while `make test`, which
installs those extras first, passes. The closure is computed from the installed packages'
own metadata, as pip would resolve it (app/reproducers/environments.py, which the GPU
machine's bundle computes its wheels with).
"""

import ast
import sys
import tomllib
from importlib import metadata

from app.config import PROJECT_ROOT
from app.reproducers.environments import normal_name, requirement_closure

# A virtual environment has pip; nothing installs it.
IN_EVERY_VENV = {"pip"}


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


def _allowed_missing(pyproject: dict) -> set[str]:
    """The top-level modules mypy is told may be missing (`ignore_missing_imports`): an
    optional extra's, such as torch, which the reproducers extra installs."""
    allowed: set[str] = set()
    for override in pyproject["tool"]["mypy"].get("overrides", []):
        if override.get("ignore_missing_imports"):
            allowed |= {module.partition(".")[0] for module in override["module"]}
    return allowed


def test_the_dev_extra_installs_every_package_mypy_reads_in_app() -> None:
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    installed = requirement_closure(
        [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    )
    providers = metadata.packages_distributions()
    optional = _allowed_missing(pyproject)
    missing = {
        module: where
        for module, where in _top_level_imports().items()
        if module not in IN_EVERY_VENV | optional
        and not installed & {normal_name(name) for name in providers.get(module, [module])}
    }
    assert not missing, f"imported by app/ but not installed by `make lint`: {missing}"
