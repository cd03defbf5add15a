"""The documentation names what the code has: every module of app/ in the architecture page
(settings: tests/test_config.py), and every file the README links to exists."""

import re

from app.config import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"


def test_every_module_of_app_is_named_in_the_architecture_page() -> None:
    architecture = (DOCS / "architecture.md").read_text()
    modules = sorted(
        path.relative_to(PROJECT_ROOT).as_posix()
        for path in (PROJECT_ROOT / "app").rglob("*.py")
        if path.name != "__init__.py"
    )
    assert modules, "no modules found"
    assert [module for module in modules if f"`{module}`" not in architecture] == []


def test_the_readme_links_only_to_files_that_exist() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)", readme)
    assert targets
    assert [target for target in targets if not (PROJECT_ROOT / target).exists()] == []


def test_the_readme_opens_with_the_two_commands() -> None:
    head = (PROJECT_ROOT / "README.md").read_text().split("\n")[:15]
    assert any(line.startswith("make serve") for line in head)
    assert any(line.startswith("make test") for line in head)
