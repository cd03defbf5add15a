"""app.state holds one typed Services, built by create_app and read in one place only: the
routes and app.serving reach it through app.serving.deps (ServicesDep, services_of)."""

import ast
from pathlib import Path

from app.config import PROJECT_ROOT
from app.main import create_app
from app.serving.services import Services

APP = PROJECT_ROOT / "app"


def _reads_app_state(path: Path) -> bool:
    """Whether the module reads or writes an attribute of some `app.state`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "state"
            and ast.unparse(node.value.value).split(".")[-1] == "app"
        ):
            return True
    return False


def test_only_create_app_and_the_dependency_touch_app_state() -> None:
    touching = sorted(
        path.relative_to(APP).as_posix() for path in APP.rglob("*.py") if _reads_app_state(path)
    )
    assert touching == ["main.py", "serving/deps.py"]


def test_create_app_sets_one_services_object(settings) -> None:
    app = create_app(settings)
    assert isinstance(app.state.services, Services)
    assert app.state.services.settings is settings
    assert vars(app.state)["_state"].keys() == {"services"}
